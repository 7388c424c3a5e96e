// GCE's timing and limits, for the emulator: long-running operations (PENDING → RUNNING → DONE
// over a latency per kind), per-project resource quotas (403 quotaExceeded) and the Compute API's
// per-minute rate quotas (403 rateLimitExceeded). All off unless `GceLimitsOptions` turns them on:
// unit tests see operations DONE at once and no limit; `REALISTIC_LIMITS` is GCE's defaults.
// The HTTP face (http.ts) asks `admit` before it handles a request, `operationStarted` /
// `operationView` for the Operations it answers, and `settle` before it replies; the state
// (state.ts) asks `checkQuota` through its create guard.

import type { JsonObject } from "./json";
import type { GceKind } from "./kinds";
import { GceError } from "./errors";
import type { ResourceKey, StoredResource } from "./store";

/**
 * The project quotas the emulator counts (Compute API reference, "Quota" resource: the metric
 * enum names STATIC_ADDRESSES, INTERNAL_ADDRESSES, FORWARDING_RULES, FIREWALLS, ROUTES,
 * TARGET_POOLS, BACKEND_SERVICES, HEALTH_CHECKS; regions.get / projects.get list each with its
 * limit and usage). Regional ones count per region, the others per project ("globally").
 */
export type QuotaName =
  | "STATIC_ADDRESSES"
  | "INTERNAL_ADDRESSES"
  | "FORWARDING_RULES"
  | "TARGET_POOLS"
  | "BACKEND_SERVICES"
  | "HEALTH_CHECKS"
  | "FIREWALLS"
  | "ROUTES";

interface QuotaSpec {
  readonly name: QuotaName;
  readonly regional: boolean;
  /** Whether a stored resource (or the one being created) counts against the quota. */
  readonly counts: (kind: GceKind, properties: JsonObject) => boolean;
}

const external = (p: JsonObject): boolean => (p.addressType ?? "EXTERNAL") === "EXTERNAL";

/**
 * What each quota counts, and where. Static external regional addresses (STATIC_ADDRESSES) and
 * static internal ones (INTERNAL_ADDRESSES) per region: cloud.google.com/compute/resource-usage,
 * "External IP addresses" / "Internal IP addresses"; `gcloud compute regions describe` (regions.get)
 * lists them among a region's quotas. The others are project quotas: `gcloud compute project-info
 * describe` (projects.get) lists FIREWALLS, ROUTES, FORWARDING_RULES, TARGET_POOLS, HEALTH_CHECKS
 * and BACKEND_SERVICES, and cloud.google.com/vpc/docs/quota's "Per project" table names firewall
 * rules, routes and forwarding rules ("This quota includes both internal and external forwarding
 * rules") as quotas of the project ("globally" in GCE's refusal).
 *
 * IN_USE_ADDRESSES (regions.get lists it too) is not counted: resource-usage describes it as the
 * external IPs in use by VM instances, and no page we could cite says an ephemeral IP on a
 * forwarding rule counts against it, so modelling it for load balancers would charge both peers of
 * a comparison for something GCE may not charge.
 */
const QUOTAS: readonly QuotaSpec[] = [
  { name: "STATIC_ADDRESSES", regional: true, counts: (k, p) => k === "addresses" && external(p) },
  { name: "INTERNAL_ADDRESSES", regional: true, counts: (k, p) => k === "addresses" && !external(p) },
  { name: "FORWARDING_RULES", regional: false, counts: (k) => k === "forwardingRules" },
  { name: "TARGET_POOLS", regional: false, counts: (k) => k === "targetPools" },
  { name: "BACKEND_SERVICES", regional: false, counts: (k) => k === "backendServices" },
  {
    name: "HEALTH_CHECKS",
    regional: false,
    counts: (k) => k === "healthChecks" || k === "globalHealthChecks" || k === "httpHealthChecks",
  },
  { name: "FIREWALLS", regional: false, counts: (k) => k === "firewalls" },
  { name: "ROUTES", regional: false, counts: (k) => k === "routes" },
];

/**
 * The rate quota groups of the Compute API that dccm's calls fall in
 * (cloud.google.com/compute/api-quota, "Rate quotas for global metrics": Queries, the mutation
 * methods, compute.googleapis.com/default; Read requests, *.get; List requests, *.list;
 * Operation read requests, *Operations.get; each "Per project: 1,500 requests/min").
 */
