/**
 * A Service run that is not a change of the Service (a drift pass's refresh, the full refresh)
 * repairs, and a repair must never change the load balancer's IP: everyone's DNS points at it.
 * Such a run pins each address to the IP it last published (a missing address is reserved again
 * with the IP its forwarding rule still serves, the promotion adoption does), is planned first
 * (`pulumi preview --refresh`), and is held when the plan would replace, delete or create a
 * forwarding rule or an address without the IP provably staying. docs/explanation/architecture.md "Drift
 * passes" has the why; the decisions here are pure (planRepair, judgeRepair) and RepairGuard is
 * their thin executor.
 */
import { isIP } from "node:net";
import type { StepEventMetadata } from "../../stacks/events";
import type { Logger } from "pino";
import type { Adoption } from "../../components/adoption";
import { gceResourceId } from "../../gce/ids";

import { type ServiceDesired, type Scope, nameFromUrn, reservesTransiently } from "../../model";
import type { DesiredCache } from "../../model/desiredCache";
import type { EventRecorder, EventTarget } from "../../runtime/events";
import type { ControllerMetrics } from "../metrics";
import type { StackRuns } from "../stackRuns";
import { publishedIpv4 } from "./addressPins";

export const FORWARDING_RULE_TYPE = "gcp:compute/forwardingRule:ForwardingRule";
export const ADDRESS_TYPE = "gcp:compute/address:Address";

/** The field holding each guarded type's IP, in its inputs and outputs. */
const IP_FIELD: Readonly<Record<string, string>> = { [FORWARDING_RULE_TYPE]: "ipAddress", [ADDRESS_TYPE]: "address" };

/** What a plan does to one resource, from its steps (a replacement is several steps of one URN). */
export type PlannedOp = "same" | "update" | "create" | "replace" | "delete";

/** One forwarding rule or address as a plan leaves it. */
export interface PlannedResource {
  type: string;
  /** Pulumi name (`<ns>/<name>:forwarding-rule-tcp`). */
  name: string;
  op: PlannedOp;
  /** Its IP before the run (the refreshed state); undefined when it does not exist. */
  before?: string;
  /** The IP the plan gives it when known before the run; undefined: GCE allocates one. */
  after?: string;
}

const OP_OF: Readonly<Record<string, PlannedOp>> = {
  same: "same",
  update: "update",
  create: "create",
  replace: "replace",
  "create-replacement": "replace",
  "delete-replaced": "replace",
  delete: "delete",
};
const RANK: Readonly<Record<PlannedOp, number>> = { same: 0, update: 1, create: 2, delete: 3, replace: 4 };
/** Steps that change something (the ones StackRunner.up reports as put back). */
const CHANGING = new Set(["create", "update", "replace", "delete", "create-replacement", "delete-replaced"]);

/** An IP literal (an IPv6 rule's `/96` cut off); undefined for anything else, e.g. a value unknown before the run. */
function ipOf(value: unknown): string | undefined {
  if (typeof value !== "string") return undefined;
  const ip = value.replace(/\/\d+$/, "");
  return isIP(ip) !== 0 ? ip : undefined;
}

/** Pure: whether a plan changes anything at all (else the run has nothing to apply). */
export function planChanges(steps: readonly StepEventMetadata[]): boolean {
  return steps.some((step) => CHANGING.has(step.op));
}

/**
 * Pure: the forwarding rules and addresses of a plan. The refresh steps of `preview --refresh` are
 * left out: the plan's own step of a resource carries the refreshed state as its `old`.
 */
export function plannedResources(steps: readonly StepEventMetadata[]): PlannedResource[] {
  const byUrn = new Map<string, PlannedResource>();
  for (const step of steps) {
    const field = IP_FIELD[step.type];
    const op = OP_OF[step.op];
    if (field === undefined || op === undefined) continue;
    const before = ipOf(step.old?.outputs[field] ?? step.old?.inputs[field]);
    const known = ipOf(step.new?.inputs[field]);
    // An update never changes the IP (it forces a replacement of either type): the IP stays.
    const after = known ?? (op === "same" || op === "update" ? before : undefined);
    const seen = byUrn.get(step.urn);
    if (seen !== undefined && RANK[seen.op] >= RANK[op]) continue;
    byUrn.set(step.urn, {
      type: step.type,
      name: nameFromUrn(step.urn),
      op,
      ...(before !== undefined ? { before } : seen?.before !== undefined ? { before: seen.before } : {}),
      ...(after !== undefined ? { after } : {}),
    });
  }
  return [...byUrn.values()];
}

