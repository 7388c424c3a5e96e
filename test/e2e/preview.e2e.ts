/**
 * `dccm preview` (tier 3) against the offline environment, the real engine and the daemon's own
 * stacks: three LoadBalancer Services applied by `dccm daemon` (addressReservation transient, the
 * default: no address at rest), then snapshots in the format of
 * `kubectl get nodes,services -A -o json`. Equal to the cluster: exit 0, no engine run. One Service
 * gains a port and one is deleted: exactly one update and one delete, exit 2, text and JSON asserted
 * in full, the backend byte-identical afterwards. 30 new Services: each stack once, with its own creates,
 * at any parallelism. And with the daemon running drift passes on the
 * same stacks meanwhile, neither fails.
 */
import * as assert from "node:assert/strict";
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { PREVIEW_HELP } from "../../bin/previewCommand";
import { eventReasons, lbService } from "../support/e2e/cluster";
import {
  backendContents,
  backendLocks,
  DaemonProcesses,
  processCluster,
  type RunningDaemon,
} from "../support/e2e/daemon-process";
import type { TestEnv } from "../support/e2e/env";
import { repoRoot } from "../support/tooling/testenv-paths";
import { eventually } from "../support/wait";

interface Outcome {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The cluster as `kubectl get nodes,services -A -o json` prints it (a v1 List, each item with its kind). */
async function kubectlDump(
  core: k8s.CoreV1Api,
): Promise<{ apiVersion: string; kind: string; items: Record<string, unknown>[] }> {
  const [nodes, services] = await Promise.all([core.listNode(), core.listServiceForAllNamespaces()]);
  const plain = (value: unknown): Record<string, unknown> =>
    JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
  return {
    apiVersion: "v1",
    kind: "List",
    items: [
      ...nodes.items.map((node) => ({ apiVersion: "v1", kind: "Node", ...plain(node) })),
      ...services.items.map((service) => ({ apiVersion: "v1", kind: "Service", ...plain(service) })),
    ],
  };
}

const CHANGED_TEXT = [
  "Service default/gone: delete (stack service.default.gone)",
  "  delete RegionBackendService default/gone:backend-tcp",
  "  delete Firewall default/gone:firewall",
  "  delete ForwardingRule default/gone:forwarding-rule-tcp",
  "Service default/grow: update (stack service.default.grow)",
  "  update Firewall default/grow:firewall",
  '      allows: [{"ports":["80"],"protocol":"tcp"}] → [{"ports":["80","443"],"protocol":"tcp"}]',
  "  replace ForwardingRule default/grow:forwarding-rule-tcp because ports",
  '      ports: ["80"] → ["80","443"]',
  "Unchanged stacks: cluster, service.default.keep",
  "Plan: 0 to create, 1 to update, 1 to replace, 3 to delete, 2 unchanged stacks",
  "",
].join("\n");

function change(
  op: string,
  service: string,
  type: string,
  part: string,
  over: Record<string, unknown> = {},
): Record<string, unknown> {
  const name = `default/${service}:${part}`;
  return {
    op,
    type,
    name,
    urn: `urn:pulumi:service.default.${service}::dccm-e2e0cafe::dccm:gcp:ServiceLoadBalancer$${type}::${name}`,
    fields: [],
    replaceBecause: [],
    ...over,
  };
}

const FIREWALL = "gcp:compute/firewall:Firewall";
const FORWARDING_RULE = "gcp:compute/forwardingRule:ForwardingRule";

const CHANGED_JSON = {
  changes: true,
  summary: { create: 0, update: 1, replace: 1, delete: 3, unchangedStacks: 2 },
  stacks: [
    { stack: "cluster", action: "unchanged", changes: [] },
    {
      stack: "service.default.gone",
      service: "default/gone",
      action: "delete",
      changes: [
        change("delete", "gone", "gcp:compute/regionBackendService:RegionBackendService", "backend-tcp"),
        change("delete", "gone", FIREWALL, "firewall"),
        change("delete", "gone", FORWARDING_RULE, "forwarding-rule-tcp"),
      ],
    },
    {
      stack: "service.default.grow",
      service: "default/grow",
      action: "update",
      changes: [
        change("update", "grow", FIREWALL, "firewall", {
          fields: [
            {
              path: "allows",
              old: [{ ports: ["80"], protocol: "tcp" }],
              new: [{ ports: ["80", "443"], protocol: "tcp" }],
            },
          ],
        }),
        change("replace", "grow", FORWARDING_RULE, "forwarding-rule-tcp", {
          fields: [{ path: "ports", old: ["80"], new: ["80", "443"] }],
          replaceBecause: ["ports"],
        }),
      ],
    },
    { stack: "service.default.keep", service: "default/keep", action: "unchanged", changes: [] },
  ],
  rejected: [],
};

describe("dccm preview (tier 3): the daemon's stacks, read-only", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemons: DaemonProcesses;
  let daemon: RunningDaemon | undefined;
  let configPath: string;
  const uids: Record<string, string> = {};
  let equalSnapshot: string;
  let changedSnapshot: string;

  function preview(args: string[]): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [
          path.join(repoRoot(), "dist", "bin", "dccm.js"),
          "preview",
          "--kubeconfig",
          env.kube.kubeconfigPath,
          "--config",
          configPath,
          ...args,
        ],
        {
          env: { ...process.env, ...env.pulumiEnv },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
      child.once("error", reject);
      child.once("close", (code) => resolve({ code, stdout, stderr }));
    });
  }

  before(async () => {
    // gs://, as production: reading the bucket straight (stacks/gcs.ts) must write and lock nothing either.
    ({ env, core, daemons } = await processCluster({ backend: "gs" }));
    configPath = path.join(env.dir, "config.json");
    daemon = daemons.start();
    await daemons.waitReady(daemon);
    await daemons.waitClusterApplied(daemon);
    for (const name of ["keep", "grow", "gone"]) {
      const created = await core.createNamespacedService({ namespace: "default", body: lbService(name) });
      uids[name] = created.metadata?.uid ?? "";
    }
    // EnsuredLoadBalancer comes after the stack's up and the status write: the stack is applied.
    for (const name of Object.keys(uids)) {
      await eventually(
        `${name} ensured`,
        async () =>
          (await eventReasons(core, name)).some((event) => event.reason === "EnsuredLoadBalancer") ? true : undefined,
        240_000,
      );
    }
    const live = await kubectlDump(core);
    equalSnapshot = path.join(env.dir, "equal.json");
    fs.writeFileSync(equalSnapshot, JSON.stringify(live));
    // The PR: grow gains port 443, gone is deleted.
    const items = live.items
      .filter((item) => !(item.kind === "Service" && (item.metadata as k8s.V1ObjectMeta).name === "gone"))
      .map((item) => {
        if (item.kind !== "Service" || (item.metadata as k8s.V1ObjectMeta).name !== "grow") return item;
        const spec = item.spec as k8s.V1ServiceSpec;
        return {
          ...item,
          spec: {
            ...spec,
            ports: [...(spec.ports ?? []), { name: "https", protocol: "TCP", port: 443, targetPort: 8443 }],
          },
        };
      });
    changedSnapshot = path.join(env.dir, "changed.json");
    fs.writeFileSync(changedSnapshot, JSON.stringify({ ...live, items }));
  });

  after(async () => {
    if (daemon !== undefined) await daemons?.stop(daemon);
    daemons?.killAll();
    await env?.stop();
  });

  it("--help prints its own usage (exit 0); an unknown flag exits 2, one line, then where the usage is", async () => {
    assert.deepEqual(await preview(["--help"]), { code: 0, stdout: `${PREVIEW_HELP}\n`, stderr: "" });
    assert.deepEqual(await preview(["--snapshot", equalSnapshot, "--plan"]), {
      code: 2,
      stdout: "",
      stderr: "dccm: unknown flag --plan\nsee dccm preview --help\n",
    });
  });

  it("the live cluster and a snapshot equal to it: every stack unchanged, no engine run, exit 0, the backend byte-identical", async () => {
    const before = await backendContents(env);
    const unchanged = {
      code: 0,
      stdout:
        "Unchanged stacks: cluster, service.default.gone, service.default.grow, service.default.keep\nPlan: 0 to create, 0 to update, 0 to replace, 0 to delete, 4 unchanged stacks\n",
      stderr: "",
    };
    assert.deepEqual(await preview([]), unchanged);
    assert.deepEqual(await preview(["--snapshot", equalSnapshot]), unchanged);
    assert.deepEqual(await backendContents(env), before);
  });

  it("one Service gains a port, one is deleted: exactly one update and one delete, exit 2, in text and JSON; the backend byte-identical", async () => {
    const before = await backendContents(env);
    assert.deepEqual(await preview(["--snapshot", changedSnapshot]), { code: 2, stdout: CHANGED_TEXT, stderr: "" });
    const json = await preview(["--snapshot", changedSnapshot, "--json"]);
    assert.deepEqual({ code: json.code, stderr: json.stderr }, { code: 2, stderr: "" });
    assert.deepEqual(JSON.parse(json.stdout), CHANGED_JSON);
    assert.deepEqual(await backendContents(env), before);
    assert.deepEqual(await backendLocks(env), []);
  });

  it("a new Service is previewed in an empty backend of its own: every resource a create; an invalid one is listed with the model's message", async () => {
    const live = JSON.parse(fs.readFileSync(equalSnapshot, "utf8")) as { items: Record<string, unknown>[] };
    const added = (name: string, uid: string, protocol: string): Record<string, unknown> => ({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name, namespace: "default", uid },
      spec: {
        type: "LoadBalancer",
        selector: { app: name },
        ports: [{ name: "p", protocol, port: 80, targetPort: 8080 }],
      },
    });
    const snapshot = path.join(env.dir, "added.json");
    fs.writeFileSync(
      snapshot,
      JSON.stringify({
        ...live,
        items: [
          ...live.items,
          added("fresh", "f7e5a000-0000-4000-8000-000000000001", "TCP"),
          added("sctp", "f7e5a000-0000-4000-8000-000000000002", "SCTP"),
        ],
      }),
    );
    const before = await backendContents(env);
    assert.deepEqual(await preview(["--snapshot", snapshot]), {
      code: 2,
      stdout: [
        "Service default/fresh: create (stack service.default.fresh)",
        "  create RegionBackendService default/fresh:backend-tcp",
        "  create Firewall default/fresh:firewall",
        "  create ForwardingRule default/fresh:forwarding-rule-tcp",
        "Service default/sctp: rejected, no load balancer is created",
        "  Service default/sctp: spec.ports[0].protocol: SCTP is not supported by GCE load balancers (TCP or UDP)",
        "Unchanged stacks: cluster, service.default.gone, service.default.grow, service.default.keep",
        "Plan: 3 to create, 0 to update, 0 to replace, 0 to delete, 4 unchanged stacks",
        "",
      ].join("\n"),
      stderr: "",
    });
    assert.deepEqual(await backendContents(env), before);
  });

  it("30 new Services, previewed 25 to an engine run: every stack exactly once, each with its own 3 creates under its own URN, whatever the parallelism", async () => {
    const live = JSON.parse(fs.readFileSync(equalSnapshot, "utf8")) as { items: Record<string, unknown>[] };
    const names = Array.from({ length: 30 }, (_, i) => `n${String(i).padStart(2, "0")}`);
    const added = names.map((name, i) => ({
      apiVersion: "v1",
      kind: "Service",
      metadata: { name, namespace: "default", uid: `c4a0c0${String(i).padStart(2, "0")}-0000-4000-8000-000000000000` },
      spec: {
        type: "LoadBalancer",
        selector: { app: name },
        ports: [{ name: "p", protocol: "TCP", port: 80, targetPort: 8080 }],
      },
    }));
    const snapshot = path.join(env.dir, "many.json");
    fs.writeFileSync(snapshot, JSON.stringify({ ...live, items: [...live.items, ...added] }));
    const before = await backendContents(env);
    const one = await preview(["--snapshot", snapshot, "--json", "--parallelism", "1"]);
    const two = await preview(["--snapshot", snapshot, "--json", "--parallelism", "2"]);
    assert.deepEqual({ code: one.code, stderr: one.stderr }, { code: 2, stderr: "" });
    assert.deepEqual(two, one);
    const plan = JSON.parse(one.stdout) as {
      summary: unknown;
      stacks: { stack: string; action: string; changes: { op: string; type: string; name: string; urn: string }[] }[];
    };
    assert.deepEqual(plan.summary, { create: 90, update: 0, replace: 0, delete: 0, unchangedStacks: 4 });
    const newStacks = names.map((name) => `service.default.${name}`);
    assert.deepEqual(
      plan.stacks.map((stack) => [stack.stack, stack.action]),
      [
        ["cluster", "unchanged"],
        ...[...newStacks, "service.default.gone", "service.default.grow", "service.default.keep"]
          .sort()
          .map((stack) => [stack, newStacks.includes(stack) ? "create" : "unchanged"]),
      ],
    );
    for (const stack of plan.stacks.filter((entry) => entry.action === "create")) {
      const key = `default/${stack.stack.slice("service.default.".length)}`;
      assert.deepEqual(
        stack.changes.map((change) => [change.op, change.name, change.urn]),
        [
          [
            "create",
            `${key}:backend-tcp`,
            `urn:pulumi:${stack.stack}::dccm-e2e0cafe::dccm:gcp:ServiceLoadBalancer$gcp:compute/regionBackendService:RegionBackendService::${key}:backend-tcp`,
          ],
          [
            "create",
            `${key}:firewall`,
            `urn:pulumi:${stack.stack}::dccm-e2e0cafe::dccm:gcp:ServiceLoadBalancer$gcp:compute/firewall:Firewall::${key}:firewall`,
          ],
          [
            "create",
            `${key}:forwarding-rule-tcp`,
            `urn:pulumi:${stack.stack}::dccm-e2e0cafe::dccm:gcp:ServiceLoadBalancer$gcp:compute/forwardingRule:ForwardingRule::${key}:forwarding-rule-tcp`,
          ],
        ],
      );
    }
    assert.deepEqual(await backendContents(env), before);
  });

  it("with the daemon running drift passes on the same stacks meanwhile, neither fails", async () => {
    if (daemon !== undefined) assert.equal(await daemons.stop(daemon), 0);
    daemon = undefined;
    // The full refresh of every stack every 2 s: the cluster stack's is an up --refresh, which holds
    // its lock most of the time; a Service stack's is planned first and, changing nothing, takes no
    // lock (controllers/service/repairs.ts), unless its Service changed (gone is deleted in the cluster).
    const drifting = new DaemonProcesses(env, configPath, ["--full-refresh-interval", "2s"]);
    const running = drifting.start({ logLevel: "debug" });
    try {
      await drifting.waitReady(running);
      const ours = (lock: string): boolean =>
        lock.includes("service.default.grow") ||
        lock.includes("service.default.gone") ||
        lock.split(path.sep).includes("cluster");
      await eventually(
        "a run holding the lock of a stack the preview reads",
        async () => ((await backendLocks(env)).some(ours) ? true : undefined),
        120_000,
        20,
      );
      let sawLock = false;
      const watching = preview(["--snapshot", changedSnapshot]);
      let done = false;
      void watching.finally(() => (done = true));
      while (!done) {
        sawLock ||= (await backendLocks(env)).some(ours);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      assert.deepEqual(await watching, { code: 2, stdout: CHANGED_TEXT, stderr: "" });
      assert.equal(sawLock, true, "the daemon held the lock of a stack the preview reads while the preview ran");
      // Up to now: stopping the daemon cancels the drift pass it is running, which it logs as an error.
      const now = Date.now();
      const results = [
        ...(await drifting.metrics(running)).matchAll(/^dccm_reconciles_total\{[^}]*result="([^"]+)"\} \d+/gm),
      ].map((match) => match[1]);
      assert.equal(await drifting.stop(running), 0);
      const log = fs
        .readFileSync(running.logPath, "utf8")
        .split("\n")
        .filter((line) => line.startsWith("{"))
        .map((line) => JSON.parse(line) as { level: number; time: number; msg: string; reason?: string })
        .filter((entry) => entry.time < now);
      assert.deepEqual(
        log.filter((entry) => entry.level >= 50 || (entry.level >= 40 && /lock/i.test(JSON.stringify(entry)))),
        [],
      );
      // No reconcile failed; the only deferrals are the Service stacks' wait for the cluster stack after the start, none for a locked stack.
      assert.deepEqual(
        results.filter((result) => result !== "ok" && result !== "retryAfter"),
        [],
      );
      assert.deepEqual(
        log.filter((entry) => entry.msg === "reconcile deferred" && entry.reason !== "waiting for the cluster stack"),
        [],
      );
    } finally {
      drifting.killAll();
    }
  });
});
