/**
 * `dccm drift` and `dccm refresh` end to end (real apiserver, engine and GCE emulator; the CLI as a
 * child process against a daemon running in this process): a firewall changed by hand is reported
 * by `dccm drift` exactly, which changes nothing (no mutating Compute call, the backend's files
 * byte for byte the same, no run of the daemon); `dccm refresh` then has the daemon repair it now
 * and prints the daemon's answer. Refused targets (no such Service, not a LoadBalancer) say so.
 * Last, with the daemon stopped: `dccm gc` with no Google credentials says so in one line.
 */
import * as assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";
import { ANNOTATION_REFRESH_HANDLED, ANNOTATION_REFRESH_REQUESTED, loadBalancerName, parseConfig } from "../../model";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { createNode, E2E_CONFIG, lbService } from "../support/e2e/cluster";
import { runDccm, runDccmAsync, type CliRun } from "../support/cli";
import { counter } from "../support/metrics";
import { eventually } from "../support/wait";

/** Every file under `dir` by relative path → sha256 of its bytes. */
function digest(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (at: string): void => {
    for (const entry of fs.readdirSync(at, { withFileTypes: true })) {
      const full = path.join(at, entry.name);
      if (entry.isDirectory()) walk(full);
      else out[path.relative(dir, full)] = crypto.createHash("sha256").update(fs.readFileSync(full)).digest("hex");
    }
  };
  walk(dir);
  return out;
}

