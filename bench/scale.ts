/**
 * The daemon at N Services (issue 12.5), on the offline environment (real kube-apiserver, real
 * engine, the GCE emulator in this process): for each N of DCCM_BENCH_SCALE (default 1,100,500),
 * the time to apply N new Services from a cold start; one Service's change latency (split into
 * patch → its `up` starts and `up` start → applied); a drift pass
 * by listing (wall time, engine runs) with nothing drifted and with one stack drifted; a restart
 * until every stack is confirmed unchanged (engine runs); a new node until its instance group holds
 * it; and the heap and RSS of this process (daemon, emulator and kube clients) idle and in a pass.
 * DCCM_BENCH_SCALE_BACKENDS (default `file`; e.g. `file,gs`) runs each N on each backend, gs:// on
 * fake-gcs-server, with the gs:// figures as ratios to file:// of the same run (`npm run bench:gs`:
 * N = 100 and 500 on both, apart from `npm run bench`, whose scale part stays on file://). N = 2,000
 * does not fit the normal `npm run bench` (its cold start alone is ~23 min on a quiet 2-core
 * machine): `npm run bench:scale` runs 1,500,2000.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { PulumiCommand } from "@pulumi/pulumi/automation";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../daemon/daemon";
import { loadBalancerName, parseConfig, serviceStackName, type Config } from "../model";
import { daemonOptions, startTestEnv, type E2eBackend, type TestEnv } from "../test/support/e2e/env";
import { eventually } from "../test/support/wait";
import { elapsedMs, median, round, runAlone } from "./stats";

export interface ScaleFigures {
  services: number;
  coldStartMsPerService: number;
  changeLatencyMedianMs: number;
  /** Of it: the Service patched → its stack's `up` starts (watch event, desired state, queue). */
  changeToRunStartMedianMs: number;
  /** Of it: the `up` starts → the firewall seen updated in the emulator (engine, provider, emulator). */
  runStartToAppliedMedianMs: number;
  driftPassMs: number;
  driftPassRuns: number;
  driftPassOneDriftedMs: number;
  driftPassOneDriftedRuns: number;
  restartToConfirmedMs: number;
  restartRuns: number;
  /** pulumi CLI processes the restart started (`pulumi version` aside): stack reads through the CLI, runs. */
  restartCliCommands: number;
  /** The same counter after the new node's run: what the CLI ran for it (the counter counts). */
  nodeToGroupCliCommands: number;
  nodeToGroupMs: number;
  idleHeapMb: number;
  idleRssMb: number;
  passPeakRssMb: number;
  /** After the restart, idle: what the daemon keeps per stack without any run's residue. */
  restartIdleHeapMb: number;
  restartIdleRssMb: number;
}

const CONFIG: Config = parseConfig({ project: "dccm-test", region: "us-central1", network: "k8s-net", nodeTags: ["k8s-node"], clusterName: "scale", clusterId: "5ca1e" });
const CHANGE_SAMPLES = 5;
const SVC0_STACK = serviceStackName("default", "svc-0");

function mb(bytes: number): number {
  return round(bytes / 1024 / 1024, 1);
}

async function createServices(core: k8s.CoreV1Api, count: number): Promise<Map<string, string>> {
  const uids = new Map<string, string>();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) {
      const name = `svc-${next++}`;
      const created = await core.createNamespacedService({ namespace: "default", body: { metadata: { name }, spec: { type: "LoadBalancer", ports: [{ port: 80, protocol: "TCP" }] } } });
      uids.set(name, created.metadata?.uid ?? "");
    }
  };
  await Promise.all(Array.from({ length: 10 }, worker));
  return uids;
}

async function allIngress(core: k8s.CoreV1Api): Promise<true | undefined> {
  const listed = await core.listNamespacedService({ namespace: "default" });
  return listed.items.every((item) => item.spec?.type !== "LoadBalancer" || (item.status?.loadBalancer?.ingress ?? []).length > 0) ? true : undefined;
}

/** The environment's pulumi CLI behind a script that logs each command to `log`, one line each. */
async function countingCli(env: TestEnv): Promise<{ command: PulumiCommand; commands(): number }> {
  const root = path.join(env.dir, "counting-pulumi");
  const log = path.join(root, "commands");
  fs.mkdirSync(path.join(root, "bin"), { recursive: true });
  fs.writeFileSync(path.join(root, "bin", "pulumi"), `#!/bin/sh\n[ "$1" = version ] || echo "$1" >> '${log}'\nexec '${env.pulumiCommand.command}' "$@"\n`, { mode: 0o755 });
  return {
    command: await PulumiCommand.get({ root, skipVersionCheck: true }),
    commands: () =>
      fs.existsSync(log)
        ? fs
            .readFileSync(log, "utf8")
            .split("\n")
            .filter((line) => line !== "").length
        : 0,
  };
}

