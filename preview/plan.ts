/**
 * `dccm preview`, the pure part: which of the daemon's stacks a desired state would change, decided
 * as the daemon's start-up decides that a stack needs no `up` (the desired-state hash each stack
 * records as `dccmDesiredHash`, model/desiredCache.ts), and the plan made of the engine's preview
 * events, as text and as JSON, with the exit code (`terraform plan -detailed-exitcode`'s).
 */
import type { StepEventMetadata } from "../stacks/events";
import {
  backendGroupKeys,
  CLUSTER_STACK,
  observedReferences,
  parseServiceStack,
  reservesTransiently,
  stackOfResource,
  type ClusterSnapshot,
  type Config,
  type DesiredState,
  type ObservedCloud,
  type ServiceDesired,
  type ServiceInfo,
  type ServiceNotice,
  LB_FINALIZER,
} from "../model";
import { DesiredCache } from "../model/desiredCache";

import { planRemoval } from "../model/removal";

import { defaultParallelism, type Machine } from "../runtime/parallelism";
import { describeShortfalls, heldInOrder, quotaHeadroom, quotaNeeds, type QuotaHeadroom } from "../gce/quotaHold";
import type { ProjectQuotas } from "../gce/quotas";

export interface DesiredStacks {
  desired: DesiredState;
  /** The stacks the desired state declares (the cluster stack, one per valid Service) → the hash the daemon records for them. */
  hashes: ReadonlyMap<string, string>;
  /** Stacks of the Services the model rejects → why. */
  rejected: ReadonlyMap<string, readonly string[]>;
  /** Every Service stack of `hashes` and `rejected` → its Service (`<namespace>/<name>`): a shortened stack name does not say it. */
  services: ReadonlyMap<string, string>;
}

/**
 * What the daemon observes once the Service stacks are applied: what they point at in the cluster
 * stack. Gone VMs are not asked about (that takes Compute): a Node whose VM is gone counts in.
 */
export function observedAfterApply(services: readonly ServiceDesired[]): ObservedCloud {
  const { referencedZones, referencedGroups } = observedReferences(services.flatMap(backendGroupKeys));
  return {
    goneInstances: [],
    referencedZones,
    ...(referencedGroups.length > 0 ? { referencedGroups } : {}),
    legacyHealthCheckReferenced: services.some(
      (service) => service.backend === "target-pool" && service.healthCheck.kind === "shared",
    ),
  };
}

/** The daemon's desired state of `snapshot` and the hash of every stack, by the daemon's own cache. */
export function desiredStacks(snapshot: ClusterSnapshot, config: Config): DesiredStacks {
  const cache = new DesiredCache(config);
  cache.update(snapshot);
  cache.observe(observedAfterApply(cache.desired().services));
  const hashes = new Map<string, string>();
  const rejected = new Map<string, string[]>();
  const services = new Map<string, string>();
  for (const stack of cache.stacks()) {
    const view = cache.view(stack);
    if (view.hash === undefined) continue;
    if (view.service !== undefined) services.set(stack, view.service.key);
    else if (view.rejections.length > 0) services.set(stack, view.rejections[0].service);
    if (stack === CLUSTER_STACK || view.service !== undefined) hashes.set(stack, view.hash);
    else if (view.rejections.length > 0)
      rejected.set(
        stack,
        view.rejections.map((rejection) => rejection.message),
      );
  }
  return { desired: cache.desired(), hashes, rejected, services };
}

/** What the backend holds of one stack. */
export interface RecordedStack {
  /** The hash the last successful up applied; undefined when none (never applied, or a killed run left pending creates). */
  hash: string | undefined;
  /** The Service (`<namespace>/<name>`) a stack with a shortened name records (stacks/runner.ts recordedService). */
  service?: string;
  /** Its outputs name the address `<lb>` (components/outputs.ts recordedAddress). */
  holdsAddress?: true;
  /** The one IPv4 address of its recorded ingress: what a transient Service's next run holds its rules on. */
  ipv4?: string;
}

