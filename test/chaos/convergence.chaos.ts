/**
 * Convergence after a kill (issue 8, item 3): 5 Services applied, a 6th being created when the
 * daemon is killed with SIGKILL; the restarted daemon must reach the same state (every Service
 * with its ingress, GCE as the stacks declare, no lock). Measured twice: the same replica
 * restarting (same Lease identity, as a container restart in its pod) and another replica taking
 * over (it must wait for the killed one's Lease to expire). Prints where the time goes.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { lbService } from "../support/cluster";
import { DaemonProcesses, lockFiles, logTime, type RunningDaemon, processCluster } from "../support/daemon-process";
import { type TestEnv } from "../support/env";
import { declaredResources, gceViolations, serviceViolations } from "../support/invariants";
import { eventually } from "../support/wait";

/** The bound for 5 Services when the same replica restarts. */
const CONVERGE_MS = 10_000;

describe("convergence after a SIGKILL (5 Services)", function () {
  this.timeout(0);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemons: DaemonProcesses;
  let daemon: RunningDaemon;
  let created = 0;

  before(async () => {
    ({ env, core, daemons } = await processCluster());
    daemon = daemons.start({ identity: "dccm-replica-a" });
    await daemons.waitReady(daemon);
    await daemons.waitClusterApplied(daemon);
    for (let index = 0; index < 5; index++) await core.createNamespacedService({ namespace: "default", body: lbService(`svc-${index}`) });
    await converged();
  });

  after(async () => {
    daemons?.killAll();
    await env?.stop();
  });

  async function violations(): Promise<string[]> {
    const services = (await core.listNamespacedService({ namespace: "default" })).items;
    return [...serviceViolations(services), ...gceViolations(env.gce.listResources(), declaredResources(daemons.backendDir)), ...lockFiles(daemons.backendDir)];
  }

  async function converged(): Promise<void> {
    let last: string[] = [];
    await eventually(
      () => `convergence; still: ${last.join("; ")}`,
      async () => {
        last = await violations();
        return last.length === 0 ? true : undefined;
      },
      240_000,
      100,
    );
  }

  async function killDuringUpAndRestart(identity: string): Promise<{ total: number; breakdown: string }> {
    created++;
    const baseline = env.gce.calls()["POST /emulator/provider/create"] ?? 0;
    await core.createNamespacedService({ namespace: "default", body: lbService(`extra-${created}`) });
    await eventually("the engine's first create call", () => ((env.gce.calls()["POST /emulator/provider/create"] ?? 0) > baseline ? true : undefined), 60_000, 20);
    await daemons.kill(daemon);
    daemon = daemons.start({ identity });
    await converged();
    const total = Date.now() - daemon.startedAt;
    const at = (message: string): string => {
      const time = logTime(daemon.logPath, message);
      return time === undefined ? "-" : `${time - daemon.startedAt} ms`;
    };
    const metrics = await daemons.metrics(daemon);
    const sums = metrics
      .split("\n")
      .filter((line) => line.startsWith("dccm_up_duration_seconds_sum") || line.startsWith("dccm_up_duration_seconds_count"))
      .join("; ");
    const breakdown = `serving ${at("serving /healthz, /readyz, /metrics")}, leader ${at("became leader")}, lists synced ${at("initial lists synced")}, converged ${total} ms; ${sums}`;
    return { total, breakdown };
  }

  it(`the same replica restarting converges within ${CONVERGE_MS} ms`, async () => {
    const { total, breakdown } = await killDuringUpAndRestart("dccm-replica-a");
    process.stdout.write(`      same replica: ${breakdown}\n`);
    assert.ok(total < CONVERGE_MS, `converged ${total} ms after the restart: ${breakdown}`);
  });

  it("another replica taking over converges once the killed one's Lease expires", async () => {
    const { total, breakdown } = await killDuringUpAndRestart("dccm-replica-b");
    process.stdout.write(`      other replica: ${breakdown}\n`);
    // 15 s of Lease (daemon/leader.ts DEFAULT_LEASE) plus the work.
    assert.ok(total < 15_000 + CONVERGE_MS, `converged ${total} ms after the restart: ${breakdown}`);
  });
});
