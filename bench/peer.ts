/**
 * dccm beside the real stock GCE CCM (Google's code, test/support/e2e/realStockCcm.ts), one after
 * the other, each on a fresh offline environment with the same two Nodes and the same N external
 * LoadBalancer Services (DCCM_BENCH_PEER_SIZES, default 1,20: N = 100 adds about 21 minutes on the
 * loaded 2-core machine, so it is asked for): the time from a Service's create
 * to its `status.loadBalancer.ingress` (median, p95), the Compute calls per Service (the
 * emulator's counter: REST calls, and the provider face's create/read/update/delete, each one call
 * although Google's provider also polls the operation), CPU-seconds per Service (the process, its
 * reaped children and its live descendants, /proc) and the peak RSS of the main process (VmHWM).
 * Then, with the N Services in place: a third Node added (its instance in the emulator, then the
 * Node object), the time until every load balancer sends to it (the stock CCM: the Service's target
 * pool holds it; dccm: an instance group of the Service's backend service does) and the Compute
 * calls until then; and one Service's forwarding rule deleted in the emulator behind the peer's back, the time
 * until it is back, waited for at most REPAIR_BOUND_MS (`repairMs: null` when it was not put back
 * by then: the stock CCM syncs a Service only when the Service or the Node set changes).
 * Both run as processes: dccm's `dccm daemon` (with `--drift-interval 30s` instead of its default
 * 10m, so that its drift pass puts the rule back within the bound), the stock CCM's binary.
 * `benchPeerRealistic` (`node dist/bench/peer.js realistic`) runs both again in GCE's realistic
 * profile, where a new project's quotas apply: how many Services each serves, how fast, and how
 * many static addresses it holds.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";

import { REALISTIC_SCALE, startTestEnv, type TestEnv } from "../test/support/e2e/env";
import { DaemonProcesses, descendants } from "../test/support/e2e/daemon-process";
import { startStockCcm } from "../test/support/e2e/realStockCcm";
import { eventually } from "../test/support/wait";
import { realisticLimits } from "../emulator/gce";
import { loadBalancerName } from "../model";
import { median, round, runAlone } from "./stats";

const CLUSTER = {
  project: "dccm-test",
  region: "us-central1",
  network: "k8s-net",
  subnetwork: "k8s-subnet",
  nodeTags: ["k8s-node"],
  clusterName: "peer",
  clusterId: "9ee70000",
};
/** Linux's USER_HZ: /proc/<pid>/stat counts CPU time in these ticks. */
const TICKS_PER_SECOND = 100;
/** dccm's drift interval in the bench (its default is 10m): a drift pass starts within 33 s (±10 %). */
const DCCM_DRIFT_INTERVAL = "30s";
/** How long a deleted forwarding rule is waited for: dccm's drift interval + 10 %, then 60 s for the pass and its `up`. */
const REPAIR_BOUND_MS = 33_000 + 60_000;
const NODES = [
  { name: "node-a1", zone: "us-central1-a", podCIDR: "10.64.1.0/24" },
  { name: "node-b1", zone: "us-central1-b", podCIDR: "10.64.2.0/24" },
] as const;
/** The Node added once the Services are served. */
const ADDED_NODE = { name: "node-a2", zone: "us-central1-a", podCIDR: "10.64.3.0/24" } as const;

type Peer = "dccm" | "stock";