export type StackDecision =
  /** Recorded hash equals the desired one: no engine run. `notices`: its Service's plan warnings (ServiceDesired.notices), when any. */
  | { stack: string; service?: string; kind: "unchanged"; notices?: readonly ServiceNotice[] }
  /** In the backend with another hash: `pulumi preview` of the daemon's program. */
  | { stack: string; service?: string; kind: "preview"; notices?: readonly ServiceNotice[] }
  /** Not in the backend yet: previewed against an empty backend (everything is a create). */
  | { stack: string; service?: string; kind: "create"; notices?: readonly ServiceNotice[] }
  /** In the backend, and the daemon would destroy it: `pulumi destroy --preview-only`. */
  | { stack: string; service: string; kind: "destroy" }
  /** The model rejects the Service: the daemon leaves its load balancer (if any) as it is. */
  | { stack: string; service: string; kind: "rejected"; messages: readonly string[]; hasStack: boolean };

/** A Service stack's Service: what the desired state or the stack itself says (a shortened name does not), else what the name says. */
function serviceKeyOf(
  stack: string,
  wanted: Pick<DesiredStacks, "services">,
  recorded: ReadonlyMap<string, RecordedStack>,
): string | undefined {
  const known = wanted.services.get(stack) ?? recorded.get(stack)?.service;
  if (known !== undefined) return known;
  const ref = parseServiceStack(stack);
  return ref === undefined ? undefined : `${ref.namespace}/${ref.name}`;
}

function byStack(a: { stack: string }, b: { stack: string }): number {
  // The cluster stack first: Service stacks point at what it holds.
  if (a.stack === b.stack) return 0;
  if (a.stack === CLUSTER_STACK) return -1;
  if (b.stack === CLUSTER_STACK) return 1;
  return a.stack < b.stack ? -1 : 1;
}

/**
 * The decision for every stack the desired state or the backend has. A backend stack whose Service
 * the model does not want is destroyed when the daemon's removal rules say so (model/removal.ts):
 * its Service is absent, of another class, or no longer a LoadBalancer.
 */
export function decideStacks(
  wanted: Pick<DesiredStacks, "hashes" | "rejected" | "services"> & Partial<Pick<DesiredStacks, "desired">>,
  recorded: ReadonlyMap<string, RecordedStack>,
  services: readonly ServiceInfo[],
  classes: readonly string[],
): StackDecision[] {
  const decisions: StackDecision[] = [];
  const serviceKey = (stack: string): string | undefined => serviceKeyOf(stack, wanted, recorded);
  const service = (stack: string): { service?: string } => {
    const key = serviceKey(stack);
    return key === undefined ? {} : { service: key };
  };
  const transient = new Set(
    (wanted.desired?.services ?? []).filter((service) => reservesTransiently(service)).map((service) => service.stack),
  );
  const notices = new Map(
    (wanted.desired?.services ?? []).flatMap((service) =>
      service.notices !== undefined && service.notices.length > 0 ? [[service.stack, service.notices] as const] : [],
    ),
  );
  for (const [stack, hash] of wanted.hashes) {
    const record = recorded.get(stack);
    // A stack holding `<lb>` its Service no longer reserves runs once to release it (controllers/service/addressPins.ts).
    const release = record?.holdsAddress === true && transient.has(stack);
    const kind = record === undefined ? "create" : record.hash === hash && !release ? "unchanged" : "preview";
    const told = notices.get(stack);
    decisions.push({ stack, ...service(stack), kind, ...(told !== undefined ? { notices: told } : {}) });
  }
  for (const [stack, messages] of wanted.rejected) {
    const key = serviceKey(stack);
    if (key !== undefined)
      decisions.push({ stack, service: key, kind: "rejected", messages, hasStack: recorded.has(stack) });
  }
  const byKey = new Map(services.map((info) => [`${info.namespace}/${info.name}`, info]));
  for (const stack of recorded.keys()) {
    const key = serviceKey(stack);
    if (key === undefined || wanted.hashes.has(stack) || wanted.rejected.has(stack)) continue;
    const info = byKey.get(key);
    const observed =
      info === undefined
        ? undefined
        : {
            type: info.type,
            ...(info.loadBalancerClass !== undefined ? { loadBalancerClass: info.loadBalancerClass } : {}),
            finalizers: [],
            ingress: [],
            deleting: info.deleting,
          };
    decisions.push({
      stack,
      service: key,
      kind: planRemoval(observed, true, LB_FINALIZER, classes).destroy ? "destroy" : "unchanged",
    });
  }
  return decisions.sort(byStack);
}

