/**
 * What the daemon's `/status` answers and `dccm status` prints: one row per stack, fed where the
 * daemon learns each fact (the stack records, the pulumi runs, the reconcile results, the
 * controllers' ingress and drift corrections). Nothing from the stack config or the backend URL
 * goes in: the listener serves no secret.
 */
import { describeError } from "../runtime/errors";
import { isRecord } from "../runtime/guards";
import type { ReconcileResult } from "../runtime/queue";
import { CLUSTER_STACK } from "../model";
import { parseServiceStack } from "../model/desiredCache";

export type StackOperation = "up" | "refresh" | "destroy";

export interface LastUp {
  /** When the operation started (ISO 8601). */
  at: string;
  operation: StackOperation;
  /** The result of the reconcile that ran it (ok, retry, retryAfter, giveUp). */
  result: ReconcileResult["kind"];
  durationMs: number;
}

export interface StatusRow {
  stack: string;
  kind: "cluster" | "service";
  /** `namespace/name` of a Service stack; null for the cluster stack. */
  service: string | null;
  lastUp: LastUp | null;
  /** The IPs last written to the Service's status; null for the cluster stack. */
  ingress: string[] | null;
  lastDriftCorrection: { at: string; putBack: string } | null;
  lastError: { at: string; message: string } | null;
}

/** One GCE quota a load balancer consumes, as last read (controllers/service/quotaGate.ts). */
export interface QuotaRow {
  quota: string;
  /** `region` (the region's quota) or `global` (the project's). */
  scope: string;
  region?: string;
  limit: number;
  usage: number;
  /** limit − usage. */
  headroom: number;
}

/** What the daemon knows of the GCE quotas: their headroom as last read, when, and the Services held for them. */
export interface QuotaStatus {
  /** ISO 8601; null before the first read. */
  readAt: string | null;
  quotas: QuotaRow[];
  /** The stacks held before their first up for a quota, sorted. */
  held: string[];
}

/** The `/status` document. */
export interface StatusDocument {
  leader: boolean;
  /** The leader's initial lists are synced (what /readyz waits for). */
  synced: boolean;
  /** The cluster stack first, then the Service stacks by namespace and name. */
  stacks: StatusRow[];
  /** Absent without Compute access (no quota is read). */
  quotas?: QuotaStatus;
}

/**
 * A row's size is bounded whatever happens: a Service has one or two ingress IPs (one per IP
 * family); messages are cut (describeError already keeps an Event's worth).
 */
export const MAX_INGRESS = 8;
export const MAX_TEXT = 1024;

