/**
 * The adapter of quotaHold.ts: before a Service stack's first up, the quotas (regions.get,
 * projects.get) as read at most once per `ttlMs` for every Service, less what the first ups let
 * through since that read claim; a Service whose up would exceed one is held (Warning
 * QuotaExceeded, no run) and enqueued again as soon as a Service stack is removed, with the quota
 * wait as a backstop. A failed read holds nothing: the run goes ahead and meets GCE's own refusal.
 */
import type { Logger } from "pino";

import type { ServiceDesired } from "../../model";
import type { ProjectQuotas } from "../../gce/quotas";
import { describeError } from "../../runtime/errors";
import type { EventRecorder, EventTarget } from "../../runtime/events";
import type { EnqueueFlags, ReconcileResult } from "../../runtime/queue";
import type { ControllerMetrics } from "../metrics";
import { QUOTA_EXCEEDED, QUOTA_RETRY_MS } from "../failures";
import type { QuotaStatus } from "../status";
import { quotaHeadroom, quotaHeldMessage, quotaNeeds, quotaShortfalls, type QuotaNeed } from "../../gce/quotaHold";

/** How long one read of the quotas serves every Service's first up. */
export const QUOTA_READ_TTL_MS = 30_000;

export interface QuotaGateDeps {
  /** regions.get and projects.get (gce/quotas.ts readProjectQuotas). */
  read: (signal: AbortSignal) => Promise<ProjectQuotas>;
  enqueue: (stack: string, flags?: EnqueueFlags) => void;
  events: Pick<EventRecorder, "record">;
  metrics: Pick<ControllerMetrics, "quotaHeadroom" | "servicesHeldForQuota">;
  logger: Logger;
  signal: AbortSignal;
  ttlMs?: number;
  now?: () => number;
}

export class QuotaGate {
  private readonly ttlMs: number;
  private readonly now: () => number;
  private last: { quotas: ProjectQuotas; at: number } | undefined;
  private reading: Promise<ProjectQuotas> | undefined;
  /** What the first ups let through since the last read create; GCE's usage counts it from the next read on. */
  private claims = new Map<string, readonly QuotaNeed[]>();
  private readonly held = new Set<string>();

  constructor(private readonly deps: QuotaGateDeps) {
    this.ttlMs = deps.ttlMs ?? QUOTA_READ_TTL_MS;
    this.now = deps.now ?? Date.now;
  }

  /**
   * Before a first up: undefined when it fits (its needs are claimed) or the quotas cannot be
   * read; else the Service is held, told, and retried after the quota wait unless released sooner.
   */
  async check(stack: string, target: EventTarget, service: ServiceDesired): Promise<ReconcileResult | undefined> {
    let quotas: ProjectQuotas;
    try {
      quotas = await this.quotas();
    } catch (error) {
      this.deps.logger.warn(
        { stack, err: describeError(error) },
        "could not read GCE quotas; the first up goes ahead unchecked",
      );
      return undefined;
    }
    const needs = quotaNeeds(service);
    const others = [...this.claims].filter(([key]) => key !== stack).flatMap(([, claim]) => claim);
    const shortfalls = quotaShortfalls(needs, quotas, others);
    if (shortfalls.length === 0) {
      this.claims.set(stack, needs);
      this.hold(stack, false);
      return undefined;
    }
    this.hold(stack, true);
    const message = quotaHeldMessage(shortfalls, QUOTA_RETRY_MS);
    await this.deps.events.record(target, "Warning", QUOTA_EXCEEDED, message);
    return {
      kind: "retryAfter",
      ms: QUOTA_RETRY_MS,
      reason: `held for GCE quota ${shortfalls.map((s) => s.metric).join(", ")}`,
    };
  }

  /**
   * A Service stack was removed (`destroyed`: its resources were deleted) or a held Service went:
   * usage may have fallen, so the next check reads the quotas again, and every held Service is
   * enqueued at once.
   */
  released(stack: string, destroyed: boolean): void {
    const wasHeld = this.held.has(stack);
    this.claims.delete(stack);
    this.hold(stack, false);
    if (!destroyed && !wasHeld) return;
    this.last = undefined;
    for (const key of this.held) this.deps.enqueue(key, { changed: true });
  }

  status(): QuotaStatus {
    return {
      readAt: this.last === undefined ? null : new Date(this.last.at).toISOString(),
      quotas: this.last === undefined ? [] : quotaHeadroom(this.last.quotas).map((row) => ({ ...row })),
      held: [...this.held].sort(),
    };
  }

  /** The quotas as last read, or read now when older than the TTL; one read at a time for every caller. */
  private async quotas(): Promise<ProjectQuotas> {
    if (this.last !== undefined && this.now() - this.last.at < this.ttlMs) return this.last.quotas;
    this.reading ??= this.deps.read(this.deps.signal).finally(() => (this.reading = undefined));
    const quotas = await this.reading;
    if (this.last === undefined || this.last.quotas !== quotas) {
      // GCE's usage now counts what the claims were for (or the runs failed): claims start over.
      this.last = { quotas, at: this.now() };
      this.claims = new Map();
      for (const row of quotaHeadroom(quotas))
        this.deps.metrics.quotaHeadroom.set({ quota: row.quota, scope: row.scope }, row.headroom);
    }
    return quotas;
  }

  private hold(stack: string, held: boolean): void {
    const before = this.held.size;
    if (held) this.held.add(stack);
    else this.held.delete(stack);
    if (this.held.size !== before) this.deps.metrics.servicesHeldForQuota.set(this.held.size);
  }
}