/** A stack the engine previews on its own: its state in the backend is what the plan is against. */
export type RecordedDecision = Extract<StackDecision, { kind: "preview" | "destroy" }>;

export type EngineRun =
  /** `pulumi preview` (or `destroy --preview-only`) of one stack of the backend. */
  | { kind: "stack"; decision: RecordedDecision }
  /**
   * Stacks the backend does not have, previewed together as one stack of an empty backend: each
   * declares only creates, and one engine run per stack would spend most of its time starting the
   * CLI and the provider (docs/development/benchmarks.md).
   */
  | { kind: "creates"; stacks: string[] };

/** Pure: the engine runs of the decisions, new stacks `createsPerRun` to a run, in the decisions' order. */
export function engineRuns(decisions: readonly StackDecision[], createsPerRun: number): EngineRun[] {
  const runs: EngineRun[] = [];
  let creates: string[] = [];
  for (const decision of decisions) {
    if (decision.kind === "preview" || decision.kind === "destroy") runs.push({ kind: "stack", decision });
    else if (decision.kind === "create") creates.push(decision.stack);
    if (creates.length === createsPerRun) {
      runs.push({ kind: "creates", stacks: creates });
      creates = [];
    }
  }
  if (creates.length > 0) runs.push({ kind: "creates", stacks: creates });
  return runs;
}

/** Pure: a change reported by a run of stack A, as a run of `stack` reports it (the URN's stack part). */
export function inStack(change: ResourceChange, stack: string): ResourceChange {
  const match = /^urn:pulumi:[^:]*::/.exec(change.urn);
  return match === null ? change : { ...change, urn: `urn:pulumi:${stack}::${change.urn.slice(match[0].length)}` };
}

/** Pure: the changes of a run of new stacks together, by the stack each resource's own run would report it in. */
export function changesByStack(changes: readonly ResourceChange[]): Map<string, ResourceChange[]> {
  const byStack = new Map<string, ResourceChange[]>();
  for (const change of changes) {
    const stack = stackOfResource(change.name);
    const list = byStack.get(stack) ?? [];
    list.push(inStack(change, stack));
    byStack.set(stack, list);
  }
  return byStack;
}

/** Above this, engine runs at once would only wait for each other's cores. */
export const MAX_PREVIEW_PARALLELISM = 64;

/**
 * Pure: engine runs at once by default: the daemon's default (one per core, within memory) halved.
 * A preview run keeps two processes busy at once, the pulumi CLI and the provider plugin, beside
 * the program in ours; a daemon's `up` mostly waits for GCE. Measured on 2 cores (bench/preview.ts,
 * 500 new Services, quiet): 2 runs at once took 56.7 s and peaked at 736 MB, 1 run 58.2 s and 471 MB.
 */
export function defaultPreviewParallelism(machine: Machine): number {
  return Math.max(1, Math.floor(defaultParallelism(machine) / 2));
}

/**
 * Pure: engine runs at once: `--parallelism`, else the config file's `parallelism` (the daemon's),
 * else defaultPreviewParallelism for this machine (each run holds a pulumi CLI and a provider plugin).
 */
export function previewParallelism(flag: string | undefined, fromFile: unknown, machine: Machine): number {
  const [name, value] = flag !== undefined ? ["--parallelism", flag] : ["parallelism", fromFile];
  if (value === undefined || value === null || value === "") return defaultPreviewParallelism(machine);
  const number =
    typeof value === "number" ? value : typeof value === "string" && /^\d+$/.test(value.trim()) ? Number(value) : NaN;
  if (!(Number.isInteger(number) && number >= 1 && number <= MAX_PREVIEW_PARALLELISM)) {
    throw new Error(`${name}: ${JSON.stringify(value)} is not a whole number from 1 to ${MAX_PREVIEW_PARALLELISM}`);
  }
  return number;
}

