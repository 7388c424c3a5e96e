/**
 * The daemon at N Services, on the offline environment (real kube-apiserver, real
 * engine, the GCE emulator in a process of its own, bench/emulatorChild.ts, as Google is in
 * production): for each N of DCCM_BENCH_SCALE (default 1,100,500),
 * the time to apply N new Services from a cold start; one Service's change latency (split into
 * patch → its `up` starts and `up` start → applied); a drift pass
 * by listing (wall time, engine runs) with nothing drifted and with one stack drifted; a restart
 * until every stack is confirmed unchanged (engine runs); a new node until its instance group holds
 * it; the first node of a new zone (a configured instanceGroupZones zone) until its zone's group
 * holds it, and the cluster-stack and Service-stack runs it cost; and the heap and RSS of this
 * process (the daemon and the bench's kube clients) idle and in a pass. The change samples also
 * record this process's event-loop delay and GC time (the inline program of each run runs in it)
 * and the emulator's busy time.
 * DCCM_BENCH_SCALE_BACKENDS (default `file`; e.g. `file,gs`) runs each N on each backend, gs:// on
 * fake-gcs-server, with the gs:// figures as ratios to file:// of the same run (`npm run bench:gs`:
 * N = 100 and 500 on both, apart from `npm run bench`, whose scale part stays on file://). N = 2,000
 * does not fit the normal `npm run bench` (its cold start alone is ~23 min on a quiet 2-core
 * machine): `npm run bench:scale` runs 1,500,2000.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import * as readline from "node:readline";
import { PulumiCommand } from "@pulumi/pulumi/automation";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../daemon/daemon";
import {
  CLUSTER_STACK,
  isServiceStack,
  loadBalancerName,
  parseConfig,
  serviceStackName,
  type Config,
  type NodeInfo,
} from "../model";
import { createNode } from "../test/support/e2e/cluster";
import { daemonOptions, startTestEnv, type E2eBackend, type TestEnv } from "../test/support/e2e/env";
import { eventually } from "../test/support/wait";
import { BUSY_QUESTION, type BusyAnswer, type EmulatorEndpoints } from "./emulatorChild";
import { elapsedMs, median, round, runAlone } from "./stats";

export interface ScaleFigures {
  services: number;
  coldStartMsPerService: number;
  changeLatencyMedianMs: number;
  /** Of it: the Service patched → its stack's `up` starts (watch event, desired state, queue). */
  changeToRunStartMedianMs: number;
  /** Of it: the `up` starts → the firewall seen updated in the emulator (engine, provider, emulator). */
  runStartToAppliedMedianMs: number;
  /** This process's event-loop delay over the change samples: p99 and max (a busy daemon delays its inline program). */
  changeLoopDelayP99Ms: number;
  changeLoopDelayMaxMs: number;
  /** This process's GC pauses over the change samples, per change. */
  changeGcMsPerChange: number;
  /** The emulator's process busy over the change samples, per change: Google's share, not the daemon's. */
  changeEmulatorBusyMsPerChange: number;
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
  /** The first Node of a zone (us-central1-b, a configured instanceGroupZones zone) until its zone's group holds it. */
  newZoneNodeToGroupMs: number;
  /** The engine runs it cost: the cluster stack's, and the Service stacks' (the goal: 0). */
  newZoneClusterRuns: number;
  newZoneServiceRuns: number;
  idleHeapMb: number;
  idleRssMb: number;
  passPeakRssMb: number;
  /** After the restart, idle: what the daemon keeps per stack without any run's residue. */
  restartIdleHeapMb: number;
  restartIdleRssMb: number;
}

// instanceGroupZones as docs/reference/configuration.md advises for many Services: a zone's first Node runs the cluster stack only.
const CONFIG: Config = parseConfig({
  project: "dccm-test",
  region: "us-central1",
  network: "k8s-net",
  nodeTags: ["k8s-node"],
  clusterName: "scale",
  clusterId: "5ca1e",
  instanceGroupZones: ["us-central1-a", "us-central1-b"],
});
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
      const created = await core.createNamespacedService({
        namespace: "default",
        body: { metadata: { name }, spec: { type: "LoadBalancer", ports: [{ port: 80, protocol: "TCP" }] } },
      });
      uids.set(name, created.metadata?.uid ?? "");
    }
  };
  await Promise.all(Array.from({ length: 10 }, worker));
  return uids;
}

