/**
 * SIGKILL of the daemon process alone (not its process group: an OOM kill does not signal the
 * group) during an `up`: the pulumi CLI it ran dies with it (daemon/pulumiCli.ts), so the next
 * leader never shares a stack with an orphan engine; a restart then converges.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { loadBalancerName } from "../../model";
import { createNode, E2E_CONFIG, lbService } from "../support/cluster";
import { alive, DaemonProcesses, descendants, lockFiles, type ProcessInfo } from "../support/daemon-process";
import { startTestEnv, type TestEnv } from "../support/env";
import { eventually } from "../support/wait";

describe("dccm daemon killed with SIGKILL during an up", function () {
  this.timeout(600_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemons: DaemonProcesses;

  before(async () => {
    env = await startTestEnv();
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    await createNode(core, "node-a1", "us-central1-a");
    const configPath = path.join(env.dir, "config.json");
    fs.writeFileSync(configPath, JSON.stringify({ ...E2E_CONFIG, backendUrl: env.backendUrl }));
    daemons = new DaemonProcesses(env, configPath);
  });

  after(async () => {
    daemons?.killAll();
    await env?.stop();
  });

  it("leaves no pulumi process of it alive 1 s later, and a restart converges with no lock", async () => {
    const first = daemons.start();
    await daemons.waitReady(first);
    await daemons.waitClusterApplied(first);
    const baseline = env.gce.calls()["POST /emulator/provider/create"] ?? 0;
    const created = await core.createNamespacedService({ namespace: "default", body: lbService("victim") });
    const lb = loadBalancerName(created.metadata?.uid ?? "");
    await eventually("the provider's first create call", () => ((env.gce.calls()["POST /emulator/provider/create"] ?? 0) > baseline ? true : undefined), 120_000, 20);
    // Everything the daemon started, read before the kill (after it, orphans have a new parent).
    const started: ProcessInfo[] = descendants(first.pid);
    assert.ok(
      started.some((info) => info.comm === "pulumi"),
      `the kill must land during an up: descendants ${started.map((info) => info.comm).join(", ")}`,
    );
    await daemons.kill(first);
    const killedAt = Date.now();
    const survivors = (): ProcessInfo[] => started.filter((info) => alive(info.pid));
    await eventually(
      () => `no process of the killed daemon; alive: ${survivors().map((info) => `${info.comm}(${info.pid})`).join(", ")}`,
      () => (survivors().length === 0 ? true : undefined),
      1000,
      20,
    );
    process.stdout.write(`      every process of the killed daemon gone ${Date.now() - killedAt} ms after the kill (${started.map((info) => info.comm).join(", ")})\n`);

    const restartedAt = Date.now();
    const second = daemons.start();
    await daemons.waitReady(second);
    const ip = await eventually("victim's ingress after the restart", async () => (await core.readNamespacedService({ name: "victim", namespace: "default" })).status?.loadBalancer?.ingress?.[0]?.ip, 240_000);
    process.stdout.write(`      converged ${Date.now() - restartedAt} ms after the restart\n`);
    const ours = env.gce.listResources().filter((resource) => resource.name.includes(lb));
    assert.deepEqual(
      ours.map((resource) => `${resource.kind} ${resource.name}`),
      [`addresses ${lb}`, `backendServices ${lb}`, `firewalls k8s-fw-${lb}`, `forwardingRules ${lb}`],
    );
    assert.equal(ours.find((resource) => resource.kind === "addresses")?.properties.address, ip);
    assert.equal(await daemons.stop(second), 0);
    assert.deepEqual(lockFiles(daemons.backendDir), []);
  });
});