/** `run` over every item, at most `limit` at once; the results in the items' order. */
export async function mapLimit<T, R>(items: readonly T[], limit: number, run: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await run(items[index]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), items.length) }, worker));
  return results;
}

export type ChangeOp = "create" | "update" | "replace" | "delete";

export interface FieldChange {
  path: string;
  /** Absent: the field was not set. */
  old?: unknown;
  new?: unknown;
}

export interface ResourceChange {
  op: ChangeOp;
  /** The Pulumi type, e.g. `gcp:compute/firewall:Firewall`. */
  type: string;
  /** The logical name (the URN's last part), as dccm's DriftCorrected events name resources. */
  name: string;
  urn: string;
  /** The fields an update or a replace changes. */
  fields: FieldChange[];
  /** The fields that force a replace. */
  replaceBecause: string[];
}

// create-replacement and delete-replaced are the halves of a replace the engine also reports as one "replace" step.
const CHANGE_OPS: Readonly<Record<string, ChangeOp>> = {
  create: "create",
  update: "update",
  replace: "replace",
  delete: "delete",
};

/** `a.b[0]["c.d"]` → ["a", "b", 0, "c.d"]. */
export function parsePropertyPath(path: string): (string | number)[] {
  const parts: (string | number)[] = [];
  const pattern = /\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]|([^.[\]]+)/g;
  for (const match of path.matchAll(pattern)) {
    if (match[1] !== undefined) parts.push(Number(match[1]));
    else if (match[2] !== undefined) parts.push(match[2].replace(/\\(.)/g, "$1"));
    else if (match[3] !== undefined) parts.push(match[3]);
  }
  return parts;
}

function valueAt(root: unknown, path: string): unknown {
  let value: unknown = root;
  for (const part of parsePropertyPath(path)) {
    if (
      typeof part === "number"
        ? !Array.isArray(value)
        : value === null || typeof value !== "object" || Array.isArray(value)
    )
      return undefined;
    value = (value as Record<string | number, unknown>)[part];
  }
  return value;
}

function fieldChanges(metadata: StepEventMetadata): FieldChange[] {
  const detailed = metadata.detailedDiff ?? {};
  const paths = Object.keys(detailed).length > 0 ? Object.keys(detailed) : [...(metadata.diffs ?? [])];
  return [...new Set(paths)].sort().map((path) => {
    // Not an input diff: the provider compared the new inputs with the recorded state (outputs).
    const before = detailed[path]?.inputDiff === false ? metadata.old?.outputs : metadata.old?.inputs;
    const old = valueAt(before, path);
    const next = valueAt(metadata.new?.inputs, path);
    return { path, ...(old !== undefined ? { old } : {}), ...(next !== undefined ? { new: next } : {}) };
  });
}

/**
 * One resource's change from a `resourcePreEvent`; undefined for steps that change nothing
 * (same, read, refresh), for the halves of a replace, and for what is not a cloud resource
 * (components, the stack, providers).
 */
export function resourceChange(metadata: StepEventMetadata): ResourceChange | undefined {
  const op = CHANGE_OPS[metadata.op];
  if (op === undefined) return undefined;
  const custom = metadata.new?.custom ?? metadata.old?.custom;
  if (custom !== true || metadata.type.startsWith("pulumi:providers:")) return undefined;
  const index = metadata.urn.lastIndexOf("::");
  return {
    op,
    type: metadata.type,
    name: index < 0 ? metadata.urn : metadata.urn.slice(index + 2),
    urn: metadata.urn,
    fields: op === "update" || op === "replace" ? fieldChanges(metadata) : [],
    replaceBecause: op === "replace" ? [...(metadata.keys ?? [])].sort() : [],
  };
}

export type StackAction = "create" | "update" | "delete" | "unchanged";

