/**
 * Firewalls on the real engine and the GCE emulator: each Service firewall opens
 * only towards its load balancer's IP (destinationRanges), a stack applied before that is updated in
 * place (never replaced), and enableL4DenyFirewall adds k8s-fw-<lb>-deny at 1000 once the allow
 * rules sit at 999; turned off, the deny rule is deleted before any allow rule goes back to 1000.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { LocalWorkspace } from "@pulumi/pulumi/automation";
import * as k8s from "@kubernetes/client-node";
import {
  CLUSTER_STACK,
  desiredState,
  loadBalancerName,
  NOTHING_OBSERVED,
  parseConfig,
  serviceStackName,
  type ClusterSnapshot,
  type DesiredState,
  type Scope,
} from "../../model";
import { Daemon } from "../../daemon/daemon";
import { recordedReferences } from "../../controllers/service/plan";
import { withReferences } from "../../controllers/references";
import { StackRunner, type UpOutcome } from "../../stacks/runner";
import { PROJECT_NAME } from "../../stacks/project";

import { createNode, E2E_CONFIG, E2E_NODE, lbService as e2eLbService } from "../support/e2e/cluster";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { eventually } from "../support/wait";
import { stackProgramOutputs } from "../../components/outputs";

const SERVICE_UID = "0f1ee2e0-1111-4222-8333-444455556666";
const LB = "a0f1ee2e011114222833344445555666";
const FIREWALL = "gcp:compute/firewall:Firewall";
/** The inputs dccm declared of a firewall before destinationRanges and priority (components/primitives.ts at 4f9f7c6). */
const FIREWALL_INPUTS_BEFORE = [
  "allows",
  "description",
  "direction",
  "name",
  "network",
  "project",
  "sourceRanges",
  "targetTags",
];

const snapshot: ClusterSnapshot = {
  nodes: [E2E_NODE],
  services: [
    {
      namespace: "default",
      name: "web",
      uid: SERVICE_UID,
      type: "LoadBalancer",
      annotations: {},
      ports: [{ protocol: "TCP", port: 80 }],
      loadBalancerSourceRanges: [],
      externalTrafficPolicy: "Local",
      healthCheckNodePort: 31000,
      deleting: false,
    },
  ],
};

const SERVICE_SCOPE: Scope = { kind: "service", namespace: "default", name: "web" };
const SERVICE_STACK = serviceStackName("default", "web");

function ops(outcome: UpOutcome): string[] {
  return outcome.changed
    .filter((change) => change.type.startsWith("gcp:compute/"))
    .map((change) => `${change.name} ${change.op}`)
    .sort();
}

