/** The full refresh of every stack (`up --refresh`), on timers: its cadence and how many run at once. */
import type { EnqueueFlags } from "../runtime/queue";
import { jitteredDelay } from "../runtime/periodic";

/** Pure: the first full refresh of a stack after a start, at a uniform phase of the period (`random` in [0, 1)), so the stacks of a restart spread evenly over it. */
export function firstRefreshDelay(periodMs: number, random: number): number {
  return Math.max(1, Math.round(periodMs * random));
}

/** Pure: how long a full refresh waits when the most that may run at once already do. */
export function refreshWaitMs(periodMs: number): number {
  return Math.min(60_000, Math.max(1000, Math.round(periodMs / 100)));
}

export interface FullRefreshOptions {
  periodMs: number;
  /** Fraction of the period. */
  jitter: number;
  signal: AbortSignal;
  enqueue: (stack: string, flags?: EnqueueFlags) => void;
  /** The most full refreshes enqueued and not yet done at once (half the workers: changes keep the rest). */
  maxInFlight: number;
  /** A refresh enqueued longer ago than this no longer counts as in flight (its run ended at its deadline, or it waits out a backoff). */
  inFlightMs: number;
}

/**
 * The full refresh of every stack (`up --refresh`, which reads every field the provider reads):
 * each stack once a period, the first at a uniform phase of it, then every period ± jitter, never
 * more than maxInFlight at once. A stack is armed after each successful run of it; a run that was
 * a full refresh ends its turn in flight then.
 */
export class FullRefreshTimers {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly seen = new Set<string>();
  /** Stack → when its refresh was enqueued. */
  private readonly inFlight = new Map<string, number>();

  constructor(private readonly options: FullRefreshOptions) {}

  arm(stack: string): void {
    this.inFlight.delete(stack);
    if (this.timers.has(stack) || this.options.signal.aborted) return;
    const { periodMs, jitter } = this.options;
    const delay = this.seen.has(stack)
      ? jitteredDelay(periodMs, jitter, Math.random())
      : firstRefreshDelay(periodMs, Math.random());
    this.seen.add(stack);
    this.schedule(stack, delay);
  }

  private schedule(stack: string, delayMs: number): void {
    const timer = setTimeout(() => this.fire(stack), delayMs);
    timer.unref();
    this.timers.set(stack, timer);
  }

  private fire(stack: string): void {
    this.timers.delete(stack);
    if (this.options.signal.aborted) return;
    const now = Date.now();
    for (const [other, since] of this.inFlight) if (now - since > this.options.inFlightMs) this.inFlight.delete(other);
    if (this.inFlight.size >= this.options.maxInFlight) {
      this.schedule(stack, refreshWaitMs(this.options.periodMs));
      return;
    }
    this.inFlight.set(stack, now);
    this.options.enqueue(stack, { refresh: true });
  }

  disarm(stack: string): void {
    const timer = this.timers.get(stack);
    if (timer !== undefined) clearTimeout(timer);
    this.timers.delete(stack);
    this.inFlight.delete(stack);
    this.seen.delete(stack);
  }

  stop(): void {
    for (const stack of [...this.timers.keys()]) this.disarm(stack);
  }
}