export interface StackPlan {
  stack: string;
  /** `<namespace>/<name>`; absent for the cluster stack. */
  service?: string;
  action: StackAction;
  /** Sorted by name, then type. */
  changes: ResourceChange[];
  /** Its Service's plan warnings, as the daemon tells them in Warning Events; absent when none. */
  notices?: ServiceNotice[];
}

export interface RejectedService {
  service: string;
  stack: string;
  messages: readonly string[];
  /** A stack (a load balancer applied before) exists: it stays as it is. */
  hasStack: boolean;
}

function byResource(a: ResourceChange, b: ResourceChange): number {
  if (a.name !== b.name) return a.name < b.name ? -1 : 1;
  if (a.type !== b.type) return a.type < b.type ? -1 : 1;
  return 0;
}

/** One change per URN and op, however often the event log repeats a step; sorted by name, then type. */
export function uniqueChanges(changes: readonly ResourceChange[]): ResourceChange[] {
  return [...new Map(changes.map((change) => [`${change.op} ${change.urn}`, change])).values()].sort(byResource);
}

/** A stack's plan from its decision and the changes its engine run reported (none when it did not run). */
export function stackPlan(
  decision: Exclude<StackDecision, { kind: "rejected" }>,
  changes: readonly ResourceChange[],
): StackPlan {
  const unique = uniqueChanges(changes);
  const action: StackAction =
    decision.kind === "create"
      ? "create"
      : decision.kind === "destroy"
        ? "delete"
        : decision.kind === "preview" && unique.length > 0
          ? "update"
          : "unchanged";
  return {
    stack: decision.stack,
    ...(decision.service !== undefined ? { service: decision.service } : {}),
    action,
    changes: unique,
    ...(decision.kind !== "destroy" && decision.notices !== undefined ? { notices: [...decision.notices] } : {}),
  };
}

export interface PlanSummary {
  create: number;
  update: number;
  replace: number;
  delete: number;
  unchangedStacks: number;
}

export function summarize(plans: readonly StackPlan[]): PlanSummary {
  const summary: PlanSummary = { create: 0, update: 0, replace: 0, delete: 0, unchangedStacks: 0 };
  for (const plan of plans) {
    if (plan.action === "unchanged") summary.unchangedStacks++;
    for (const change of plan.changes) summary[change.op]++;
  }
  return summary;
}

/** 0: nothing would change; 2: something would (a stack created or removed counts even without resources). */
export function exitCode(plans: readonly StackPlan[]): 0 | 2 {
  return plans.some((plan) => plan.action !== "unchanged") ? 2 : 0;
}

const VALUE_LIMIT = 200;

/** Pulumi's placeholder for an unknown value in a preview (sdk plugin.UnknownStringValue). */
const UNKNOWN_VALUE = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

/** A field's value on one line: JSON, cut past 200 characters; `(unset)` when absent. */
export function formatValue(value: unknown): string {
  if (value === undefined) return "(unset)";
  // A value the preview cannot know until what it depends on is applied (a self link of a resource the run updates).
  if (value === UNKNOWN_VALUE) return "(known after the run)";
  const text = JSON.stringify(value);
  return text.length <= VALUE_LIMIT ? text : `${text.slice(0, VALUE_LIMIT)}… (${text.length} characters)`;
}

function shortType(type: string): string {
  return type.split(":").pop() ?? type;
}

function changeLines(change: ResourceChange): string[] {
  const because =
    change.op === "replace" && change.replaceBecause.length > 0 ? ` because ${change.replaceBecause.join(", ")}` : "";
  return [
    `  ${change.op} ${shortType(change.type)} ${change.name}${because}`,
    ...change.fields.map((field) => `      ${field.path}: ${formatValue(field.old)} → ${formatValue(field.new)}`),
  ];
}

export function summaryLine(summary: PlanSummary): string {
  return `${summary.create} to create, ${summary.update} to update, ${summary.replace} to replace, ${summary.delete} to delete, ${summary.unchangedStacks} unchanged stacks`;
}