describe("firewalls towards the load balancer's IP, and the deny rule, on the real engine", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let runner: StackRunner;
  const workDir = (): string => path.join(env.dir, "workspaces");

  before(async () => {
    env = await startTestEnv({ withKube: false });
    env.gce.putInstance("node-1", { zone: "us-central1-a" });
    runner = new StackRunner({
      backendUrl: env.backendUrl,
      env: env.pulumiEnv,
      workDir: workDir(),
      pulumiCommand: env.pulumiCommand,
    });
  });

  after(async () => {
    await env?.stop();
  });

  function firewall(name: string): Record<string, unknown> | undefined {
    return env.gce.listResources().find((resource) => resource.kind === "firewalls" && resource.name === name)
      ?.properties;
  }

  /** The forwarding rule's IP: ephemeral, no address reserved at rest (addressReservation transient, the default). */
  function ipOfLoadBalancer(): string {
    const ip = env.gce.listResources().find((resource) => resource.kind === "forwardingRules" && resource.name === LB)
      ?.properties.ipAddress;
    assert.equal(typeof ip, "string");
    return String(ip);
  }

  /**
   * Applies a stack as the dccm before this change did: the same program, every firewall declared
   * without destinationRanges and priority (the inputs of components/primitives.ts then).
   */
  async function upAsBefore(stackName: string, scope: Scope, desired: DesiredState): Promise<void> {
    fs.mkdirSync(path.join(workDir(), stackName), { recursive: true, mode: 0o700 });
    const stack = await LocalWorkspace.createOrSelectStack(
      {
        stackName,
        projectName: PROJECT_NAME,
        program: async () => {
          pulumi.runtime.registerStackTransformation((args) => {
            if (args.type !== FIREWALL) return undefined;
            const {
              destinationRanges: _destination,
              priority: _priority,
              ...props
            } = args.props as Record<string, unknown>;
            // The SDK's constructors list every output as an undefined input too.
            assert.deepEqual(
              Object.keys(props)
                .filter((key) => props[key] !== undefined)
                .sort(),
              FIREWALL_INPUTS_BEFORE,
            );
            return { props, opts: args.opts };
          });
          return Promise.resolve(stackProgramOutputs(desired, scope, undefined, undefined));
        },
      },
      {
        workDir: path.join(workDir(), stackName),
        projectSettings: { name: PROJECT_NAME, runtime: "nodejs", backend: { url: env.backendUrl } },
        envVars: { PULUMI_BACKEND_URL: env.backendUrl, PULUMI_SKIP_UPDATE_CHECK: "true", ...env.pulumiEnv },
        ...(env.pulumiCommand !== undefined ? { pulumiCommand: env.pulumiCommand } : {}),
      },
    );
    await stack.up();
  }

  it("an existing stack (firewalls without destinationRanges) is updated in place on upgrade: each firewall towards the IP, nothing replaced", async () => {
    const desired = desiredState(snapshot, parseConfig(E2E_CONFIG));
    await upAsBefore(CLUSTER_STACK, { kind: "cluster" }, desired);
    await upAsBefore(SERVICE_STACK, SERVICE_SCOPE, desired);
    assert.equal(firewall(`k8s-fw-${LB}`)?.destinationRanges, undefined, "before: open on every node IP");
    assert.equal(firewall(`k8s-${LB}-http-hc`)?.destinationRanges, undefined);

    const cluster = await runner.up(CLUSTER_STACK, { kind: "cluster" }, desired, { refresh: false });
    const service = await runner.up(SERVICE_STACK, SERVICE_SCOPE, desired, { refresh: false });
    assert.deepEqual(ops(cluster), []);
    assert.deepEqual(ops(service), ["default/web:firewall update", "default/web:hc-firewall update"]);
    const ip = ipOfLoadBalancer();
    assert.deepEqual(firewall(`k8s-fw-${LB}`)?.destinationRanges, [ip]);
    assert.deepEqual(
      firewall(`k8s-${LB}-http-hc`)?.destinationRanges,
      [ip],
      "the stock CCM's external health-check firewall: towards the IP",
    );
    assert.equal(
      firewall("k8s-e2e0cafe-node-http-hc")?.destinationRanges,
      undefined,
      "the cluster's node health-check firewall serves every load balancer",
    );
    for (const name of [`k8s-fw-${LB}`, `k8s-${LB}-http-hc`, "k8s-e2e0cafe-node-http-hc"])
      assert.equal(firewall(name)?.priority, 1000, name);
    // Updated, never deleted and created again: the emulator's history of the two firewalls.
    const history = env.gce
      .history()
      .filter((entry) => entry.kind === "firewalls" && entry.name !== "k8s-e2e0cafe-node-http-hc")
      .map((entry) => `${entry.name} ${entry.op}`);
    assert.deepEqual([...history].sort(), [
      `k8s-${LB}-http-hc create`,
      `k8s-${LB}-http-hc update`,
      `k8s-fw-${LB} create`,
      `k8s-fw-${LB} update`,
    ]);
    const lastCreate = Math.max(...history.map((line, index) => (line.endsWith(" create") ? index : -1)));
    assert.ok(history.findIndex((line) => line.endsWith(" update")) > lastCreate, history.join(", "));
  });

  it("enableL4DenyFirewall on: k8s-fw-<lb>-deny at 1000 towards the IP, created after the allow rules moved to 999", async () => {
    const desired = desiredState(snapshot, parseConfig({ ...E2E_CONFIG, enableL4DenyFirewall: true }));
    const before = env.gce.history().length;
    const cluster = await runner.up(CLUSTER_STACK, { kind: "cluster" }, desired, { refresh: false });
    const service = await runner.up(SERVICE_STACK, SERVICE_SCOPE, desired, { refresh: false });
    assert.deepEqual(ops(cluster), ["cluster:node-hc-fw update"]);
    // What a Service stack waits for before it creates a deny rule (controllers/cluster/controller.ts clusterReadyFor).
    assert.equal(cluster.outputs.nodeHealthCheckFirewallPriority, 999);
    assert.deepEqual(ops(service), [
      "default/web:deny-firewall create",
      "default/web:firewall update",
      "default/web:hc-firewall update",
    ]);
    const ip = ipOfLoadBalancer();
    const deny = firewall(`k8s-fw-${LB}-deny`);
    assert.deepEqual(
      [deny?.priority, deny?.denies, deny?.sourceRanges, deny?.destinationRanges, deny?.targetTags],
      [1000, [{ protocol: "all" }], ["0.0.0.0/0"], [ip], ["k8s-node"]],
    );
    for (const name of [`k8s-fw-${LB}`, `k8s-${LB}-http-hc`, "k8s-e2e0cafe-node-http-hc"])
      assert.equal(firewall(name)?.priority, 999, name);
    const order = env.gce
      .history()
      .slice(before)
      .filter((entry) => entry.kind === "firewalls")
      .map((entry) => `${entry.name} ${entry.op}`);
    assert.equal(order.at(-1), `k8s-fw-${LB}-deny create`, order.join(", "));
    assert.deepEqual(order.slice(0, -1).sort(), [
      `k8s-${LB}-http-hc update`,
      `k8s-e2e0cafe-node-http-hc update`,
      `k8s-fw-${LB} update`,
    ]);
  });

  it("enableL4DenyFirewall turned off: k8s-fw-<lb>-deny deleted before any allow rule goes back to 1000, never an allow at 1000 beside it", async () => {
    const off = parseConfig(E2E_CONFIG);
    const before = env.gce.history().length;
    await offRuns(off);
    const order = env.gce
      .history()
      .slice(before)
      .filter((entry) => entry.kind === "firewalls")
      .map((entry) => `${entry.name} ${entry.op}`);
    const denyDeleted = order.indexOf(`k8s-fw-${LB}-deny delete`);
    assert.ok(denyDeleted >= 0, order.join(", "));
    // Each allow rule sat at 999 beside the deny rule: an update of one before the deny rule is gone is an allow at 1000 beside it.
    const allowUpdates = order
      .map((line, index) => (line.endsWith(" update") ? index : -1))
      .filter((index) => index >= 0);
    assert.ok(
      allowUpdates.every((index) => index > denyDeleted),
      order.join(", "),
    );
    assert.deepEqual([...order].sort(), [
      `k8s-${LB}-http-hc update`,
      "k8s-e2e0cafe-node-http-hc update",
      `k8s-fw-${LB} update`,
      `k8s-fw-${LB}-deny delete`,
    ]);
    assert.equal(firewall(`k8s-fw-${LB}-deny`), undefined);
    for (const name of [`k8s-fw-${LB}`, `k8s-${LB}-http-hc`, "k8s-e2e0cafe-node-http-hc"])
      assert.equal(firewall(name)?.priority, 1000, name);
  });

  /**
   * The runs a dccm started with the deny rules off makes, with its observations as the daemon
   * builds them (controllers/service/plan.ts recordedReferences, controllers/references.ts withReferences):
   * the Service stack read after the start, the cluster stack's firewall recorded at 999.
   */
  async function offRuns(off: ReturnType<typeof parseConfig>): Promise<void> {
    const read = recordedReferences((await runner.inspect(SERVICE_STACK, SERVICE_SCOPE)).outputs, "default", "web");
    const held = withReferences(NOTHING_OBSERVED, read, true);
    assert.deepEqual(held.denyRulesHeld, ["default/web"]);
    const first = desiredState(snapshot, off, held);
    assert.deepEqual(
      ops(await runner.up(CLUSTER_STACK, { kind: "cluster" }, first, { refresh: false })),
      [],
      "the node health-check firewall stays at 999",
    );
    const deleted = await runner.up(SERVICE_STACK, SERVICE_SCOPE, first, { refresh: false });
    assert.deepEqual(ops(deleted), ["default/web:deny-firewall delete"], "the deny rule alone");
    for (const name of [`k8s-fw-${LB}`, `k8s-${LB}-http-hc`, "k8s-e2e0cafe-node-http-hc"])
      assert.equal(firewall(name)?.priority, 999, name);
    const none = withReferences(held, recordedReferences(deleted.outputs, "default", "web"), true);
    assert.deepEqual([none.denyRulesHeld, none.denyRulesUnread], [undefined, undefined]);
    const second = desiredState(snapshot, off, none);
    assert.deepEqual(ops(await runner.up(SERVICE_STACK, SERVICE_SCOPE, second, { refresh: false })), [
      "default/web:firewall update",
      "default/web:hc-firewall update",
    ]);
    assert.deepEqual(ops(await runner.up(CLUSTER_STACK, { kind: "cluster" }, second, { refresh: false })), [
      "cluster:node-hc-fw update",
    ]);
  }
});