/** When each engine run started, by `<operation> <stack>`, last one kept. */
const runStarts = new Map<string, bigint>();

function newDaemon(env: TestEnv, runs: string[], pulumiCommand: PulumiCommand = env.pulumiCommand): Daemon {
  return new Daemon(
    daemonOptions(env, CONFIG, {
      pulumiCommand,
      logLevel: "error",
      leaderElection: false,
      identity: "bench",
      resyncMs: 3_600_000,
      driftMs: 3_600_000,
      driftListing: { computeEndpoint: env.gce.computeEndpoint },
      onRunStart: (stack, operation) => {
        runs.push(`${operation} ${stack}`);
        runStarts.set(`${operation} ${stack}`, process.hrtime.bigint());
      },
    }),
  );
}

/** Runs `run` while sampling this process's RSS every 10 ms: its result, wall time and peak RSS. */
async function sampled<T>(run: () => Promise<T>): Promise<{ result: T; ms: number; peakRss: number }> {
  let peakRss = process.memoryUsage().rss;
  const timer = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 10);
  const start = process.hrtime.bigint();
  try {
    const result = await run();
    return { result, ms: elapsedMs(start), peakRss };
  } finally {
    clearInterval(timer);
  }
}

interface ChangeLatency {
  total: number;
  toRunStart: number;
  runStartToApplied: number;
}

/**
 * One call to the emulator's Compute API, as dccm's own client makes them: polling through
 * listResources() instead would copy and sort every resource every 10 ms in the daemon's own
 * process, a cost that grows with N and would be measured as the daemon's.
 */
async function emulatorCall(env: TestEnv, method: "GET" | "POST", resource: string): Promise<Record<string, unknown>> {
  const response = await fetch(`${env.gce.computeEndpoint}projects/${CONFIG.project}/${resource}`, { method });
  if (!response.ok) return {};
  return (await response.json()) as Record<string, unknown>;
}