export interface HeldResource {
  type: string;
  name: string;
  op: PlannedOp;
  why: string;
}

export type RepairVerdict =
  /** The plan changes nothing: no up. */
  | { kind: "nothing" }
  | { kind: "apply" }
  /** Not applied: the plan would not keep the IP, for these resources. */
  | { kind: "hold"; held: HeldResource[] };

/** Why an address step does not provably keep its IP; undefined when it does. */
function addressRisk(resource: PlannedResource, keptRuleIps: ReadonlySet<string>): string | undefined {
  const { op, before, after } = resource;
  if (op === "delete") return `its IP ${before ?? "(unknown)"} would be released`;
  if (after === undefined)
    return before === undefined
      ? "a new IP would be allocated"
      : `its IP ${before} would be released and a new one allocated`;
  if (op === "replace" && after !== before) return `its IP would change from ${before ?? "(unknown)"} to ${after}`;
  // Reserving a literal is a promotion only while a rule that stays serves it (GCE refuses a
  // released IP, and a rule deleted first would release it).
  if (!keptRuleIps.has(after)) return `${after} is on no forwarding rule any more, so it cannot be reserved again`;
  return undefined;
}

/** Why a forwarding rule step does not provably keep its IP; undefined when it does. */
function ruleRisk(
  resource: PlannedResource,
  published: ReadonlySet<string>,
  addressIps: ReadonlySet<string>,
  heldByAddress: ReadonlySet<string>,
): string | undefined {
  const { op, before, after } = resource;
  if (op === "delete")
    return before !== undefined && heldByAddress.has(before)
      ? undefined
      : `its IP ${before ?? "(unknown)"} would be released`;
  if (after === undefined) return "its IP is not known before the run: GCE would allocate a new one";
  if (op === "replace" && after !== before) return `its IP would change from ${before ?? "(unknown)"} to ${after}`;
  if (op === "create" && !published.has(after)) return `${after} is not an IP the Service has`;
  // One of our addresses names this IP: it must still hold it (a user's loadBalancerIP is no address of ours).
  if (addressIps.has(after) && !heldByAddress.has(after)) return `${after} is held by no address`;
  return undefined;
}

/**
 * Pure: whether a plan of a run that is not a change of the Service may be applied. A forwarding
 * rule or address created, replaced or deleted passes only when its IP provably stays: a rule
 * keeps the IP it had (or, created, one the Service has) and that IP is held by an address that
 * stays or is reserved again; an address is reserved again only with the IP a rule that stays
 * serves (promotion). Anything else is held. `published`: the IPs the Service's status has.
 */
export function judgeRepair(
  resources: readonly PlannedResource[],
  published: readonly string[],
  changes: boolean,
): RepairVerdict {
  if (!changes) return { kind: "nothing" };
  const stays = (resource: PlannedResource): boolean => resource.op === "same" || resource.op === "update";
  const ips = (type: string, keep: (resource: PlannedResource) => boolean): Set<string> =>
    new Set(
      resources.flatMap((resource) =>
        resource.type === type && keep(resource) && resource.after !== undefined ? [resource.after] : [],
      ),
    );
  const keptRuleIps = ips(FORWARDING_RULE_TYPE, stays);
  const held: HeldResource[] = [];
  const reserved = new Set<string>();
  for (const resource of resources) {
    if (resource.type !== ADDRESS_TYPE || stays(resource)) continue;
    const why = addressRisk(resource, keptRuleIps);
    if (why !== undefined) held.push({ type: resource.type, name: resource.name, op: resource.op, why });
    else if (resource.after !== undefined) reserved.add(resource.after);
  }
  const heldByAddress = new Set([...ips(ADDRESS_TYPE, stays), ...reserved]);
  const addressIps = new Set(
    resources.flatMap((resource) =>
      resource.type === ADDRESS_TYPE
        ? [resource.before, resource.after].filter((ip): ip is string => ip !== undefined)
        : [],
    ),
  );
  const publishedSet = new Set(published);
  for (const resource of resources) {
    if (resource.type !== FORWARDING_RULE_TYPE || stays(resource)) continue;
    const why = ruleRisk(resource, publishedSet, addressIps, heldByAddress);
    if (why !== undefined) held.push({ type: resource.type, name: resource.name, op: resource.op, why });
  }
  held.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return held.length > 0 ? { kind: "hold", held } : { kind: "apply" };
}

/**
 * Pure: the addresses a repair pins, by GCE ID → IP: the Service's IPv4 address `<lb>`, when it
 * reserves one for life (controllers/service/addressPins.ts has the others), to the one IPv4 address it published. The
 * IPv6 address is not pinned: a missing one is held, not repaired (docs/operations/known-limits.md).
 */