describe("the daemon restarted with enableL4DenyFirewall off: each deny rule deleted before any allow rule goes back to 1000", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon | undefined;
  const fwPriority = (name: string): unknown =>
    env.gce.listResources().find((resource) => resource.kind === "firewalls" && resource.name === name)?.properties
      .priority;
  const start = async (enableL4DenyFirewall: boolean): Promise<Daemon> => {
    const started = new Daemon(daemonOptions(env, parseConfig({ ...E2E_CONFIG, enableL4DenyFirewall }), {}));
    await started.start(() => assert.fail("leadership lost"));
    return started;
  };

  before(async () => {
    env = await startTestEnv();
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    env.gce.putInstance("node-1", { zone: "us-central1-a" });
    await createNode(core, "node-1", "us-central1-a");
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("on, then restarted off: the deny rules deleted first (the allow rules still at 999), then every allow rule at 1000, never one at 1000 beside a deny rule", async () => {
    daemon = await start(true);
    // ETP Local: a health-check firewall of its own beside the traffic firewall.
    const created = await core.createNamespacedService({
      namespace: "default",
      body: e2eLbService("web", { externalTrafficPolicy: "Local" }),
    });
    const lb = loadBalancerName(created.metadata?.uid ?? "");
    await eventually("web's deny rule", () => (fwPriority(`k8s-fw-${lb}-deny`) === 1000 ? true : undefined));
    await daemon.idle();
    const allows = [`k8s-fw-${lb}`, `k8s-${lb}-http-hc`, "k8s-e2e0cafe-node-http-hc"];
    for (const name of allows) assert.equal(fwPriority(name), 999, name);
    await daemon.stop();
    daemon = undefined;

    const before = env.gce.history().length;
    daemon = await start(false);
    await eventually("every allow rule back at 1000", () =>
      allows.every((name) => fwPriority(name) === 1000) ? true : undefined,
    );
    await daemon.idle();
    assert.equal(fwPriority(`k8s-fw-${lb}-deny`), undefined);
    const order = env.gce
      .history()
      .slice(before)
      .filter((entry) => entry.kind === "firewalls")
      .map((entry) => `${entry.name} ${entry.op}`);
    // Each allow rule sat at 999 beside the deny rule: an update of one before the deny rule is gone is an allow at 1000 beside it.
    const denyDeleted = order.indexOf(`k8s-fw-${lb}-deny delete`);
    assert.ok(denyDeleted >= 0, order.join(", "));
    assert.ok(
      order.every((line, index) => !line.endsWith(" update") || index > denyDeleted),
      order.join(", "),
    );
    assert.deepEqual([...order].sort(), [
      `k8s-${lb}-http-hc update`,
      "k8s-e2e0cafe-node-http-hc update",
      `k8s-fw-${lb} update`,
      `k8s-fw-${lb}-deny delete`,
    ]);
  });
});