/**
 * For a bench without a drift listing: its resync and drift period, longer than any bench and
 * below setTimeout's 2^31 - 1 ms. The full refresh draws each stack's first pass at random within
 * the period (controllers/fullRefresh.ts firstRefreshDelay), so with an hour's period some of N
 * stacks refresh inside any measured window: N x window / 1 h of them (9 at N = 500 over 65 s).
 */
export const QUIET_PERIOD_MS = 7 * 24 * 3_600_000;

export async function allIngress(core: k8s.CoreV1Api): Promise<true | undefined> {
  const listed = await core.listNamespacedService({ namespace: "default" });
  return listed.items.every(
    (item) => item.spec?.type !== "LoadBalancer" || (item.status?.loadBalancer?.ingress ?? []).length > 0,
  )
    ? true
    : undefined;
}

/** The environment's pulumi CLI behind a script that logs each command to `log`, one line each. */
async function countingCli(env: TestEnv): Promise<{ command: PulumiCommand; commands(): number }> {
  const root = path.join(env.dir, "counting-pulumi");
  const log = path.join(root, "commands");
  fs.mkdirSync(path.join(root, "bin"), { recursive: true });
  fs.writeFileSync(
    path.join(root, "bin", "pulumi"),
    `#!/bin/sh\n[ "$1" = version ] || echo "$1" >> '${log}'\nexec '${env.pulumiCommand.command}' "$@"\n`,
    { mode: 0o755 },
  );
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

/** The emulator's process, and what talks to it. */
export interface EmulatorProcess extends EmulatorEndpoints {
  readonly child: ChildProcess;
}

export async function startEmulatorProcess(): Promise<EmulatorProcess> {
  const child = spawn(process.execPath, [path.join(__dirname, "emulatorChild.js")], {
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  });
  const lines = readline.createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const first = await new Promise<string>((resolve, reject) => {
    lines.once("line", resolve);
    child.once("exit", (code, signal) =>
      reject(
        new Error(`bench: the emulator's process ended (${String(code ?? signal)}) before it printed its endpoints`),
      ),
    );
  });
  lines.close();
  return { ...(JSON.parse(first) as EmulatorEndpoints), child };
}

/** The emulator's event-loop busy time so far (bench/emulatorChild.ts). */
async function emulatorBusyMs(gce: EmulatorProcess): Promise<number> {
  const answer = new Promise<number>((resolve) =>
    gce.child.once("message", (message: BusyAnswer) => resolve(message.busyMs)),
  );
  gce.child.send(BUSY_QUESTION);
  return answer;
}

/** The one Node of the single-node benches (engineRuns, runHeap), located in us-central1-a. */
export const BENCH_NODE: NodeInfo = {
  name: "node-1",
  uid: "0b7a3c1e-0000-4000-8000-000000000001",
  providerID: "gce://dccm-test/us-central1-a/node-1",
  labels: { "topology.kubernetes.io/zone": "us-central1-a" },
  taints: [],
  deleting: false,
  podCIDRs: [],
};

/** BENCH_NODE's VM in the emulator of `project`. */
export async function putBenchNode(gce: EmulatorEndpoints, project: string): Promise<void> {
  const response = await fetch(`${gce.endpoint}/emulator/instances/${project}/us-central1-a/node-1`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  if (!response.ok) throw new Error(`bench: the emulator refused node-1: ${response.status}`);
}

export async function stopEmulatorProcess(gce: EmulatorProcess): Promise<void> {
  if (gce.child.exitCode !== null || gce.child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => gce.child.once("exit", () => resolve()));
  gce.child.kill("SIGTERM");
  await exited;
}

/** One call of the emulator's test face (/emulator/...), failing on an error status. */
export async function emulatorAdmin(
  gce: EmulatorEndpoints,
  method: "PUT" | "PATCH",
  route: string,
  body: object,
): Promise<void> {
  const response = await fetch(`${gce.endpoint}/emulator/${route}`, {
    method,
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`bench: ${method} /emulator/${route}: ${response.status} ${await response.text()}`);
}

/** A VM and its Node, as a new node joins. */
async function addNode(gce: EmulatorEndpoints, core: k8s.CoreV1Api, name: string, zone: string): Promise<void> {
  await emulatorAdmin(gce, "PUT", `instances/${CONFIG.project}/${zone}/${name}`, {});
  await createNode(core, name, zone);
}

/** Until `node` is in its zone's instance group. */
async function nodeInGroup(gce: EmulatorEndpoints, node: string, zone: string): Promise<void> {
  await eventually(
    `${node} in its instance group`,
    async () =>
      JSON.stringify(
        await emulatorCall(gce, "POST", `zones/${zone}/instanceGroups/k8s-ig--${CONFIG.clusterId}/listInstances`),
      ).includes(`/instances/${node}`)
        ? true
        : undefined,
    300_000,
    10,
  );
}

function newDaemon(
  env: TestEnv,
  gce: EmulatorEndpoints,
  runs: string[],
  pulumiCommand: PulumiCommand = env.pulumiCommand,
): Daemon {
  return new Daemon(
    daemonOptions(env, CONFIG, {
      pulumiCommand,
      pulumiEnv: { ...env.pulumiEnv, DCCM_GCE_EMULATOR_URL: gce.emulatorUrl },
      logLevel: "error",
      leaderElection: false,
      identity: "bench",
      resyncMs: 3_600_000,
      driftMs: 3_600_000,
      driftListing: { computeEndpoint: gce.computeEndpoint },
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
  loopDelayP99: number;
  loopDelayMax: number;
  gcPerChange: number;
  emulatorBusyPerChange: number;
}

/**
 * One call to the emulator's Compute API, as dccm's own client makes them: polling through
 * listResources() instead would copy and sort every resource every 10 ms in the daemon's own
 * process, a cost that grows with N and would be measured as the daemon's.
 */
export async function emulatorCall(
  gce: EmulatorEndpoints,
  method: "GET" | "POST",
  resource: string,
): Promise<Record<string, unknown>> {
  const response = await fetch(`${gce.computeEndpoint}projects/${CONFIG.project}/${resource}`, { method });
  if (!response.ok) return {};
  return (await response.json()) as Record<string, unknown>;
}

async function changeLatency(
  gce: EmulatorProcess,
  core: k8s.CoreV1Api,
  daemon: Daemon,
  firewall: string,
): Promise<ChangeLatency> {
  const samples: number[] = [];
  const toRunStart: number[] = [];
  const runToApplied: number[] = [];
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  let gcMs = 0;
  const gcObserver = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gcMs += entry.duration;
  });
  gcObserver.observe({ entryTypes: ["gc"] });
  loopDelay.enable();
  const emulatorBusyBefore = await emulatorBusyMs(gce);
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
      async () =>
        JSON.stringify((await emulatorCall(gce, "GET", `global/firewalls/${firewall}`)).sourceRanges) ===
        JSON.stringify([range])
          ? true
          : undefined,
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
  loopDelay.disable();
  gcObserver.disconnect();
  const emulatorBusy = (await emulatorBusyMs(gce)) - emulatorBusyBefore;
  return {
    total: median(samples),
    toRunStart: median(toRunStart),
    runStartToApplied: median(runToApplied),
    loopDelayP99: loopDelay.percentile(99) / 1e6,
    loopDelayMax: loopDelay.max / 1e6,
    gcPerChange: gcMs / CHANGE_SAMPLES,
    emulatorBusyPerChange: emulatorBusy / CHANGE_SAMPLES,
  };
}

async function benchAt(services: number, backend: E2eBackend): Promise<ScaleFigures> {
  const gce = await startEmulatorProcess();
  const env = await startTestEnv({ backend }).catch(async (error: unknown) => {
    await stopEmulatorProcess(gce);
    throw error;
  });
  const core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
  const runs: string[] = [];
  let daemon = newDaemon(env, gce, runs);
  try {
    await addNode(gce, core, "node-1", "us-central1-a");
    const uids = await createServices(core, services);
    const cold = process.hrtime.bigint();
    await daemon.start(() => undefined);
    await eventually("every Service's ingress", () => allIngress(core), 3_600_000, 500);
    await daemon.idle();
    const coldMs = elapsedMs(cold);
    const latency = await changeLatency(gce, core, daemon, `k8s-fw-${loadBalancerName(uids.get("svc-0") ?? "")}`);

    global.gc?.();
    const idleHeap = process.memoryUsage().heapUsed;
    const idleRss = process.memoryUsage().rss;
    runs.length = 0;
    const clean = await sampled(() => daemon.driftPass());
    const cleanRuns = runs.length;
    await emulatorAdmin(
      gce,
      "PATCH",
      `resources/firewalls/${CONFIG.project}/global/k8s-fw-${loadBalancerName(uids.get("svc-0") ?? "")}`,
      { sourceRanges: ["0.0.0.0/0"] },
    );
    runs.length = 0;
    const drifted = await sampled(async () => {
      await daemon.driftPass();
      await daemon.idle();
    });
    const driftedRuns = runs.length;

    await daemon.stop();
    runs.length = 0;
    const cli = await countingCli(env);
    daemon = newDaemon(env, gce, runs, cli.command);
    const restart = process.hrtime.bigint();
    await daemon.start(() => undefined);
    await daemon.idle();
    const restartMs = elapsedMs(restart);
    const restartRuns = runs.length;
    const restartCliCommands = cli.commands();
    global.gc?.();
    const restartIdle = process.memoryUsage();

    const node = process.hrtime.bigint();
    await addNode(gce, core, "node-2", "us-central1-a");
    await nodeInGroup(gce, "node-2", "us-central1-a");
    const nodeMs = elapsedMs(node);
    await daemon.idle();
    const nodeCliCommands = cli.commands() - restartCliCommands;

    runs.length = 0;
    const newZone = process.hrtime.bigint();
    await addNode(gce, core, "node-3", "us-central1-b");
    await nodeInGroup(gce, "node-3", "us-central1-b");
    const newZoneMs = elapsedMs(newZone);
    await daemon.idle();
    const runStacks = runs.map((run) => run.slice(run.indexOf(" ") + 1));
    return {
      services,
      coldStartMsPerService: round(coldMs / services, 0),
      changeLatencyMedianMs: round(latency.total, 0),
      changeToRunStartMedianMs: round(latency.toRunStart, 0),
      runStartToAppliedMedianMs: round(latency.runStartToApplied, 0),
      changeLoopDelayP99Ms: round(latency.loopDelayP99, 0),
      changeLoopDelayMaxMs: round(latency.loopDelayMax, 0),
      changeGcMsPerChange: round(latency.gcPerChange, 0),
      changeEmulatorBusyMsPerChange: round(latency.emulatorBusyPerChange, 0),
      driftPassMs: round(clean.ms, 0),
      driftPassRuns: cleanRuns,
      driftPassOneDriftedMs: round(drifted.ms, 0),
      driftPassOneDriftedRuns: driftedRuns,
      restartToConfirmedMs: round(restartMs, 0),
      restartRuns,
      restartCliCommands,
      nodeToGroupCliCommands: nodeCliCommands,
      nodeToGroupMs: round(nodeMs, 0),
      newZoneNodeToGroupMs: round(newZoneMs, 0),
      newZoneClusterRuns: runStacks.filter((stack) => stack === CLUSTER_STACK).length,
      newZoneServiceRuns: runStacks.filter(isServiceStack).length,
      idleHeapMb: mb(idleHeap),
      idleRssMb: mb(idleRss),
      passPeakRssMb: mb(Math.max(clean.peakRss, drifted.peakRss)),
      restartIdleHeapMb: mb(restartIdle.heapUsed),
      restartIdleRssMb: mb(restartIdle.rss),
    };
  } finally {
    await daemon.stop();
    await env.stop();
    await stopEmulatorProcess(gce);
  }
}

/** Figures per N, and the ratios docs/development/benchmarks.md quotes (to N = the smallest). */
export async function benchScale(
  sizes: readonly number[] = (process.env.DCCM_BENCH_SCALE ?? "1,100,500").split(",").map(Number),
): Promise<Record<string, number>> {
  const figures: Record<string, number> = {};
  let base: ScaleFigures | undefined;
  let last: ScaleFigures | undefined;
  const backends = (process.env.DCCM_BENCH_SCALE_BACKENDS ?? "file").split(",") as E2eBackend[];
  for (const services of sizes) {
    const at = await benchAt(services, "file");
    process.stderr.write(`scale ${services}: ${JSON.stringify(at)}\n`);
    base ??= at;
    last = at;
    for (const [key, value] of Object.entries(at) as [string, number][])
      if (key !== "services") figures[`scale${services}_${key}`] = value;
    figures[`scale${services}_changeLatencyRatio`] = round(at.changeLatencyMedianMs / base.changeLatencyMedianMs, 2);
    if (!backends.includes("gs")) continue;
    const gs = await benchAt(services, "gs");
    process.stderr.write(`scale ${services} gs://: ${JSON.stringify(gs)}\n`);
    for (const key of [
      "restartToConfirmedMs",
      "driftPassMs",
      "coldStartMsPerService",
      "changeLatencyMedianMs",
    ] as const)
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