async function changeLatency(env: TestEnv, core: k8s.CoreV1Api, daemon: Daemon, firewall: string): Promise<ChangeLatency> {
  const samples: number[] = [];
  const toRunStart: number[] = [];
  const runToApplied: number[] = [];
  for (let i = 0; i < CHANGE_SAMPLES; i++) {
    const range = `10.99.${i}.0/24`;
    runStarts.delete(`up ${SVC0_STACK}`);
    const start = process.hrtime.bigint();
    await core.patchNamespacedService(
      { name: "svc-0", namespace: "default", body: { spec: { loadBalancerSourceRanges: [range] } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    await eventually(
      "the change applied",
      async () => (JSON.stringify((await emulatorCall(env, "GET", `global/firewalls/${firewall}`)).sourceRanges) === JSON.stringify([range]) ? true : undefined),
      300_000,
      10,
    );
    const end = process.hrtime.bigint();
    const runStart = runStarts.get(`up ${SVC0_STACK}`);
    if (runStart === undefined) throw new Error(`bench: the change applied without an up of ${SVC0_STACK}`);
    samples.push(Number(end - start) / 1e6);
    toRunStart.push(Number(runStart - start) / 1e6);
    runToApplied.push(Number(end - runStart) / 1e6);
    await daemon.idle();
  }
  return { total: median(samples), toRunStart: median(toRunStart), runStartToApplied: median(runToApplied) };
}

async function benchAt(services: number, backend: E2eBackend): Promise<ScaleFigures> {
  const env = await startTestEnv({ backend });
  const core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
  const runs: string[] = [];
  let daemon = newDaemon(env, runs);
  try {
    env.gce.putInstance("node-1", { zone: "us-central1-a" });
    await core.createNode({ body: { metadata: { name: "node-1", labels: { "topology.kubernetes.io/zone": "us-central1-a" } }, spec: { providerID: "gce://dccm-test/us-central1-a/node-1" } } });
    const uids = await createServices(core, services);
    const cold = process.hrtime.bigint();
    await daemon.start(() => undefined);
    await eventually("every Service's ingress", () => allIngress(core), 3_600_000, 500);
    await daemon.idle();
    const coldMs = elapsedMs(cold);
    const latency = await changeLatency(env, core, daemon, `k8s-fw-${loadBalancerName(uids.get("svc-0") ?? "")}`);

    global.gc?.();
    const idleHeap = process.memoryUsage().heapUsed;
    const idleRss = process.memoryUsage().rss;
    runs.length = 0;
    const clean = await sampled(() => daemon.driftPass());
    const cleanRuns = runs.length;
    env.gce.patchOutOfBand("firewalls", `k8s-fw-${loadBalancerName(uids.get("svc-0") ?? "")}`, { sourceRanges: ["0.0.0.0/0"] });
    runs.length = 0;
    const drifted = await sampled(async () => {
      await daemon.driftPass();
      await daemon.idle();
    });
    const driftedRuns = runs.length;

    await daemon.stop();
    runs.length = 0;
    const cli = await countingCli(env);
    daemon = newDaemon(env, runs, cli.command);
    const restart = process.hrtime.bigint();
    await daemon.start(() => undefined);
    await daemon.idle();
    const restartMs = elapsedMs(restart);
    const restartRuns = runs.length;
    const restartCliCommands = cli.commands();
    global.gc?.();
    const restartIdle = process.memoryUsage();

    const node = process.hrtime.bigint();
    env.gce.putInstance("node-2", { zone: "us-central1-a" });
    await core.createNode({ body: { metadata: { name: "node-2", labels: { "topology.kubernetes.io/zone": "us-central1-a" } }, spec: { providerID: "gce://dccm-test/us-central1-a/node-2" } } });
    await eventually(
      "node-2 in its instance group",
      async () => (JSON.stringify(await emulatorCall(env, "POST", `zones/us-central1-a/instanceGroups/k8s-ig--${CONFIG.clusterId}/listInstances`)).includes("/instances/node-2") ? true : undefined),
      300_000,
      10,
    );
    const nodeMs = elapsedMs(node);
    await daemon.idle();
    const nodeCliCommands = cli.commands() - restartCliCommands;
    return {
      services,
      coldStartMsPerService: round(coldMs / services, 0),
      changeLatencyMedianMs: round(latency.total, 0),
      changeToRunStartMedianMs: round(latency.toRunStart, 0),
      runStartToAppliedMedianMs: round(latency.runStartToApplied, 0),
      driftPassMs: round(clean.ms, 0),
      driftPassRuns: cleanRuns,
      driftPassOneDriftedMs: round(drifted.ms, 0),
      driftPassOneDriftedRuns: driftedRuns,
      restartToConfirmedMs: round(restartMs, 0),
      restartRuns,
      restartCliCommands,
      nodeToGroupCliCommands: nodeCliCommands,
      nodeToGroupMs: round(nodeMs, 0),
      idleHeapMb: mb(idleHeap),
      idleRssMb: mb(idleRss),
      passPeakRssMb: mb(Math.max(clean.peakRss, drifted.peakRss)),
      restartIdleHeapMb: mb(restartIdle.heapUsed),
      restartIdleRssMb: mb(restartIdle.rss),
    };
  } finally {
    await daemon.stop();
    await env.stop();
  }
}

/** Figures per N, and the ratios the README quotes (to N = the smallest). */
export async function benchScale(sizes: readonly number[] = (process.env.DCCM_BENCH_SCALE ?? "1,100,500").split(",").map(Number)): Promise<Record<string, number>> {
  const figures: Record<string, number> = {};
  let base: ScaleFigures | undefined;
  let last: ScaleFigures | undefined;
  const backends = (process.env.DCCM_BENCH_SCALE_BACKENDS ?? "file").split(",") as E2eBackend[];
  for (const services of sizes) {
    const at = await benchAt(services, "file");
    process.stderr.write(`scale ${services}: ${JSON.stringify(at)}\n`);
    base ??= at;
    last = at;
    for (const [key, value] of Object.entries(at)) if (key !== "services") figures[`scale${services}_${key}`] = value;
    figures[`scale${services}_changeLatencyRatio`] = round(at.changeLatencyMedianMs / base.changeLatencyMedianMs, 2);
    if (!backends.includes("gs")) continue;
    const gs = await benchAt(services, "gs");
    process.stderr.write(`scale ${services} gs://: ${JSON.stringify(gs)}\n`);
    for (const key of ["restartToConfirmedMs", "driftPassMs", "coldStartMsPerService", "changeLatencyMedianMs"] as const)
      figures[`scale${services}_gs_${key}Ratio`] = round(gs[key] / Math.max(1, at[key]), 2);
    figures[`scale${services}_gs_restartToConfirmedMs`] = gs.restartToConfirmedMs;
    figures[`scale${services}_gs_restartRuns`] = gs.restartRuns;
    figures[`scale${services}_gs_restartCliCommands`] = gs.restartCliCommands;
    figures[`scale${services}_gs_nodeToGroupCliCommands`] = gs.nodeToGroupCliCommands;
  }
  if (base !== undefined && last !== undefined && last.services > base.services) {
    // Per stack, from the smallest N to the largest, after a restart (no run's residue in it).
    const stacks = last.services - base.services;
    figures.restartIdleHeapMbPerStack = round((last.restartIdleHeapMb - base.restartIdleHeapMb) / stacks, 4);
    figures.restartIdleRssMbPerStack = round((last.restartIdleRssMb - base.restartIdleRssMb) / stacks, 4);
  }
  return figures;
}

if (require.main === module) runAlone(() => benchScale());