export type RateGroup = "Queries" | "Read requests" | "List requests" | "Operation read requests";

export const RATE_GROUPS: readonly RateGroup[] = [
  "Queries",
  "Read requests",
  "List requests",
  "Operation read requests",
];

/** The kinds of operation whose latency may be set: a create, update or delete of a kind. */
export type OperationLatency = Partial<Record<GceKind, number>>;

export interface GceLimitsOptions {
  /**
   * How long an operation on a kind stays unfinished, in ms (PENDING for its first tenth, then
   * RUNNING, then DONE). Absent or 0: DONE at once.
   */
  readonly operationLatencyMs?: OperationLatency;
  /** Project quotas; an absent quota is not counted. GCE lets a project lower its quotas (a quota override). */
  readonly quotas?: Partial<Record<QuotaName, number>>;
  /** Requests per rate quota group per interval; an absent group is not limited. */
  readonly ratePerInterval?: Partial<Record<RateGroup, number>>;
  /**
   * The rate quota interval, ms; default GCE's 60,000. Shorter only to prove at test speed what a
   * refill does (a test's burst waits seconds, not minutes).
   */
  readonly rateIntervalMs?: number;
  /** The clock, ms; default Date.now. */
  readonly now?: () => number;
  /** Waits `ms`; default a timer. */
  readonly sleep?: (ms: number) => Promise<void>;
}

/**
 * GCE's defaults: the quotas of a new project (regions.get lists STATIC_ADDRESSES limit 8.0 and
 * INTERNAL_ADDRESSES 200.0 per region, cloud.google.com/compute/resource-usage; ROUTES 250 per
 * project, the default of a new project), the rate quotas (cloud.google.com/compute/api-quota:
 * 1,500 requests per minute per group) and operation latencies as real GCE's, scaled by
 * `scale` (1: GCE's seconds; a forwarding rule takes 10–30 s there, here 15 s × scale).
 */
export function realisticLimits(scale: number): GceLimitsOptions {
  const s = (ms: number): number => Math.round(ms * scale);
  return {
    operationLatencyMs: {
      addresses: s(5_000),
      forwardingRules: s(15_000),
      backendServices: s(10_000),
      targetPools: s(8_000),
      healthChecks: s(8_000),
      globalHealthChecks: s(8_000),
      httpHealthChecks: s(8_000),
      instanceGroups: s(8_000),
      firewalls: s(10_000),
      routes: s(10_000),
    },
    quotas: { STATIC_ADDRESSES: 8, INTERNAL_ADDRESSES: 200, ROUTES: 250 },
    ratePerInterval: {
      Queries: 1_500,
      "Read requests": 1_500,
      "List requests": 1_500,
      "Operation read requests": 1_500,
    },
  };
}

/** How many refusals of each kind the limits gave (for tests: proof that a limit was met). */
export interface LimitCounts {
  readonly rateLimited: Partial<Record<RateGroup, number>>;
  readonly quotaExceeded: Partial<Record<QuotaName, number>>;
}

/**
 * The limit regions.get / projects.get answer for a quota the emulator does not enforce: the
 * emulator's own choice (GCE answers each quota's limit in force), large enough that no test or
 * benchmark reaches it.
 */
export const UNENFORCED_QUOTA_LIMIT = 1_000_000;

/** The project number GCE names a consumer by; the emulator's is fixed. */
export const PROJECT_NUMBER = "123456789012";

/** What `operationStarted` records of an operation: when it started and finishes. */
interface Timing {
  readonly startMs: number;
  readonly doneMs: number;
}

export class GceLimits {
  private readonly latency: OperationLatency;
  private readonly quotas: Partial<Record<QuotaName, number>>;
  private readonly rates: Partial<Record<RateGroup, number>>;
  private readonly intervalMs: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  /** Requests per `${project} ${group}` in the current interval. */
  private used = new Map<string, number>();
  private interval = -1;
  private readonly timings = new Map<string, Timing>();
  private rateLimited: Partial<Record<RateGroup, number>> = {};
  private quotaExceeded: Partial<Record<QuotaName, number>> = {};

