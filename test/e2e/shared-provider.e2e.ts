/**
 * `dccm daemon --shared-provider` (stacks/sharedProvider.ts) as a process, against the real engine
 * and the GCE emulator's plugin: every engine run attaches to the one plugin the daemon started (no
 * other plugin process appears while three Services are applied at once); a SIGKILL of that plugin
 * while its create is on the way to GCE fails the run in flight, a new plugin is started, and the
 * queue's retry converges through the new one, as does the next change.
 *
 * The killed plugin's create never reaches GCE (the proxy holds it for ever, as a plugin killed
 * before its request left): one that reached GCE after all is created there while the engine, told
 * the create failed, records nothing, and every retry meets a 409 (docs/explanation/architecture.md, the
 * shared provider).
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { PROCESS_OWNER_VARIABLE } from "../../stacks/reaper";
import { loadBalancerName } from "../../model";
import { eventReasons, lbService } from "../support/e2e/cluster";
import {
  alive,
  DaemonProcesses,
  descendants,
  lockFiles,
  processCluster,
  type RunningDaemon,
} from "../support/e2e/daemon-process";
import { startDelayProxy, type DelayProxy } from "../support/e2e/delay-proxy";
import type { TestEnv } from "../support/e2e/env";
import { declaredResources, gceViolations } from "../support/e2e/invariants";
import { eventually } from "../support/wait";

const RESTARTS = "dccm_shared_provider_restarts_total";

/** The pids of the daemon log's "shared provider started" lines, in order. */
function startedPids(logPath: string): number[] {
  return fs
    .readFileSync(logPath, "utf8")
    .split("\n")
    .filter((line) => line.includes('"shared provider started"'))
    .map((line) => (JSON.parse(line) as { pid: number }).pid);
}

/** Every provider plugin process of the daemon seen while `run` runs (polled every 50 ms). */
async function pluginsDuring(daemon: RunningDaemon, run: () => Promise<unknown>): Promise<number[]> {
  const seen = new Set<number>();
  const poll = (): void => {
    for (const info of descendants(daemon.pid)) if (info.cmdline.includes("provider.js")) seen.add(info.pid);
  };
  const timer = setInterval(poll, 50);
  try {
    await run();
    poll();
  } finally {
    clearInterval(timer);
  }
  return [...seen].sort((a, b) => a - b);
}

describe("dccm daemon --shared-provider", function () {
  this.timeout(600_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemons: DaemonProcesses;
  let holdCreates = false;
  let gce: DelayProxy;

  before(async () => {
    ({ env, core } = await processCluster());
    daemons = new DaemonProcesses(env, path.join(env.dir, "config.json"), ["--shared-provider"]);
    gce = await startDelayProxy(env.gce.endpoint, (method, url) =>
      holdCreates && method === "POST" && url.startsWith("/emulator/provider/create") ? 3_600_000 : 0,
    );
  });

  after(async () => {
    daemons?.killAll();
    await gce?.close();
    await env?.stop();
  });

  const ingress = (name: string) => async (): Promise<string | undefined> =>
    (await core.readNamespacedService({ name, namespace: "default" })).status?.loadBalancer?.ingress?.[0]?.ip;

  it("applies three Services at once through the one plugin, recovers from its SIGKILL mid-create, and applies the next change", async () => {
    const daemon = daemons.start({ env: { DCCM_GCE_EMULATOR_URL: gce.url } });
    await daemons.waitReady(daemon);
    await daemons.waitClusterApplied(daemon);
    const [first] = startedPids(daemon.logPath);
    assert.deepEqual(
      await pluginsDuring(daemon, async () => {
        // Three engines at once (--parallelism 4), each attaching and configuring the one plugin.
        const names = ["web-a", "web-b", "web-c"];
        await Promise.all(
          names.map((name) => core.createNamespacedService({ namespace: "default", body: lbService(name) })),
        );
        await Promise.all(names.map((name) => eventually(`${name}'s ingress`, ingress(name), 240_000)));
      }),
      [first],
    );

    holdCreates = true;
    const held = gce.held();
    const created = await core.createNamespacedService({ namespace: "default", body: lbService("cut") });
    await held;
    process.kill(first, "SIGKILL");
    holdCreates = false;
    const running = daemon;
    await eventually("a new plugin", () => (startedPids(running.logPath).length === 2 ? true : undefined), 60_000, 50);
    const second = startedPids(daemon.logPath)[1];
    assert.equal(await daemons.metric(daemon, RESTARTS), 1);
    const ip = await eventually("cut's ingress after the plugin's restart", ingress("cut"), 240_000);
    const reasons = (await eventReasons(core, "cut")).map((event) => event.reason);
    assert.ok(reasons.includes("SyncLoadBalancerFailed"), `the run in flight failed: ${reasons.join(", ")}`);
    const lb = loadBalancerName(created.metadata?.uid ?? "");
    const ours = env.gce.listResources().filter((resource) => resource.name.includes(lb));
    assert.deepEqual(
      ours.map((resource) => `${resource.kind} ${resource.name}`),
      [`backendServices ${lb}`, `firewalls k8s-fw-${lb}`, `forwardingRules ${lb}`],
    );
    assert.equal(ours.find((resource) => resource.kind === "forwardingRules")?.properties.ipAddress, ip);

    assert.deepEqual(
      await pluginsDuring(daemon, async () => {
        await core.createNamespacedService({ namespace: "default", body: lbService("next") });
        await eventually("next's ingress", ingress("next"), 240_000);
      }),
      [second],
    );
    assert.deepEqual(startedPids(daemon.logPath), [first, second]);
    assert.deepEqual(gceViolations(env.gce.listResources(), declaredResources(daemons.backendDir)), []);
    assert.equal(await daemons.stop(daemon), 0);
    assert.equal(alive(second), false, "a stopped daemon's plugin is gone");
    assert.deepEqual(lockFiles(daemons.backendDir), []);
  });

  it("a daemon killed with SIGKILL leaves no shared plugin behind: it carries the reaper's marker", async () => {
    const daemon = daemons.start();
    await daemons.waitReady(daemon);
    const [plugin] = startedPids(daemon.logPath);
    // The emulator's plugin also leaves when its parent is gone; Google's does not: the marker is what reaps it.
    const environ = fs.readFileSync(`/proc/${plugin}/environ`, "utf8").split("\0");
    assert.equal(environ.filter((entry) => entry.startsWith(`${PROCESS_OWNER_VARIABLE}=${daemon.pid}-`)).length, 1);
    process.kill(daemon.pid, "SIGKILL");
    await daemon.exited;
    await eventually("the plugin reaped", () => (alive(plugin) ? undefined : true), 10_000, 20);
  });
});
