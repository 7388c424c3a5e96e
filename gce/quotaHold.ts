/**
 * Quota headroom before a Service stack's first up, pure: what the up creates, counted per GCE
 * quota (quotaNeeds), whether the quotas as last read leave room for it (quotaShortfalls), the
 * Warning that holds it (quotaHeldMessage) and the headroom the gauge, `dccm status` and
 * `dccm preview` show (quotaHeadroom). The daemon's adapter that reads, caches and holds is
 * controllers/service/quotaGate.ts.
 */
import type { ServiceDesired } from "../model";
import type { ProjectQuotas, QuotaReading } from "./quotas";

/**
 * How long a Service held for quota (or refused by GCE over one) waits before its next try, unless
 * sooner released or changed: the stack queue's backoff cap (controllers/failures.ts QUOTA_RETRY_MS).
 */
export const QUOTA_WAIT_MS = 300_000;

/** The quotas a Service's load balancer consumes (GCE's metric names). */
export type QuotaMetric =
  | "STATIC_ADDRESSES"
  | "INTERNAL_ADDRESSES"
  | "FORWARDING_RULES"
  | "BACKEND_SERVICES"
  | "TARGET_POOLS"
  | "HEALTH_CHECKS"
  | "FIREWALLS"
  | "ROUTES";

/** Where GCE counts a quota: per region (regions.get) or for the whole project (projects.get, "globally"). */
export type QuotaScope = "region" | "global";

/**
 * Which list reports each quota: a region's addresses (regions.get), the project's load-balancing
 * resources, firewalls and routes (projects.get). As the emulator counts them (emulator/gce/limits.ts).
 */
export const QUOTA_SCOPES: Readonly<Record<QuotaMetric, QuotaScope>> = {
  STATIC_ADDRESSES: "region",
  INTERNAL_ADDRESSES: "region",
  FORWARDING_RULES: "global",
  BACKEND_SERVICES: "global",
  TARGET_POOLS: "global",
  HEALTH_CHECKS: "global",
  FIREWALLS: "global",
  ROUTES: "global",
};

export const QUOTA_METRICS = Object.keys(QUOTA_SCOPES) as QuotaMetric[];

/** How many units of one quota a first up creates. */
export interface QuotaNeed {
  readonly metric: QuotaMetric;
  readonly amount: number;
}

/**
 * What a Service stack's first up creates, per quota (components/serviceLoadBalancer.ts): a
 * forwarding rule per frontend and family; a backend service per frontend (over instance groups or
 * NEGs) or one target pool; a dedicated health check; the firewalls of each family; the addresses it
 * reserves (`<lb>` only when held for the Service's life, `<lb>-ipv6` unless the user owns the IPv6
 * address), external ones against STATIC_ADDRESSES and internal ones against INTERNAL_ADDRESSES.
 * Quotas it needs none of are left out. A `neg` Service's NEGs (GCE's NETWORK_ENDPOINT_GROUPS
 * quota) are created by the cluster stack, which this hold does not weigh: not counted. Pure.
 */
export function quotaNeeds(service: ServiceDesired): QuotaNeed[] {
  const ipv4 = service.ipv6Only !== true;
  const ipv6 = service.ipv6;
  const frontends = service.frontends.length;
  const addresses =
    (service.reserveAddress === true && ipv4 ? 1 : 0) + (ipv6 !== undefined && ipv6.userIP === undefined ? 1 : 0);
  const firewalls =
    (ipv4
      ? 1 + (service.healthCheckFirewall !== undefined ? 1 : 0) + (service.denyFirewall !== undefined ? 1 : 0)
      : 0) + (ipv6 !== undefined ? 2 + (ipv6.denyFirewall !== undefined ? 1 : 0) : 0);
  const counts: Record<QuotaMetric, number> = {
    STATIC_ADDRESSES: service.scheme === "EXTERNAL" ? addresses : 0,
    INTERNAL_ADDRESSES: service.scheme === "INTERNAL" ? addresses : 0,
    FORWARDING_RULES: (ipv4 ? frontends : 0) + (ipv6 !== undefined ? frontends : 0),
    BACKEND_SERVICES: service.backend !== "target-pool" ? frontends : 0,
    TARGET_POOLS: service.backend === "target-pool" ? 1 : 0,
    HEALTH_CHECKS: service.healthCheck.kind === "dedicated" ? 1 : 0,
    FIREWALLS: firewalls,
    ROUTES: 0,
  };
  return QUOTA_METRICS.filter((metric) => counts[metric] > 0).map((metric) => ({ metric, amount: counts[metric] }));
}

