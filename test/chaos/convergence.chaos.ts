/**
 * Convergence after a kill: 5 Services applied, a 6th being created when the
 * daemon is killed with SIGKILL; the restarted daemon must reach the same state (every Service
 * with its ingress, GCE as the stacks declare, no lock). Measured over several kills, both for the
 * same replica restarting (same Lease identity, as a container restart in its pod) and for another
 * replica taking over (it must wait for the killed one's Lease to expire). After each kill the 6th
 * Service is deleted again, so every sample starts from the same 5.
 *
 * A measurement, not a bound: it prints each sample with its start-up phases (the `phases` of the
 * daemon's "initial lists synced" line) and the medians; what it asserts is the invariants.
 * Sizes (environment): DCCM_CONVERGENCE_KILLS (5), DCCM_CONVERGENCE_TAKEOVERS (3).
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as k8s from "@kubernetes/client-node";
import { median } from "../../bench/stats";
import { lbService } from "../support/e2e/cluster";
import { DaemonProcesses, lockFiles, type RunningDaemon, processCluster } from "../support/e2e/daemon-process";
import type { TestEnv } from "../support/e2e/env";
import { declaredResources, gceViolations, serviceViolations } from "../support/e2e/invariants";
import { eventually } from "../support/wait";
import { intFromEnv } from "./schedule";

const KILLS = intFromEnv("DCCM_CONVERGENCE_KILLS", 5, 1);
const TAKEOVERS = intFromEnv("DCCM_CONVERGENCE_TAKEOVERS", 3, 1);

/** One restart: ms from the new process's spawn to the converged state, and where it went. */
interface Sample {
  totalMs: number;
  /** Start-up phases the daemon logged (ms each), then `work`: from "initial lists synced" to converged. */
  phases: Record<string, number>;
}

/** The `phases` field and time of the daemon's "initial lists synced" log line. */
function syncedLine(logPath: string): { time: number; phases: Record<string, number> } | undefined {
  for (const line of fs.readFileSync(logPath, "utf8").split("\n")) {
    if (!line.includes("initial lists synced")) continue;
    try {
      const entry = JSON.parse(line) as { msg?: string; time?: number; phases?: Record<string, number> };
      if (entry.msg === "initial lists synced" && typeof entry.time === "number")
        return { time: entry.time, phases: entry.phases ?? {} };
    } catch {
      // Not a log line of ours.
    }
  }
  return undefined;
}

function describeSamples(label: string, samples: readonly Sample[]): string {
  const names = [...new Set(samples.flatMap((sample) => Object.keys(sample.phases)))];
  const medians = names
    .map((name) => `${name} ${Math.round(median(samples.map((sample) => sample.phases[name] ?? 0)))}`)
    .join(", ");
  const totals = samples.map((sample) => sample.totalMs);
  return [
    `${label}: median ${Math.round(median(totals))} ms over ${samples.length} kills (min ${Math.min(...totals)}, max ${Math.max(...totals)})`,
    `  median phases (ms): ${medians}`,
    ...samples.map((sample, index) => `  #${index + 1} ${sample.totalMs} ms: ${JSON.stringify(sample.phases)}`),
  ].join("\n");
}

describe(`convergence after a SIGKILL (5 Services; ${KILLS} restarts, ${TAKEOVERS} takeovers)`, function () {
  this.timeout(0);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemons: DaemonProcesses;
  let daemon: RunningDaemon;
  let created = 0;
  const reports: string[] = [];

  before(async () => {
    ({ env, core, daemons } = await processCluster());
    daemon = daemons.start({ identity: "dccm-replica-a" });
    await daemons.waitReady(daemon);
    await daemons.waitClusterApplied(daemon);
    for (let index = 0; index < 5; index++)
      await core.createNamespacedService({ namespace: "default", body: lbService(`svc-${index}`) });
    await converged(5);
  });

  after(async () => {
    process.stdout.write(`${reports.join("\n")}\n`);
    daemons?.killAll();
    await env?.stop();
  });

  async function violations(services: number): Promise<string[]> {
    const listed = (await core.listNamespacedService({ namespace: "default" })).items.filter(
      (service) => service.spec?.type === "LoadBalancer",
    );
    return [
      ...serviceViolations(listed),
      ...(listed.length === services ? [] : [`${listed.length} LoadBalancer Services, expected ${services}`]),
      ...gceViolations(env.gce.listResources(), declaredResources(daemons.backendDir)),
      ...lockFiles(daemons.backendDir).map((file) => `lock ${file} left in the backend`),
    ];
  }

  /** Every invariant holds, with `services` LoadBalancer Services (a deleted one is gone, not Terminating). */
  async function converged(services: number): Promise<void> {
    let last: string[] = [];
    await eventually(
      () => `convergence; still: ${last.join("; ")}`,
      async () => {
        last = await violations(services);
        return last.length === 0 ? true : undefined;
      },
      240_000,
      100,
    );
  }

  async function killDuringUpAndRestart(identity: string): Promise<Sample> {
    created++;
    const name = `extra-${created}`;
    const baseline = env.gce.calls()["POST /emulator/provider/create"] ?? 0;
    await core.createNamespacedService({ namespace: "default", body: lbService(name) });
    await eventually(
      "the engine's first create call",
      () => ((env.gce.calls()["POST /emulator/provider/create"] ?? 0) > baseline ? true : undefined),
      60_000,
      20,
    );
    await daemons.kill(daemon);
    daemon = daemons.start({ identity });
    await converged(6);
    const convergedAt = Date.now();
    const synced = syncedLine(daemon.logPath);
    assert.ok(synced !== undefined, `no "initial lists synced" line in ${daemon.logPath}`);
    const sample: Sample = {
      totalMs: convergedAt - daemon.startedAt,
      phases: { ...synced.phases, work: convergedAt - synced.time },
    };
    // Back to the 5 Services, so the next sample starts from the same state.
    await core.deleteNamespacedService({ namespace: "default", name });
    await converged(5);
    return sample;
  }

  it(`the same replica restarting converges (median of ${KILLS})`, async () => {
    const samples: Sample[] = [];
    for (let kill = 0; kill < KILLS; kill++) samples.push(await killDuringUpAndRestart("dccm-replica-a"));
    reports.push(describeSamples("same replica", samples));
  });

  it(`another replica taking over converges once the killed one's Lease expires (median of ${TAKEOVERS})`, async () => {
    const samples: Sample[] = [];
    for (let kill = 0; kill < TAKEOVERS; kill++)
      samples.push(await killDuringUpAndRestart(`dccm-replica-${kill % 2 === 0 ? "b" : "a"}`));
    reports.push(describeSamples("other replica", samples));
  });
});