  constructor(opts: GceLimitsOptions = {}) {
    this.latency = { ...opts.operationLatencyMs };
    this.quotas = { ...opts.quotas };
    this.rates = { ...opts.ratePerInterval };
    this.intervalMs = opts.rateIntervalMs ?? 60_000;
    if (!(this.intervalMs > 0)) {
      throw new Error(`GceLimits: rateIntervalMs must be positive, got ${this.intervalMs}`);
    }
    this.now = opts.now ?? Date.now;
    this.sleep = opts.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /** ms an operation on this kind takes. */
  latencyOf(kind: GceKind): number {
    return Math.max(0, this.latency[kind] ?? 0);
  }

  counts(): LimitCounts {
    return { rateLimited: { ...this.rateLimited }, quotaExceeded: { ...this.quotaExceeded } };
  }

  reset(): void {
    this.used.clear();
    this.interval = -1;
    this.timings.clear();
    this.rateLimited = {};
    this.quotaExceeded = {};
  }

  /**
   * Counts a request against its rate quota group, or refuses it as GCE does: "If your project
   * exceeds a rate quota, you receive a 403 error with the reason rateLimitExceeded", with the
   * message terraform-provider-google matches to retry it (transport/error_retry_predicates.go
   * is403QuotaExceededPerMinuteError: "Quota exceeded for quota metric '…' and limit '… per
   * minute' of service"). The quota "refills at the start of the next synchronized interval"
   * (cloud.google.com/compute/api-quota): counts reset when the clock enters the next interval.
   */
  admit(project: string, group: RateGroup | undefined): void {
    if (group === undefined) {
      return;
    }
    const limit = this.rates[group];
    if (limit === undefined) {
      return;
    }
    const interval = Math.floor(this.now() / this.intervalMs);
    if (interval !== this.interval) {
      this.interval = interval;
      this.used.clear();
    }
    const key = `${project} ${group}`;
    const used = this.used.get(key) ?? 0;
    if (used >= limit) {
      this.rateLimited[group] = (this.rateLimited[group] ?? 0) + 1;
      throw new GceError(
        403,
        `Quota exceeded for quota metric '${group}' and limit '${group} per minute' of service 'compute.googleapis.com' for consumer 'project_number:${PROJECT_NUMBER}'.`,
        "rateLimitExceeded",
      );
    }
    this.used.set(key, used + 1);
  }

  /**
   * Refuses a create that would take a quota over its limit, with GCE's 403 quotaExceeded and its
   * message as terraform-provider-google reports it ("Error creating address: googleapi: Error 403:
   * Quota 'STATIC_ADDRESSES' exceeded. Limit: 1.0 in region europe-west1., quotaExceeded"; gcloud:
   * "Quota 'STATIC_ADDRESSES' exceeded. Limit: 1.0 globally." for a project-wide one). `existing` is what the project holds already.
   */
  checkQuota(key: ResourceKey, properties: JsonObject, existing: readonly StoredResource[]): void {
    for (const q of QUOTAS) {
      const limit = this.quotas[q.name];
      if (limit === undefined || !q.counts(key.kind, properties)) {
        continue;
      }
      const usage = existing.filter(
        (r) => r.project === key.project && (!q.regional || r.scope === key.scope) && q.counts(r.kind, r.properties),
      ).length;
      if (usage + 1 > limit) {
        this.quotaExceeded[q.name] = (this.quotaExceeded[q.name] ?? 0) + 1;
        const where = q.regional ? `in region ${key.scope}` : "globally";
        throw new GceError(403, `Quota '${q.name}' exceeded. Limit: ${limit.toFixed(1)} ${where}.`, "quotaExceeded");
      }
    }
  }

  /**
   * The `quotas` of regions.get (`regional`) or projects.get: one `{ metric, limit, usage }` per
   * quota counted here (Compute API reference, Region and Project resources: "quotas[]: [Output
   * Only] Quotas assigned to this region / project", each a Quota with metric, limit and usage),
   * usage as `checkQuota` counts it. A quota the options leave unlimited is not enforced, so it is
   * answered with UNENFORCED_QUOTA_LIMIT rather than GCE's default: a caller that trusts the
   * answer (dccm holds a Service over it) must see the limit that is in force.
   */
  quotaReport(project: string, region: string | undefined, existing: readonly StoredResource[]): JsonObject[] {
    return QUOTAS.filter((q) => q.regional === (region !== undefined)).map((q) => ({
      metric: q.name,
      limit: this.quotas[q.name] ?? UNENFORCED_QUOTA_LIMIT,
      usage: existing.filter(
        (r) => r.project === project && (region === undefined || r.scope === region) && q.counts(r.kind, r.properties),
      ).length,
    }));
  }

  /**
   * Records a new operation (by its selfLink) and sets its status as GCE first answers it: DONE
   * when the kind has no latency, else PENDING with progress 0 and no endTime.
   */
  operationStarted(op: JsonObject, kind: GceKind): JsonObject {
    const latency = this.latencyOf(kind);
    const startMs = this.now();
    if (typeof op.selfLink === "string") {
      this.timings.set(op.selfLink, { startMs, doneMs: startMs + latency });
    }
    return this.operationView(op);
  }

  /**
   * The operation as GCE shows it now (Operation resource, status: "PENDING, RUNNING, or DONE";
   * progress "0 to 100"; endTime only when done): PENDING for the first tenth of the latency,
   * then RUNNING, then DONE.
   */
  operationView(op: JsonObject): JsonObject {
    const timing = typeof op.selfLink === "string" ? this.timings.get(op.selfLink) : undefined;
    if (timing === undefined) {
      return op;
    }
    const now = this.now();
    const total = timing.doneMs - timing.startMs;
    if (now >= timing.doneMs) {
      return { ...op, status: "DONE", progress: 100, endTime: new Date(timing.doneMs).toISOString() };
    }
    const { endTime: _endTime, ...open } = op;
    const elapsed = now - timing.startMs;
    return elapsed < total / 10
      ? { ...open, status: "PENDING", progress: 0 }
      : { ...open, status: "RUNNING", progress: Math.floor((elapsed / total) * 100) };
  }

  /**
   * operations.wait: "Waits for the specified Operation resource to return as DONE or for the
   * request to approach the 2 minute deadline, and retrieves the specified Operation resource"
   * (regionOperations.wait reference). Resolves when the operation is done or 2 minutes passed.
   */
  async waitFor(selfLink: string): Promise<void> {
    const timing = this.timings.get(selfLink);
    if (timing === undefined) {
      return;
    }
    // A timer may wake a millisecond before Date.now reaches its end (Node's timers run on the
    // monotonic clock), so wait again until the clock the view reads says done.
    const deadline = Math.min(timing.doneMs, this.now() + 120_000);
    for (let left = deadline - this.now(); left > 0; left = deadline - this.now()) {
      await this.sleep(left);
    }
  }

  /**
   * The provider waits for every insert, update and delete to finish before it answers the engine
   * (terraform-provider-google compute_operation.go ComputeOperationWaitTime, after each
   * Insert/Patch/Delete call): the provider face holds its answer for the kind's latency.
   */
  async providerWait(kind: GceKind): Promise<void> {
    const latency = this.latencyOf(kind);
    if (latency > 0) {
      await this.sleep(latency);
    }
  }
}

/** The rate quota group of a Compute REST call (`GET` of one resource, a list, an operation, or a mutation). */
export function restRateGroup(method: string, pattern: string): RateGroup | undefined {
  if (!pattern.startsWith("/compute/v1/")) {
    return undefined;
  }
  if (/\/operations\/\{operation\}(\/wait)?$/.test(pattern)) {
    return "Operation read requests";
  }
  if (method === "GET") {
    return /\{name\}$|\/regions\/\{region\}$|\/zones\/\{zone\}$|^\/compute\/v1\/projects\/\{project\}$/.test(pattern)
      ? "Read requests"
      : "List requests";
  }
  if (method === "POST" && pattern.endsWith("/listInstances")) {
    return "List requests";
  }
  return "Queries";
}

/** The rate quota group of a provider operation: the Compute call the provider makes for it (check and diff make none). */
export function providerRateGroup(op: string): RateGroup | undefined {
  switch (op) {
    case "create":
    case "update":
    case "delete":
      return "Queries";
    case "read":
      return "Read requests";
    default:
      return undefined;
  }
}