describe("dccm drift and dccm refresh against a running daemon", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon;
  let configPath: string;
  let lb: string;
  const runs: string[] = [];

  const dccm = (...args: string[]): Promise<CliRun> =>
    runDccmAsync([...args, "--kubeconfig", env.kube.kubeconfigPath], env.pulumiEnv);
  const drift = (...args: string[]): Promise<CliRun> =>
    dccm(
      "drift",
      "--config",
      configPath,
      "--backend-url",
      env.backendUrl,
      "--compute-endpoint",
      env.gce.computeEndpoint,
      ...args,
    );
  const firewallSources = (): unknown =>
    env.gce.listResources().find((resource) => resource.kind === "firewalls" && resource.name === `k8s-fw-${lb}`)
      ?.properties.sourceRanges;

  before(async () => {
    env = await startTestEnv();
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    await createNode(core, "node-a1", "us-central1-a");
    const web = await core.createNamespacedService({ namespace: "default", body: lbService("web") });
    lb = loadBalancerName(web.metadata?.uid ?? "");
    await core.createNamespacedService({
      namespace: "default",
      body: { metadata: { name: "plain", namespace: "default" }, spec: { ports: [{ port: 80 }] } },
    });
    configPath = path.join(env.dir, "dccm.json");
    fs.writeFileSync(configPath, JSON.stringify(E2E_CONFIG));
    daemon = new Daemon(
      daemonOptions(env, parseConfig(E2E_CONFIG), {
        onRunStart: (stack, operation) => runs.push(`${operation} ${stack}`),
      }),
    );
    await daemon.start(() => assert.fail("leadership lost"));
    await eventually(
      "web's ingress",
      async () =>
        (await core.readNamespacedService({ namespace: "default", name: "web" })).status?.loadBalancer?.ingress?.[0]
          ?.ip,
      600_000,
      500,
    );
    await daemon.idle();
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("dccm drift with nothing drifted: exit 0, both stacks compared, none drifted", async () => {
    const run = await drift("--json");
    assert.equal(run.stderr, "");
    assert.equal(run.status, 0);
    const report = JSON.parse(run.stdout) as Record<string, unknown>;
    assert.deepEqual(
      { ...report, listed: typeof report.listed },
      { project: "dccm-test", compared: 2, listed: "number", unknown: [], drifted: [] },
    );
  });

  it("a firewall changed by hand: dccm drift reports exactly it, exit 2, and changes nothing (no mutating call, backend files the same, no run)", async () => {
    env.gce.patchOutOfBand("firewalls", `k8s-fw-${lb}`, { sourceRanges: ["10.0.0.0/8"] });
    const backendDir = env.backendUrl.slice("file://".length);
    const before = digest(backendDir);
    env.gce.resetCalls();
    env.gce.clearHistory();
    runs.length = 0;

    const json = await drift("--json");
    assert.deepEqual([json.status, json.stderr], [2, ""]);
    const report = JSON.parse(json.stdout) as { listed: number };
    const reason = `firewalls/global/k8s-fw-${lb}: sourceRanges: declared "0.0.0.0/0", found "10.0.0.0/8"`;
    assert.deepEqual(report, {
      project: "dccm-test",
      compared: 2,
      listed: report.listed,
      unknown: [],
      drifted: [{ stack: "service.default.web", service: "default/web", reasons: [reason] }],
    });

    const human = await drift();
    assert.deepEqual(human, {
      status: 2,
      stdout: [
        `drift in 1 of 2 stacks: 2 stacks compared with ${report.listed} GCE resources of project dccm-test; nothing was changed`,
        "service.default.web (Service default/web):",
        `  ${reason}`,
        "",
      ].join("\n"),
      stderr: "",
    });

    // Observe-only: gets and lists alone (an instance group's members are listed by a POST, which
    // changes nothing), nothing created, changed or deleted, the backend untouched.
    assert.deepEqual(
      Object.keys(env.gce.calls()).filter((call) => !call.startsWith("GET ")),
      ["POST /compute/v1/projects/{project}/zones/{zone}/instanceGroups/{name}/listInstances"],
    );
    assert.deepEqual(env.gce.history(), []);
    assert.deepEqual(digest(backendDir), before);
    assert.deepEqual(firewallSources(), ["10.0.0.0/8"]);
    assert.deepEqual(runs, []);
  });

  it("dccm refresh default/web: the daemon repairs the firewall now and answers; the value is recorded as handled", async () => {
    const run = await dccm("refresh", "default/web");
    const value = /^asked: dccm\.io\/refresh-requested=(\S+) on Service default\/web\n/.exec(run.stdout)?.[1] ?? "";
    assert.deepEqual(run, {
      status: 0,
      stdout: `asked: ${ANNOTATION_REFRESH_REQUESTED}=${value} on Service default/web\nNormal Refreshed: Refresh ${value}: drift repaired: put back Firewall default/web:firewall (update)\n`,
      stderr: "",
    });
    // Planned first, as any repair (controllers/service/repairs.ts).
    assert.deepEqual(runs, ["preview service.default.web", "refresh service.default.web"]);
    assert.deepEqual(firewallSources(), ["0.0.0.0/0"]);
    assert.equal(await counter(daemon.metrics.registry, "dccm_refresh_requests_total", { result: "repaired" }), 1);
    const annotations = await eventually("the handled annotation", async () => {
      const found =
        (await core.readNamespacedService({ namespace: "default", name: "web" })).metadata?.annotations ?? {};
      return found[ANNOTATION_REFRESH_HANDLED] === value ? found : undefined;
    });
    assert.equal(annotations[ANNOTATION_REFRESH_REQUESTED], value);
    await daemon.idle();
    assert.equal((await drift()).status, 0);
  });

  it("a second request with nothing drifted: answered no drift, no up", async () => {
    runs.length = 0;
    const run = await dccm("refresh", "default/web");
    const value = /refresh-requested=(\S+)/.exec(run.stdout)?.[1] ?? "";
    assert.deepEqual(
      [run.status, run.stdout.split("\n")[1], run.stderr],
      [0, `Normal Refreshed: Refresh ${value}: no drift: GCE matches the stack`, ""],
    );
    assert.deepEqual(runs, ["preview service.default.web"]);
  });

  it("refused: no such Service, a Service that is not a LoadBalancer (exit 1, one line, nothing written)", async () => {
    assert.deepEqual(await dccm("refresh", "default/nope"), {
      status: 1,
      stdout: "",
      stderr: "dccm refresh: Service default/nope not found\n",
    });
    assert.deepEqual(await dccm("refresh", "default/plain"), {
      status: 1,
      stdout: "",
      stderr:
        "dccm refresh: Service default/plain is of type ClusterIP, not LoadBalancer: dccm has no load balancer to refresh\n",
    });
    const plain = await core.readNamespacedService({ namespace: "default", name: "plain" });
    assert.equal(plain.metadata?.annotations?.[ANNOTATION_REFRESH_REQUESTED], undefined);
  });

  it("no daemon answering: the request stays, and the wait ends at --timeout with what to check", async () => {
    await daemon.stop();
    const run = await dccm("refresh", "default/web", "--timeout", "2s");
    const value = /refresh-requested=(\S+)/.exec(run.stdout)?.[1] ?? "";
    assert.deepEqual(run, {
      status: 1,
      stdout: `asked: ${ANNOTATION_REFRESH_REQUESTED}=${value} on Service default/web\n`,
      stderr:
        "dccm refresh: no answer from a dccm daemon within 2s: is one running and leading for this cluster (dccm status)? " +
        "The request stays on the Service; the daemon answers it when it next syncs the Service (kubectl describe service -n default web)\n",
    });
  });

  it("dccm gc --dry-run with no Google credentials at all (no ADC file, no gcloud, no metadata server): one line, ADC's text once, no retry count, exit 1", () => {
    const home = fs.mkdtempSync(path.join(env.dir, "home-"));
    const run = runDccm(
      [
        "gc",
        "--dry-run",
        "--kubeconfig",
        env.kube.kubeconfigPath,
        "--config",
        configPath,
        "--backend-url",
        env.backendUrl,
      ],
      {
        env: { ...process.env, ...env.pulumiEnv, HOME: home, CLOUDSDK_CONFIG: home },
        unset: ["GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT"],
      },
    );
    const adc =
      "Could not load the default credentials. Browse to https://cloud.google.com/docs/authentication/getting-started for more information.";
    assert.equal(run.status, 1, run.stderr);
    const lines = run.stderr.split("\n").filter((line) => line !== "");
    assert.equal(lines.length, 1, run.stderr);
    assert.match(lines[0] ?? "", /^dccm gc: compute [a-zA-Z]+\.[a-zA-Z]+ projects\/dccm-test\/\S+: no response: /);
    assert.ok(lines[0]?.endsWith(adc), run.stderr);
    assert.equal(run.stderr.split("Could not load the default credentials").length - 1, 1);
    assert.deepEqual([run.stderr.includes("attempts"), run.stderr.includes("MetadataLookupWarning")], [false, false]);
  });
});