/** A quota without room for what the up creates. */
export interface Shortfall {
  readonly metric: QuotaMetric;
  /** `region <name>` or `global`. */
  readonly where: string;
  readonly usage: number;
  readonly limit: number;
  /** What first ups let through since the read claim and GCE did not count yet. */
  readonly claimed: number;
  /** What this up needs. */
  readonly need: number;
}

function readingOf(quotas: ProjectQuotas, metric: QuotaMetric): QuotaReading | undefined {
  const list = QUOTA_SCOPES[metric] === "region" ? quotas.regional : quotas.global;
  return list.find((reading) => reading.metric === metric);
}

function whereOf(quotas: ProjectQuotas, metric: QuotaMetric): string {
  return QUOTA_SCOPES[metric] === "region" ? `region ${quotas.region}` : "global";
}

/**
 * The quotas whose headroom (limit − usage − claimed) is less than what the up needs, in
 * QUOTA_METRICS order; empty: it fits. A quota GCE did not report is not checked (the run then
 * meets GCE's own refusal, as without this check). Pure.
 */
export function quotaShortfalls(
  needs: readonly QuotaNeed[],
  quotas: ProjectQuotas,
  claimed: readonly QuotaNeed[],
): Shortfall[] {
  const out: Shortfall[] = [];
  for (const { metric, amount } of needs) {
    const reading = readingOf(quotas, metric);
    if (reading === undefined) continue;
    const pending = claimed.filter((claim) => claim.metric === metric).reduce((sum, claim) => sum + claim.amount, 0);
    if (reading.limit - reading.usage - pending < amount)
      out.push({
        metric,
        where: whereOf(quotas, metric),
        usage: reading.usage,
        limit: reading.limit,
        claimed: pending,
        need: amount,
      });
  }
  return out;
}

/** Each quota short, its usage (claims included) and limit, and what the load balancer needs. Pure. */
export function describeShortfalls(shortfalls: readonly Shortfall[]): string {
  // Usage and claims as one figure: the same whether GCE counted a claimed create yet or not.
  return shortfalls
    .map(
      (s) =>
        `GCE quota ${s.metric} (${s.where}) has ${s.usage + s.claimed} of ${s.limit} in use or being created, and this load balancer needs ${s.need}`,
    )
    .join("; ");
}

/** The Warning QuotaExceeded of a held Service; `retryMs`: the backstop. Pure. */
export function quotaHeldMessage(shortfalls: readonly Shortfall[], retryMs: number): string {
  return `Load balancer not created: ${describeShortfalls(shortfalls)}. Held until a load balancer is deleted or ${retryMs / 60_000} minutes pass; release unused resources or raise the quota`;
}

/** One quota's headroom as last read: what the gauge, `dccm status` and `dccm preview` show. */
export interface QuotaHeadroom {
  readonly quota: QuotaMetric;
  /** `region` or `global`. */
  readonly scope: QuotaScope;
  /** The region of a regional quota. */
  readonly region?: string;
  readonly limit: number;
  readonly usage: number;
  /** limit − usage. */
  readonly headroom: number;
}

/** The headroom of each quota a load balancer consumes that GCE reported, in QUOTA_METRICS order. Pure. */
export function quotaHeadroom(quotas: ProjectQuotas): QuotaHeadroom[] {
  const out: QuotaHeadroom[] = [];
  for (const quota of QUOTA_METRICS) {
    const reading = readingOf(quotas, quota);
    if (reading === undefined) continue;
    const scope = QUOTA_SCOPES[quota];
    out.push({
      quota,
      scope,
      ...(scope === "region" ? { region: quotas.region } : {}),
      limit: reading.limit,
      usage: reading.usage,
      headroom: reading.limit - reading.usage,
    });
  }
  return out;
}

/**
 * Which of these first ups would be held, in order, each one's needs claimed before the next is
 * weighed (as the daemon lets them through one by one): what `dccm preview` shows. Pure.
 */
export function heldInOrder(
  ups: readonly { readonly key: string; readonly needs: readonly QuotaNeed[] }[],
  quotas: ProjectQuotas,
): { key: string; shortfalls: Shortfall[] }[] {
  const claimed: QuotaNeed[] = [];
  const held: { key: string; shortfalls: Shortfall[] }[] = [];
  for (const up of ups) {
    const shortfalls = quotaShortfalls(up.needs, quotas, claimed);
    if (shortfalls.length > 0) held.push({ key: up.key, shortfalls });
    else claimed.push(...up.needs);
  }
  return held;
}