export function repairPins(
  service: ServiceDesired,
  project: string,
  region: string,
  published: readonly string[],
): Map<string, string> {
  const pins = new Map<string, string>();
  if (service.reserveAddress !== true) return pins;
  const ipv4 = published.filter((ip) => isIP(ip) === 4);
  const id = gceResourceId(ADDRESS_TYPE, { project, region, name: service.lbName });
  if (ipv4.length === 1 && id !== undefined) pins.set(id, ipv4[0]);
  return pins;
}

/** Pure: the Warning of a held repair. */
export function heldMessage(
  held: readonly HeldResource[],
  published: readonly string[],
  service: ServiceDesired,
  region: string,
): string {
  const ips = published.join(", ");
  const what = held
    .map(
      (resource) =>
        `${resource.type.split(":").pop() ?? resource.type} ${resource.name} (${resource.op}): ${resource.why}`,
    )
    .join("; ");
  const ipv4 = published.find((ip) => isIP(ip) === 4);
  const reserve =
    service.userIP === undefined && ipv4 !== undefined
      ? `Reserve ${ipv4} again as address ${service.lbName} in ${region} if the project still holds it, or delete`
      : "Delete";
  return `Not repaired: the run would not keep the load balancer's IP ${ips}: ${what}. Nothing was applied; retried with backoff. ${reserve} and create the Service again to take a new IP`;
}

/** A repair held because it would not keep the IP: retried with the queue's backoff. */
export class IpChangeHeldError extends Error {
  constructor(stack: string, message: string) {
    super(`stack ${stack}: ${message}`);
    this.name = "IpChangeHeldError";
  }
}

export interface RepairGuardDeps {
  runs: Pick<StackRuns, "preview">;
  cache: Pick<DesiredCache, "desired">;
  events: Pick<EventRecorder, "record">;
  metrics: Pick<ControllerMetrics, "ipChangesHeld">;
  logger: Logger;
}

export type RepairDecision =
  | { kind: "apply"; adoption: Adoption }
  /** A Service without a reservation whose repair replaces a rule on the IP it has: pinned first (addressPins.ts). */
  | { kind: "pin"; ip: string }
  | { kind: "nothing" }
  | { kind: "held"; error: IpChangeHeldError };

/**
 * Pure: whether a held plan of a Service that reserves no address at rest only replaces forwarding
 * rules that exist on the published IPv4 address: then pinning that IP first keeps it, and the
 * repair can run. A rule that is gone (created by the plan) took its ephemeral IP with it.
 */
export function pinnableRepair(
  held: readonly HeldResource[],
  resources: readonly PlannedResource[],
  ip: string | undefined,
): boolean {
  if (ip === undefined) return false;
  return held.every((resource) => {
    if (resource.type !== FORWARDING_RULE_TYPE || resource.op !== "replace") return false;
    return resources.some((planned) => planned.name === resource.name && planned.before === ip);
  });
}

export interface RepairRun {
  stack: string;
  scope: Scope;
  hash: string;
  service: ServiceDesired;
  /** The IPs the Service's status has (what the stack last published). */
  published: readonly string[];
  target: EventTarget;
}

/** The executor: plans the pinned run, tells and counts a hold. */
export class RepairGuard {
  constructor(private readonly deps: RepairGuardDeps) {}

  async decide(run: RepairRun): Promise<RepairDecision> {
    const { cluster } = this.deps.cache.desired();
    const adoption: Adoption = {
      imports: new Set(),
      addressIps: repairPins(run.service, cluster.project, cluster.region, run.published),
    };
    const steps = await this.deps.runs.preview(run.stack, run.scope, run.hash, adoption);
    const resources = plannedResources(steps);
    const verdict = judgeRepair(resources, run.published, planChanges(steps));
    if (verdict.kind === "nothing") return verdict;
    if (verdict.kind === "apply") return { kind: "apply", adoption };
    const ip = publishedIpv4(run.published);
    if (reservesTransiently(run.service) && ip !== undefined && pinnableRepair(verdict.held, resources, ip))
      return { kind: "pin", ip };
    const message = heldMessage(verdict.held, run.published, run.service, cluster.region);
    this.deps.metrics.ipChangesHeld.inc();
    this.deps.logger.warn(
      { stack: run.stack, held: verdict.held },
      "repair held: it would not keep the load balancer's IP",
    );
    await this.deps.events.record(run.target, "Warning", "IPChangeHeld", message);
    return { kind: "held", error: new IpChangeHeldError(run.stack, message) };
  }
}