interface PeerFigures {
  ingressMedianMs: number;
  ingressP95Ms: number;
  computeCallsPerService: number;
  cpuSecondsPerService: number;
  peakRssMb: number;
  /** Node added → every Service's target pool holds it. */
  nodeAddMs: number;
  /** Compute calls from the Node's add until then. */
  nodeAddComputeCalls: number;
  /** A forwarding rule deleted behind the peer's back → back; null: not back within repairBoundMs. */
  repairMs: number | null;
  repairBoundMs: number;
  /** Compute calls from the delete until it was back (or until the bound). */
  repairComputeCalls: number;
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

/** utime + stime (+ cutime + cstime: reaped children) of one process, in seconds; 0 when it is gone. */
function cpuSeconds(pid: number, withChildren: boolean): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command (which may hold spaces) start at the state, field 3.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = (index: number): number => Number(fields[index - 3] ?? 0);
    return (ticks(14) + ticks(15) + (withChildren ? ticks(16) + ticks(17) : 0)) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** The CPU a process tree used so far: the root with its reaped children, and each live descendant. */
function treeCpuSeconds(pid: number): number {
  return cpuSeconds(pid, true) + descendants(pid).reduce((sum, info) => sum + cpuSeconds(info.pid, true), 0);
}

function peakRssMb(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = /^VmHWM:\s+(\d+) kB/m.exec(status)?.[1];
  return kb === undefined ? 0 : Number(kb) / 1024;
}

async function addNodes(
  env: TestEnv,
  core: k8s.CoreV1Api,
  nodes: ReadonlyArray<{ readonly name: string; readonly zone: string; readonly podCIDR: string }>,
): Promise<void> {
  for (const { name, zone, podCIDR } of nodes) {
    env.gce.putInstance(name, { zone, tags: ["k8s-node"] });
    const created = await core.createNode({
      body: {
        metadata: { name, labels: { "topology.kubernetes.io/zone": zone } },
        spec: { providerID: `gce://dccm-test/${zone}/${name}`, podCIDR, podCIDRs: [podCIDR] },
      },
    });
    const now = new Date();
    await core.replaceNodeStatus({
      name,
      body: {
        ...created,
        status: {
          conditions: [
            { type: "Ready", status: "True", reason: "KubeletReady", lastHeartbeatTime: now, lastTransitionTime: now },
          ],
        },
      },
    });
  }
}

/** Starts the peer; resolves with its pid and a stop function once it is ready to serve Services. */
async function startPeer(
  peer: Peer,
  env: TestEnv,
  core: k8s.CoreV1Api,
): Promise<{ pid: number; stop: () => Promise<unknown> }> {
  if (peer === "stock") {
    const ccm = await startStockCcm(env, core, CLUSTER);
    return { pid: ccm.pid, stop: () => ccm.stop() };
  }
  const configPath = path.join(env.dir, "dccm.json");
  fs.writeFileSync(configPath, JSON.stringify(CLUSTER));
  // Given after DaemonProcesses' own `--drift-interval 1h`: the last one counts (util.parseArgs).
  const daemons = new DaemonProcesses(env, configPath, ["--drift-interval", DCCM_DRIFT_INTERVAL]);
  const running = daemons.start({ logLevel: "info" });
  await daemons.waitReady(running);
  await daemons.waitClusterApplied(running, 600_000);
  return { pid: running.pid, stop: () => daemons.stop(running) };
}

/** The emulator's Compute calls so far: REST calls, and the provider face's create/read/update/delete. */
function computeCalls(env: TestEnv): number {
  return Object.entries(env.gce.calls())
    .filter(([key]) => !key.startsWith("POST /emulator/provider/") || /\/(create|read|update|delete)$/.test(key))
    .reduce((sum, [, n]) => sum + n, 0);
}

function holds(list: unknown, suffix: string): boolean {
  return Array.isArray(list) && list.some((link) => typeof link === "string" && link.endsWith(suffix));
}

/**
 * How many of the load balancers (named after their Service's UID by both peers, loadBalancerName)
 * send traffic to the instance: the stock CCM's target pool holds it, or one of dccm's backend
 * services (`<name>`, `<name>-<protocol>`) has a backend instance group that holds it.
 */
function lbsHolding(env: TestEnv, lbNames: readonly string[], instance: string): number {
  const resources = env.gce.listResources();
  const groups = new Map(
    resources
      .filter((r) => r.kind === "instanceGroups")
      .map((r) => [`/zones/${r.scope}/instanceGroups/${r.name}`, r.properties.instances]),
  );
  const groupHolds = (link: unknown): boolean =>
    typeof link === "string" &&
    [...groups].some(([suffix, instances]) => link.endsWith(suffix) && holds(instances, instance));
  return lbNames.filter((name) => {
    const pool = resources.find((r) => r.kind === "targetPools" && r.name === name);
    if (pool !== undefined) return holds(pool.properties.instances, instance);
    const backendServices = resources.filter(
      (r) => r.kind === "backendServices" && (r.name === name || r.name.startsWith(`${name}-`)),
    );
    return backendServices.some(
      (bs) =>
        Array.isArray(bs.properties.backends) &&
        bs.properties.backends.some((backend) => isGroupBackend(backend) && groupHolds(backend.group)),
    );
  }).length;
}

function isGroupBackend(backend: unknown): backend is { group: unknown } {
  return typeof backend === "object" && backend !== null && "group" in backend;
}

/** Polls `done` every 50 ms; resolves with the ms it took, or null when `boundMs` passed first. */
async function timeUntil(done: () => boolean, boundMs: number): Promise<number | null> {
  const start = Date.now();
  for (;;) {
    if (done()) return Date.now() - start;
    if (Date.now() - start > boundMs) return null;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Creates `peer-0` … `peer-<count-1>` at once; resolves with each one's create time. */
async function createServices(core: k8s.CoreV1Api, count: number): Promise<Map<string, number>> {
  const createdAt = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    const name = `peer-${i}`;
    createdAt.set(name, Date.now());
    await core.createNamespacedService({
      namespace: "default",
      body: {
        metadata: { name },
        spec: { type: "LoadBalancer", selector: { app: name }, ports: [{ port: 80, protocol: "TCP" }] },
      },
    });
  }
  return createdAt;
}

/** When each created Service first showed `status.loadBalancer.ingress`, and its load balancer's name. */
class IngressWatch {
  readonly servedAt = new Map<string, number>();
  readonly lbNames = new Map<string, string>();

  constructor(private readonly createdAt: ReadonlyMap<string, number>) {}

  /** Lists the Services once; resolves with how many are served so far. */
  async poll(core: k8s.CoreV1Api): Promise<number> {
    for (const service of (await core.listNamespacedService({ namespace: "default" })).items) {
      const name = service.metadata?.name ?? "";
      if (
        this.createdAt.has(name) &&
        !this.servedAt.has(name) &&
        (service.status?.loadBalancer?.ingress?.length ?? 0) > 0
      ) {
        this.servedAt.set(name, Date.now());
        this.lbNames.set(name, loadBalancerName(service.metadata?.uid ?? ""));
      }
    }
    return this.servedAt.size;
  }

  /** Create → ingress of each served Service, ms. */
  latencies(): number[] {
    return [...this.servedAt].map(([name, at]) => at - (this.createdAt.get(name) ?? at));
  }
}

async function measure(peer: Peer, count: number): Promise<PeerFigures> {
  const env = await startTestEnv();
  const core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
  let stop: (() => Promise<unknown>) | undefined;
  try {
    await addNodes(env, core, NODES);
    const started = await startPeer(peer, env, core);
    stop = started.stop;
    env.gce.resetCalls();
    const cpuBefore = treeCpuSeconds(started.pid);
    const ingress = new IngressWatch(await createServices(core, count));
    await eventually(
      () => `${count - ingress.servedAt.size} of ${count} Services without ingress (${peer})`,
      async () => ((await ingress.poll(core)) === count ? true : undefined),
      3_600_000,
      50,
    );
    const latencies = ingress.latencies();
    const lbNames = ingress.lbNames;
    const calls = computeCalls(env);
    const cpuSecondsPerService = round((treeCpuSeconds(started.pid) - cpuBefore) / count, 2);

    const addedInstance = `/zones/${ADDED_NODE.zone}/instances/${ADDED_NODE.name}`;
    const lbsWithAddedNode = (): number => lbsHolding(env, [...lbNames.values()], addedInstance);
    env.gce.resetCalls();
    const nodeAddStart = Date.now();
    await addNodes(env, core, [ADDED_NODE]);
    await eventually(
      () => `${count - lbsWithAddedNode()} of ${count} load balancers without ${ADDED_NODE.name} (${peer})`,
      () => (lbsWithAddedNode() === count ? true : undefined),
      3_600_000,
      50,
    );
    const nodeAddMs = Date.now() - nodeAddStart;
    const nodeAddComputeCalls = computeCalls(env);

    const lb0 = lbNames.get("peer-0") ?? "";
    const deleted = env.gce
      .listResources()
      .find((r) => r.kind === "forwardingRules" && (r.name === lb0 || r.name.startsWith(`${lb0}-`)))?.name;
    if (deleted === undefined) throw new Error(`no forwarding rule ${lb0} of Service default/peer-0 (${peer})`);
    const ruleExists = (): boolean =>
      env.gce.listResources().some((r) => r.kind === "forwardingRules" && r.name === deleted);
    env.gce.resetCalls();
    env.gce.deleteOutOfBand("forwardingRules", deleted, { scope: CLUSTER.region });
    const repairMs = await timeUntil(ruleExists, REPAIR_BOUND_MS);
    const repairComputeCalls = computeCalls(env);
    return {
      ingressMedianMs: round(median(latencies), 0),
      ingressP95Ms: round(percentile(latencies, 95), 0),
      computeCallsPerService: round(calls / count, 1),
      cpuSecondsPerService,
      peakRssMb: round(peakRssMb(started.pid), 0),
      nodeAddMs,
      nodeAddComputeCalls,
      repairMs,
      repairBoundMs: REPAIR_BOUND_MS,
      repairComputeCalls,
    };
  } finally {
    await stop?.();
    await env.stop();
  }
}

/**
 * The stock CCM, then dccm, measured with `count` Services; each figure and the measure's wall time
 * (environment start and stop included) stored under `keyOf(peer, figure)`.
 */
async function measureEachPeer<F extends { [K in keyof F]: number | null }>(
  label: string,
  count: number,
  measureOne: (peer: Peer, count: number) => Promise<F>,
  keyOf: (peer: Peer, figure: string) => string,
  figures: Record<string, number | null>,
): Promise<void> {
  for (const peer of ["stock", "dccm"] as const) {
    const startedAt = Date.now();
    const measured = { ...(await measureOne(peer, count)), wallSeconds: round((Date.now() - startedAt) / 1000, 0) };
    process.stderr.write(`${label} ${peer} N=${count}: ${JSON.stringify(measured)}\n`);
    for (const [key, value] of Object.entries(measured)) figures[keyOf(peer, key)] = value;
  }
}

/**
 * `peer_<peer>_n<N>_<figure>` for each size, `peer_ratio_n<N>_<figure>` (dccm / stock) and
 * `peer_<peer>_n<N>_wallSeconds` (the whole measure, environment start and stop included). A
 * `repairMs` of null is a rule not put back within `repairBoundMs`.
 */
export async function benchPeer(): Promise<Record<string, number | null>> {
  const sizes = (process.env.DCCM_BENCH_PEER_SIZES ?? "1,20").split(",").map(Number);
  const figures: Record<string, number | null> = {};
  for (const count of sizes) {
    await measureEachPeer(`peer`, count, measure, (peer, key) => `peer_${peer}_n${count}_${key}`, figures);
    for (const key of [
      "ingressMedianMs",
      "computeCallsPerService",
      "cpuSecondsPerService",
      "peakRssMb",
      "nodeAddMs",
      "nodeAddComputeCalls",
    ] as const) {
      const stock = figures[`peer_stock_n${count}_${key}`] ?? 0;
      figures[`peer_ratio_n${count}_${key}`] =
        stock === 0 ? 0 : round((figures[`peer_dccm_n${count}_${key}`] ?? 0) / stock, 2);
    }
  }
  return figures;
}

/**
 * How long from the first create a Service may take to be served in the realistic profile: a
 * Service that met a quota waits 5 minutes for dccm's next try (QUOTA_RETRY_MS; the stock CCM's
 * retries back off towards 5 minutes too), so it counts as not served rather than served late.
 */
export const REALISTIC_INGRESS_BOUND_MS = 240_000;

interface RealisticFigures {
  /** Services with `status.loadBalancer.ingress` within REALISTIC_INGRESS_BOUND_MS of the first create. */
  servedServices: number;
  /** Over the served Services; null when none was served. */
  ingressMedianMs: number | null;
  ingressP95Ms: number | null;
  /** External regional static addresses the emulator holds once every Service is served, or at the bound. */
  staticAddresses: number;
  /** The most held at once from the first create until then (the emulator's history). */
  staticAddressesPeak: number;
  /** How often the emulator refused a create with `Quota 'STATIC_ADDRESSES' exceeded`. */
  staticAddressQuotaRefusals: number;
  computeCallsPerService: number;
  ingressBoundMs: number;
}

/** The most `addresses` held at once over the history since it was cleared, from `atStart` held then. */
function peakAddresses(env: TestEnv, atStart: number): number {
  let held = atStart;
  let peak = atStart;
  for (const entry of env.gce.history()) {
    if (entry.kind !== "addresses") continue;
    if (entry.op === "create") held += 1;
    else if (entry.op === "delete") held -= 1;
    peak = Math.max(peak, held);
  }
  return peak;
}

function staticAddressesHeld(env: TestEnv): number {
  return env.gce
    .listResources()
    .filter(
      (r) =>
        r.kind === "addresses" && r.scope === CLUSTER.region && (r.properties.addressType ?? "EXTERNAL") === "EXTERNAL",
    ).length;
}

/**
 * One peer in GCE's realistic profile (realisticLimits: a new project's quotas, STATIC_ADDRESSES 8
 * per region among them, and operation latencies scaled by REALISTIC_SCALE): N external TCP Services
 * created at once, waited for at most REALISTIC_INGRESS_BOUND_MS.
 */
async function measureRealistic(peer: Peer, count: number): Promise<RealisticFigures> {
  const env = await startTestEnv({ gce: { limits: realisticLimits(REALISTIC_SCALE) } });
  const core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
  let stop: (() => Promise<unknown>) | undefined;
  try {
    await addNodes(env, core, NODES);
    const started = await startPeer(peer, env, core);
    stop = started.stop;
    const addressesAtStart = staticAddressesHeld(env);
    const refusalsAtStart = env.gce.limits.counts().quotaExceeded.STATIC_ADDRESSES ?? 0;
    env.gce.resetCalls();
    env.gce.clearHistory();
    const deadline = Date.now() + REALISTIC_INGRESS_BOUND_MS;
    const ingress = new IngressWatch(await createServices(core, count));
    while ((await ingress.poll(core)) < count && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const latencies = ingress.latencies();
    return {
      servedServices: ingress.servedAt.size,
      ingressMedianMs: latencies.length === 0 ? null : round(median(latencies), 0),
      ingressP95Ms: latencies.length === 0 ? null : round(percentile(latencies, 95), 0),
      staticAddresses: staticAddressesHeld(env),
      staticAddressesPeak: peakAddresses(env, addressesAtStart),
      staticAddressQuotaRefusals: (env.gce.limits.counts().quotaExceeded.STATIC_ADDRESSES ?? 0) - refusalsAtStart,
      computeCallsPerService: round(computeCalls(env) / count, 1),
      ingressBoundMs: REALISTIC_INGRESS_BOUND_MS,
    };
  } finally {
    await stop?.();
    await env.stop();
  }
}

/**
 * `peerRealistic<N>_<peer>_<figure>` for each size (DCCM_BENCH_PEER_REALISTIC_SIZES, default 1,20),
 * and `peerRealistic<N>_<figure>Ratio` (dccm / stock) of the Services served, the ingress median
 * and p95 and the Compute calls per Service. An ingress figure of null: no Service served.
 */
export async function benchPeerRealistic(): Promise<Record<string, number | null>> {
  const sizes = (process.env.DCCM_BENCH_PEER_REALISTIC_SIZES ?? "1,20").split(",").map(Number);
  const figures: Record<string, number | null> = {};
  for (const count of sizes) {
    await measureEachPeer(
      `peer realistic`,
      count,
      measureRealistic,
      (peer, key) => `peerRealistic${count}_${peer}_${key}`,
      figures,
    );
    for (const key of ["servedServices", "ingressMedianMs", "ingressP95Ms", "computeCallsPerService"] as const) {
      const dccm = figures[`peerRealistic${count}_dccm_${key}`];
      const stock = figures[`peerRealistic${count}_stock_${key}`];
      figures[`peerRealistic${count}_${key.replace(/Ms$/, "")}Ratio`] =
        dccm === null || dccm === undefined || stock === null || stock === undefined || stock === 0
          ? null
          : round(dccm / stock, 2);
    }
  }
  return figures;
}

if (require.main === module) runAlone(process.argv[2] === "realistic" ? benchPeerRealistic : benchPeer);
