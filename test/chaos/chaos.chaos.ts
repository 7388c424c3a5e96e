/**
 * The fault campaign as a bounded suite (`npm run test:chaos`; not part of `npm test`):
 * the daemon run as a process against a real kube-apiserver, the real engine and the GCE emulator,
 * killed with SIGKILL at random moments during activity, Services created and deleted in churn
 * (deletes during a first `up`, after it, and while the daemon is down), and Compute failing for a
 * window. After each phase the invariants must hold once the daemon settles:
 *   every LoadBalancer Service has an ingress and dccm's finalizer, none is stuck Terminating;
 *   GCE holds exactly what the stacks declare; no lock is left in the backend;
 *   no process of a killed daemon outlives it by 1 s.
 *
 * Sizes (environment): DCCM_CHAOS_KILLS (15), DCCM_CHAOS_CYCLES (30), DCCM_CHAOS_FAULT_MS
 * (60000), DCCM_CHAOS_SETTLE_MS (300000), DCCM_CHAOS_SEED (random; printed, to replay a run).
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { createNode, lbService } from "../support/e2e/cluster";
import {
  alive,
  DaemonProcesses,
  descendants,
  killAndWatch,
  lockFiles,
  type RunningDaemon,
  processCluster,
} from "../support/e2e/daemon-process";
import type { TestEnv } from "../support/e2e/env";
import { declaredResources, gceViolations, serviceViolations } from "../support/e2e/invariants";
import { eventually } from "../support/wait";
import { intFromEnv, maxRunsInWindow, mulberry32 } from "./schedule";
import { STACK_BACKOFF_BASE_MS, STACK_BACKOFF_MAX_MS } from "../../daemon/config";

const KILLS = intFromEnv("DCCM_CHAOS_KILLS", 15, 0);
const CYCLES = intFromEnv("DCCM_CHAOS_CYCLES", 30, 0);
const FAULT_MS = intFromEnv("DCCM_CHAOS_FAULT_MS", 60_000, 0);
const SETTLE_MS = intFromEnv("DCCM_CHAOS_SETTLE_MS", 300_000, 0);
const SEED = intFromEnv("DCCM_CHAOS_SEED", Date.now() % 2 ** 31, 0);
/** What dccm daemon uses (daemon/config.ts) and the queue's default jitter. */
const BACKOFF = { baseMs: STACK_BACKOFF_BASE_MS, maxMs: STACK_BACKOFF_MAX_MS, jitter: 0.1 };

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe(`chaos (seed ${SEED}: ${KILLS} kills, ${CYCLES} churn cycles, ${FAULT_MS} ms of Compute faults)`, function () {
  this.timeout(0);
  const random = mulberry32(SEED);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemons: DaemonProcesses;
  let daemon: RunningDaemon;
  const timings: string[] = [];

  before(async () => {
    ({ env, core, daemons } = await processCluster());
    daemon = daemons.start();
    await daemons.waitReady(daemon);
    await daemons.waitClusterApplied(daemon);
  });

  after(async () => {
    process.stdout.write(`    timings:\n${timings.map((line) => `      ${line}\n`).join("")}`);
    daemons?.killAll();
    // Keep the state of a failed run for a look (daemon logs, backend); clean a passing one.
    if (process.env.DCCM_CHAOS_KEEP === undefined) await env?.stop();
    else process.stdout.write(`    kept ${env?.dir}\n`);
  });

  beforeEach(async () => {
    // A failed phase may have left no daemon running: the next one starts from a live one.
    if (daemon.child.exitCode !== null || daemon.child.signalCode !== null) await restartDaemon();
  });

  async function invariantViolations(): Promise<string[]> {
    const services = (await core.listNamespacedService({ namespace: "default" })).items;
    return [
      ...serviceViolations(services),
      ...gceViolations(env.gce.listResources(), declaredResources(daemons.backendDir)),
      ...lockFiles(daemons.backendDir).map((file) => `lock ${file} left in the backend`),
    ];
  }

  /** Waits (bounded) until the invariants hold; fails with the violations left. */
  async function settle(phase: string): Promise<void> {
    const started = Date.now();
    let last: string[] = [];
    await eventually(
      () => `${phase}: invariants within ${SETTLE_MS} ms; still violated:\n  ${last.join("\n  ")}`,
      async () => {
        last = await invariantViolations();
        return last.length === 0 ? true : undefined;
      },
      SETTLE_MS,
      500,
    );
    timings.push(`${phase}: settled ${Date.now() - started} ms after the last action`);
    assert.deepEqual(orphans.splice(0), [], `${phase}: processes of killed daemons outlived them`);
  }

  /** Processes of killed daemons that outlived their grace (asserted after each phase, so one does not hide the rest). */
  const orphans: string[] = [];

  /** SIGKILL of the daemon process alone; its pulumi CLI must be gone 1 s later, its plugins 3 s later. */
  async function killDaemon(): Promise<void> {
    const report = await killAndWatch(daemons, daemon);
    orphans.push(...report.violations);
  }

  async function restartDaemon(): Promise<void> {
    daemon = daemons.start();
    await daemons.waitReady(daemon);
  }

  function providerCalls(): number {
    const calls = env.gce.calls();
    return (
      (calls["POST /emulator/provider/create"] ?? 0) +
      (calls["POST /emulator/provider/delete"] ?? 0) +
      (calls["POST /emulator/provider/update"] ?? 0)
    );
  }

  async function deleteService(name: string): Promise<void> {
    await core.deleteNamespacedService({ name, namespace: "default" }).catch((error: unknown) => {
      if ((error as { code?: number }).code !== 404) throw error;
    });
  }

  it(`${KILLS} SIGKILLs at random moments of creates and deletes: no orphan process, then the invariants hold`, async () => {
    const live: string[] = [];
    for (let kill = 1; kill <= KILLS; kill++) {
      const baseline = providerCalls();
      if (live.length < 4 || random() < 0.5) {
        const name = `kill-${kill}`;
        await core.createNamespacedService({ namespace: "default", body: lbService(name) });
        live.push(name);
      } else {
        const [name] = live.splice(Math.floor(random() * live.length), 1);
        await deleteService(name ?? "");
      }
      // Kill inside the engine's work most of the time, sometimes before it reaches GCE.
      if (random() < 0.8)
        await eventually(
          "the engine's first GCE call",
          () => (providerCalls() > baseline ? true : undefined),
          60_000,
          20,
        ).catch(() => undefined);
      await sleep(Math.floor(random() * 1500));
      await killDaemon();
      await restartDaemon();
    }
    await settle("kills");
    for (const name of live) await deleteService(name);
    await settle("kills, cleanup");
  });

  it(`${CYCLES} churn cycles of 3 creates and 3 deletes (during the first up, after it, while the daemon is down)`, async () => {
    const modes = { duringUp: 0, afterIngress: 0, daemonDown: 0 };
    for (let cycle = 1; cycle <= CYCLES; cycle++) {
      const names = [0, 1, 2].map((index) => `churn-${cycle}-${index}`);
      const baseline = providerCalls();
      for (const name of names) await core.createNamespacedService({ namespace: "default", body: lbService(name) });
      const mode = random();
      if (mode < 0.4) {
        modes.duringUp++;
        await eventually(
          "the engine's first GCE call",
          () => (providerCalls() > baseline ? true : undefined),
          60_000,
          20,
        ).catch(() => undefined);
        for (const name of names) await deleteService(name);
      } else if (mode < 0.7) {
        modes.afterIngress++;
        for (const name of names)
          await eventually(
            `${name}'s ingress`,
            async () =>
              (await core.readNamespacedService({ name, namespace: "default" })).status?.loadBalancer?.ingress?.[0]?.ip,
            120_000,
          );
        for (const name of names) await deleteService(name);
      } else {
        modes.daemonDown++;
        await sleep(Math.floor(random() * 3000));
        if (random() < 0.5) await killDaemon();
        else assert.equal(await daemons.stop(daemon), 0);
        for (const name of names) await deleteService(name);
        await restartDaemon();
      }
    }
    timings.push(`churn modes: ${JSON.stringify(modes)}`);
    await settle("churn");
    const left = (await core.listNamespacedService({ namespace: "default" })).items
      .map((service) => service.metadata?.name ?? "")
      .filter((name) => name.startsWith("churn-"));
    assert.deepEqual(left, []);
  });

  it(`Compute failing for ${FAULT_MS} ms: the cluster stack backs off instead of re-running`, async function () {
    if (FAULT_MS === 0) this.skip();
    const clusterUps = (): Promise<number> =>
      daemons.metric(daemon, 'dccm_stack_runs_total{stack="cluster",operation="up"}');
    const before = await clusterUps();
    env.gce.putInstance("node-c1", { zone: "us-central1-c" });
    for (const operation of ["create", "update", "delete", "read"] as const)
      env.gce.injectFault({
        kind: "instanceGroups",
        operation,
        status: 503,
        message: "Compute is down",
        count: 1_000_000,
      });
    await createNode(core, "node-c1", "us-central1-c");
    // Services whose backend spans the new zone wait for the cluster stack and nudge it.
    for (const name of ["fault-0", "fault-1", "fault-2"])
      await core.createNamespacedService({ namespace: "default", body: lbService(name) });
    await eventually(
      "the first failing cluster run",
      async () => ((await clusterUps()) > before ? true : undefined),
      60_000,
      20,
    );
    const windowStart = Date.now();
    // Counting runs over a window of time is the measurement itself.
    await sleep(FAULT_MS);
    const runs = (await clusterUps()) - before;
    const windowMs = Date.now() - windowStart;
    env.gce.state.clearFaults();
    const bound = maxRunsInWindow(windowMs, BACKOFF.baseMs, BACKOFF.maxMs, BACKOFF.jitter);
    timings.push(`fault: ${runs} cluster runs in ${windowMs} ms (at most ${bound} possible)`);
    assert.ok(
      runs >= 1 && runs <= bound,
      `${runs} cluster runs in ${windowMs} ms; the backoff allows at most ${bound}`,
    );
    await settle("fault");
  });

  it("a stopped daemon leaves no process and no lock", async () => {
    const started = descendants(daemon.pid);
    assert.equal(await daemons.stop(daemon), 0);
    assert.deepEqual(
      started.filter((info) => alive(info.pid)).map((info) => `${info.comm}(${info.pid})`),
      [],
    );
    assert.deepEqual(lockFiles(daemons.backendDir), []);
  });
});