function cut(text: string): string {
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 1)}…` : text;
}

/** The order `dccm status` prints and `/status` answers: the cluster stack, then Services by namespace and name, then anything else. */
export function compareStacks(a: string, b: string): number {
  const rank = (stack: string): [number, string, string] => {
    if (stack === CLUSTER_STACK) return [0, "", ""];
    const ref = parseServiceStack(stack);
    return ref !== undefined ? [1, ref.namespace, ref.name] : [2, stack, ""];
  };
  const [x, y] = [rank(a), rank(b)];
  for (let i = 0; i < 3; i++) {
    if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1;
  }
  return 0;
}

/** An empty row of a stack: every fact unknown. `service`: the Service of a stack whose shortened name does not say it. */
export function emptyRow(stack: string, service?: { namespace: string; name: string }): StatusRow {
  const ref = parseServiceStack(stack) ?? service;
  const isCluster = stack === CLUSTER_STACK;
  return {
    stack,
    kind: isCluster ? "cluster" : "service",
    service: ref !== undefined ? `${ref.namespace}/${ref.name}` : null,
    lastUp: null,
    ingress: isCluster ? null : [],
    lastDriftCorrection: null,
    lastError: null,
  };
}

/**
 * One row per stack the daemon keeps a record of (controllers/stackRecords.ts StackRecords: tracked when
 * the record is made, dropped with it). Facts about a stack without a row are ignored: a reconcile
 * result arrives after a removal forgot the stack, and must not bring its row back.
 */
export class StatusBook {
  private readonly rows = new Map<string, StatusRow>();
  /**
   * Operations that ended in a reconcile still running: they become the row's last up with that
   * reconcile's result (until then the row keeps the previous one, whole).
   */
  private readonly ended = new Map<string, Omit<LastUp, "result">>();
  private quotaSource: (() => QuotaStatus) | undefined;

  constructor(
    private readonly now: () => Date = () => new Date(),
    /** A Service stack's Service, shortened names included (stacks/stackKeys.ts). */
    private readonly serviceOf: (stack: string) => { namespace: string; name: string } | undefined = () => undefined,
  ) {}

  track(stack: string): void {
    if (!this.rows.has(stack)) this.rows.set(stack, emptyRow(stack, this.serviceOf(stack)));
  }

  drop(stack: string): void {
    this.rows.delete(stack);
    this.ended.delete(stack);
  }

  /** A pulumi operation ended, well or not: its reconcile's result (reconciled) says which. */
  ran(stack: string, operation: StackOperation, startedAt: Date, durationMs: number): void {
    if (this.rows.has(stack))
      this.ended.set(stack, { at: startedAt.toISOString(), operation, durationMs: Math.round(durationMs) });
  }

  ingress(stack: string, ips: readonly string[]): void {
    const row = this.rows.get(stack);
    if (row !== undefined) row.ingress = ips.slice(0, MAX_INGRESS);
  }

  driftCorrected(stack: string, putBack: string): void {
    const row = this.rows.get(stack);
    if (row !== undefined) row.lastDriftCorrection = { at: this.now().toISOString(), putBack: cut(putBack) };
  }

  /** Every reconcile result (the queue's onResult). */
  reconciled(stack: string, result: ReconcileResult): void {
    const row = this.rows.get(stack);
    const ended = this.ended.get(stack);
    this.ended.delete(stack);
    if (row === undefined) return;
    if (ended !== undefined) row.lastUp = { ...ended, result: result.kind };
    const message =
      result.kind === "retry" ? describeError(result.error) : result.kind === "giveUp" ? result.reason : undefined;
    if (message !== undefined) row.lastError = { at: this.now().toISOString(), message: cut(message) };
  }

  /** Where the quota rows come from (the Service controller's quota gate, with Compute access). */
  quotasFrom(source: () => QuotaStatus): void {
    this.quotaSource = source;
  }

  /** The quota rows, or undefined without a source. */
  quotas(): QuotaStatus | undefined {
    return this.quotaSource?.();
  }

  /** Copies, in compareStacks order. */
  list(): StatusRow[] {
    return [...this.rows.values()].sort((a, b) => compareStacks(a.stack, b.stack)).map((row) => structuredClone(row));
  }
}

const RESULTS: readonly string[] = ["ok", "retry", "retryAfter", "giveUp"];
const OPERATIONS: readonly string[] = ["up", "refresh", "destroy"];

function isStringList(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

function parseLastUp(value: unknown): LastUp | null | undefined {
  if (value === null) return null;
  if (!isRecord(value) || typeof value.at !== "string" || typeof value.durationMs !== "number") return undefined;
  const { operation, result } = value;
  if (
    typeof operation !== "string" ||
    !OPERATIONS.includes(operation) ||
    typeof result !== "string" ||
    !RESULTS.includes(result)
  )
    return undefined;
  return {
    at: value.at,
    operation: operation as StackOperation,
    result: result as LastUp["result"],
    durationMs: value.durationMs,
  };
}

/** An `{ at, <field>: string }` fact, null, or undefined when malformed. */
function parseFact<K extends string>(
  value: unknown,
  field: K,
): ({ at: string } & Record<K, string>) | null | undefined {
  if (value === null) return null;
  if (!isRecord(value) || typeof value.at !== "string" || typeof value[field] !== "string") return undefined;
  return { at: value.at, [field]: value[field] } as { at: string } & Record<K, string>;
}

function parseRow(value: unknown): StatusRow | undefined {
  if (!isRecord(value) || typeof value.stack !== "string" || (value.kind !== "cluster" && value.kind !== "service"))
    return undefined;
  if (
    !(value.service === null || typeof value.service === "string") ||
    !(value.ingress === null || isStringList(value.ingress))
  )
    return undefined;
  const lastUp = parseLastUp(value.lastUp);
  const lastDriftCorrection = parseFact(value.lastDriftCorrection, "putBack");
  const lastError = parseFact(value.lastError, "message");
  if (lastUp === undefined || lastDriftCorrection === undefined || lastError === undefined) return undefined;
  return {
    stack: value.stack,
    kind: value.kind,
    service: value.service,
    lastUp,
    ingress: value.ingress,
    lastDriftCorrection,
    lastError,
  };
}

function parseQuotaRow(value: unknown): QuotaRow | undefined {
  if (!isRecord(value)) return undefined;
  const { quota, scope, region, limit, usage, headroom } = value;
  if (typeof quota !== "string" || typeof scope !== "string") return undefined;
  if (typeof limit !== "number" || typeof usage !== "number" || typeof headroom !== "number") return undefined;
  if (region !== undefined && typeof region !== "string") return undefined;
  return { quota, scope, ...(region !== undefined ? { region } : {}), limit, usage, headroom };
}

function parseQuotaStatus(value: unknown): QuotaStatus | undefined {
  if (!isRecord(value) || !(value.readAt === null || typeof value.readAt === "string")) return undefined;
  if (!Array.isArray(value.quotas) || !isStringList(value.held)) return undefined;
  const quotas: QuotaRow[] = [];
  for (const raw of value.quotas) {
    const row = parseQuotaRow(raw);
    if (row === undefined) return undefined;
    quotas.push(row);
  }
  return { readAt: value.readAt, quotas, held: value.held };
}

/** A `/status` answer checked (dccm status reads it from another process): the document, or what is wrong with it. */
export function parseStatusDocument(value: unknown): StatusDocument | string {
  if (
    !isRecord(value) ||
    typeof value.leader !== "boolean" ||
    typeof value.synced !== "boolean" ||
    !Array.isArray(value.stacks)
  ) {
    return "expected an object with leader, synced and stacks";
  }
  const stacks: StatusRow[] = [];
  for (const [index, raw] of value.stacks.entries()) {
    const row = parseRow(raw);
    if (row === undefined) return `stacks[${index}] is not a stack's row`;
    stacks.push(row);
  }
  if (value.quotas === undefined) return { leader: value.leader, synced: value.synced, stacks };
  const quotas = parseQuotaStatus(value.quotas);
  if (quotas === undefined) return "quotas is not the quotas' status";
  return { leader: value.leader, synced: value.synced, stacks, quotas };
}