/** The plan for people: each stack that would change with its resources, then the rejected Services, the Services' warnings, the unchanged stacks and the summary. */
export function formatPlan(
  plans: readonly StackPlan[],
  rejected: readonly RejectedService[],
  quotas?: PreviewQuotas,
): string {
  const lines: string[] = [];
  for (const plan of plans) {
    if (plan.action === "unchanged") continue;
    const subject = plan.service !== undefined ? `Service ${plan.service}` : "Cluster";
    lines.push(`${subject}: ${plan.action} (stack ${plan.stack})`, ...plan.changes.flatMap(changeLines));
  }
  for (const service of rejected) {
    const kept = service.hasStack ? "its load balancer is left as it is" : "no load balancer is created";
    lines.push(`Service ${service.service}: rejected, ${kept}`, ...service.messages.map((message) => `  ${message}`));
  }
  for (const plan of plans)
    for (const notice of plan.notices ?? [])
      lines.push(`Service ${plan.service ?? plan.stack}: Warning ${notice.reason}: ${notice.message}`);
  const unchanged = plans.filter((plan) => plan.action === "unchanged").map((plan) => plan.stack);
  if (unchanged.length > 0) lines.push(`Unchanged stacks: ${unchanged.join(", ")}`);
  if (quotas !== undefined) lines.push(...quotaLines(quotas));
  lines.push(`Plan: ${summaryLine(summarize(plans))}`);
  return `${lines.join("\n")}\n`;
}

export interface PlanDocument {
  /** The exit code's answer: whether anything would change. */
  changes: boolean;
  summary: PlanSummary;
  stacks: StackPlan[];
  rejected: RejectedService[];
  /** With --quotas: the headroom, and the new Services the daemon would hold (or why the quotas were not read). */
  quotas?: PreviewQuotas;
}

/** The plan for machines (`--json`). */
export function planDocument(
  plans: readonly StackPlan[],
  rejected: readonly RejectedService[],
  quotas?: PreviewQuotas,
): PlanDocument {
  return {
    changes: exitCode(plans) === 2,
    summary: summarize(plans),
    stacks: [...plans],
    rejected: [...rejected],
    ...(quotas !== undefined ? { quotas } : {}),
  };
}

/** What `dccm preview --quotas` adds: the quotas' headroom and the new Services held for them, or why the quotas were not read. */
export type PreviewQuotas =
  | { read: true; quotas: QuotaHeadroom[]; held: { service: string; stack: string; shortfalls: string }[] }
  | { read: false; error: string };

/**
 * The new Service stacks (no stack in the backend: their next up is their first) the daemon would
 * hold for quota, weighed in stack order as its queue would let them through one by one. Pure.
 */
export function previewQuotas(
  decisions: readonly StackDecision[],
  desired: Pick<DesiredState, "services">,
  quotas: ProjectQuotas,
): PreviewQuotas {
  const byStack = new Map(desired.services.map((service) => [service.stack, service]));
  const ups = decisions.flatMap((decision) => {
    const service = decision.kind === "create" ? byStack.get(decision.stack) : undefined;
    return service === undefined ? [] : [{ key: decision.stack, service: service.key, needs: quotaNeeds(service) }];
  });
  const services = new Map(ups.map((up) => [up.key, up.service]));
  return {
    read: true,
    quotas: quotaHeadroom(quotas),
    held: heldInOrder(ups, quotas).map(({ key, shortfalls }) => ({
      service: services.get(key) ?? key,
      stack: key,
      shortfalls: describeShortfalls(shortfalls),
    })),
  };
}

/** The text plan's quota lines. Pure. */
export function quotaLines(quotas: PreviewQuotas): string[] {
  if (!quotas.read) return [`GCE quotas not read: ${quotas.error}`];
  const headroom = quotas.quotas.map(
    (row) =>
      `${row.quota} (${row.region !== undefined ? `region ${row.region}` : row.scope}) ${row.usage} of ${row.limit}, headroom ${row.headroom}`,
  );
  return [
    `GCE quotas: ${headroom.length > 0 ? headroom.join("; ") : "none reported"}`,
    ...quotas.held.map(
      (held) => `Service ${held.service}: would be held for quota (stack ${held.stack}): ${held.shortfalls}`,
    ),
  ];
}
