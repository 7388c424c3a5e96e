/**
 * The work queue shared by the daemon (keyed by stack) and the node controller (keyed by Node
 * name). Event handlers only enqueue a key; a worker reconciles it from the caches.
 *
 * - A key never runs twice at once. Enqueues while it waits coalesce into its one pending run;
 *   enqueues while it runs coalesce into exactly one more run afterwards (bursts of watch events
 *   cost one reconcile), and their flags are merged into that run.
 * - At most `parallelism` keys run at a time.
 * - Per-key exponential backoff with jitter on `retry`, a fixed delay on `retryAfter`; `ok` and
 *   `giveUp` forget the failures. The backoff survives re-enqueues: a drift pass, a resync, a
 *   metadata event or a dependent's nudge only merge their flags into the run the timer will
 *   start (against a failing, rate-limited API, every run they started would make it worse).
 *   Only an enqueue flagged `changed` (a new desired state, which may fix the failure) runs at
 *   once, whether the key waits out a backoff or fails while it arrived. It does not forget the
 *   failures: if the new state fails too, the backoff goes on growing.
 * - drain() stops taking work and waits for the runs in progress; start() resumes after it (the
 *   node controller is stopped and started again when leadership moves).
 */
import { jitteredBackoffMs } from "./backoff";

export type ReconcileResult =
  | { readonly kind: "ok" }
  | { readonly kind: "retry"; readonly error: unknown }
  | { readonly kind: "retryAfter"; readonly ms: number; readonly reason: string }
  | { readonly kind: "giveUp"; readonly reason: string };

export const OK: ReconcileResult = Object.freeze({ kind: "ok" });

export interface WorkItem {
  readonly key: string;
  /** Merged flags of every enqueue that coalesced into this run. */
  readonly refresh: boolean;
}

export interface EnqueueFlags {
  /** Ask for a refreshing run (the daemon's drift pass); merged across coalesced enqueues. */
  refresh?: boolean;
  /** The key's desired state changed: run without waiting out a backoff. */
  changed?: boolean;
}

/** A pending retry; the daemon uses real timers, tests a fake clock. */
export interface RetryTimer {
  cancel(): void;
}

export type ScheduleRetry = (ms: number, run: () => void) => RetryTimer;

function realTimer(ms: number, run: () => void): RetryTimer {
  const timer = setTimeout(run, ms);
  // A pending retry must not keep a stopping process alive.
  timer.unref();
  return { cancel: () => clearTimeout(timer) };
}

export type Worker = (item: WorkItem) => Promise<ReconcileResult>;

export interface QueueOptions {
  /** Keys run at once. */
  parallelism: number;
  /** First retry delay; doubles per consecutive failure of a key. Default 1 s. */
  backoffBaseMs?: number;
  /** Default 5 min. */
  backoffMaxMs?: number;
  /**
   * Each backoff is spread uniformly over ±this fraction (capped at the maximum), so keys that
   * failed together (one API outage) do not retry in lockstep. Default 0.1; 0 for none.
   */
  backoffJitter?: number;
  /** Uniform in [0, 1); injectable for tests. Default Math.random. */
  random?: () => number;
  /** Starts a retry timer; injectable for tests. Default: an unref'd setTimeout. */
  scheduleRetry?: ScheduleRetry;
  /** Number of keys waiting out a failure backoff (not a retryAfter), after every change. */
  onBackoff?: (keys: number) => void;
  /** Enqueues are kept but nothing runs until start(). Default false: runs from construction. */
  paused?: boolean;
  /** Observes every run (logs, metrics); `failures` is the key's consecutive failure count after it. Must not throw. */
  onResult?: (item: WorkItem, result: ReconcileResult, failures: number) => void;
  /** Number of keys waiting for a worker, after every change. */
  onDepth?: (depth: number) => void;
}

interface KeyState {
  queued: boolean;
  running: boolean;
  /** Enqueued again while running: run once more afterwards. */
  dirty: boolean;
  /** An enqueue since the last run started carried a new desired state. */
  changed: boolean;
  refresh: boolean;
  failures: number;
  timer?: RetryTimer;
  /** The timer waits out a failure backoff (counted by onBackoff), not a retryAfter. */
  timerIsBackoff: boolean;
}

export class KeyedQueue {
  /** Only keys with something going on: idle keys are dropped, so Node churn does not grow it. */
  private readonly states = new Map<string, KeyState>();
  /** FIFO of keys waiting for a worker, consumed from `readyHead` (Array.shift is O(n) on long queues). */
  private ready: string[] = [];
  private readyHead = 0;
  private running = 0;
  private phase: "paused" | "running" | "stopped";
  private idleWaiters: (() => void)[] = [];
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly backoffJitter: number;
  private readonly random: () => number;
  private readonly scheduleRetry: ScheduleRetry;
  private backingOff = 0;

  constructor(
    private readonly worker: Worker,
    private readonly options: QueueOptions,
  ) {
    this.phase = options.paused === true ? "paused" : "running";
    this.backoffBaseMs = options.backoffBaseMs ?? 1000;
    this.backoffMaxMs = options.backoffMaxMs ?? 300_000;
    this.backoffJitter = options.backoffJitter ?? 0.1;
    this.random = options.random ?? Math.random;
    this.scheduleRetry = options.scheduleRetry ?? realTimer;
  }

  /** Runs the queued keys: after construction with `paused`, or again after drain(). */
  start(): void {
    if (this.phase === "running") return;
    this.phase = "running";
    this.pump();
  }

  /**
   * Schedules `key`; while it waits or runs, further calls merge into a single next run. A key
   * waiting out a backoff or a retryAfter runs when its timer fires unless `changed`. Dropped
   * after drain() until the next start().
   */
  enqueue(key: string, flags: EnqueueFlags = {}): void {
    if (this.phase === "stopped") return;
    const state = this.state(key);
    state.refresh = state.refresh || flags.refresh === true;
    state.changed = state.changed || flags.changed === true;
    if (state.running) {
      state.dirty = true;
      return;
    }
    if (state.queued) return;
    if (state.timer !== undefined) {
      if (flags.changed !== true) return;
      this.cancelTimer(state);
    }
    this.makeReady(key, state);
  }

  private makeReady(key: string, state: KeyState): void {
    state.queued = true;
    this.ready.push(key);
    this.report();
    this.pump();
  }

  private cancelTimer(state: KeyState): void {
    state.timer?.cancel();
    state.timer = undefined;
    if (state.timerIsBackoff) {
      state.timerIsBackoff = false;
      this.backingOff--;
      this.reportBackoff();
    }
  }

  /** Clears a key's failure count (its object is gone: a new one starts with no backoff). */
  forget(key: string): void {
    const state = this.states.get(key);
    if (state === undefined) return;
    state.failures = 0;
    this.prune(key, state);
  }

  /** Keys waiting for a worker. */
  depth(): number {
    return this.ready.length - this.readyHead;
  }

  /** Runs in progress. */
  active(): number {
    return this.running;
  }

  /** Queued, running or waiting out a backoff. */
  isBusy(key: string): boolean {
    const state = this.states.get(key);
    return state !== undefined && (state.running || state.queued || state.timer !== undefined);
  }

  /** Keys waiting out a backoff or a retryAfter, sorted (for tests: what idle() does not wait for). */
  waiting(): string[] {
    return [...this.states]
      .filter(([, state]) => state.timer !== undefined && !state.queued && !state.running)
      .map(([key]) => key)
      .sort();
  }

  /** Takes no more work, cancels backoff timers and forgets failures, and waits for the runs in progress. */
  async drain(): Promise<void> {
    this.phase = "stopped";
    for (const [key, state] of this.states) {
      this.cancelTimer(state);
      state.queued = false;
      state.dirty = false;
      state.changed = false;
      state.refresh = false;
      state.failures = 0;
      this.prune(key, state);
    }
    this.ready = [];
    this.readyHead = 0;
    this.report();
    await this.idle();
  }

  /**
   * Resolves when nothing is running and nothing is queued to run (for tests and benchmarks).
   * Keys waiting out a backoff do not count: their timers may be minutes away.
   */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private isIdle(): boolean {
    return this.running === 0 && (this.phase !== "running" || this.depth() === 0);
  }

  private state(key: string): KeyState {
    let state = this.states.get(key);
    if (state === undefined) {
      state = {
        queued: false,
        running: false,
        dirty: false,
        changed: false,
        refresh: false,
        failures: 0,
        timerIsBackoff: false,
      };
      this.states.set(key, state);
    }
    return state;
  }

  private prune(key: string, state: KeyState): void {
    if (
      !state.queued &&
      !state.running &&
      !state.dirty &&
      !state.refresh &&
      state.failures === 0 &&
      state.timer === undefined
    )
      this.states.delete(key);
  }

  private report(): void {
    try {
      this.options.onDepth?.(this.depth());
    } catch {
      // Like onResult: a broken metric must not wedge the queue (or reject a run).
    }
  }

  private reportBackoff(): void {
    try {
      this.options.onBackoff?.(this.backingOff);
    } catch {
      // As report().
    }
  }

  private pump(): void {
    while (this.phase === "running" && this.running < this.options.parallelism && this.depth() > 0) {
      const key = this.ready[this.readyHead++];
      if (this.readyHead > 1024 && this.readyHead * 2 > this.ready.length) {
        this.ready = this.ready.slice(this.readyHead);
        this.readyHead = 0;
      }
      const state = this.state(key);
      state.queued = false;
      state.running = true;
      const item: WorkItem = { key, refresh: state.refresh };
      state.refresh = false;
      // Only a change that arrives from now on may cut this run's backoff short.
      state.changed = false;
      this.running++;
      this.report();
      // runOne never rejects; the worker starts synchronously, so callers see it running at once.
      void this.runOne(item, state);
    }
    if (this.isIdle() && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  private async runOne(item: WorkItem, state: KeyState): Promise<void> {
    let result: ReconcileResult;
    try {
      result = await this.worker(item);
    } catch (error) {
      result = { kind: "retry", error };
    }
    this.running--;
    state.running = false;
    // retryAfter is a wait, not a failure: it neither grows nor resets the backoff.
    if (result.kind === "ok" || result.kind === "giveUp") state.failures = 0;
    else if (result.kind === "retry") state.failures++;
    try {
      this.options.onResult?.(item, result, state.failures);
    } catch {
      // Observers are best effort; a broken logger must not wedge the queue.
    }
    // When the key runs again without new input; undefined: only when enqueued.
    const retryIn =
      result.kind === "retry"
        ? jitteredBackoffMs(state.failures, this.backoffBaseMs, this.backoffMaxMs, this.backoffJitter, this.random())
        : result.kind === "retryAfter"
          ? result.ms
          : undefined;
    if (this.phase !== "stopped") {
      const again = state.dirty;
      state.dirty = false;
      // A failed or deferred run also hands its refresh wish to the next one.
      if (retryIn !== undefined) state.refresh = state.refresh || item.refresh;
      if (again && (retryIn === undefined || state.changed)) {
        this.makeReady(item.key, state);
      } else if (retryIn !== undefined) {
        // Enqueues during the run (without a change) merged into the run this timer starts.
        state.timerIsBackoff = result.kind === "retry";
        if (state.timerIsBackoff) {
          this.backingOff++;
          this.reportBackoff();
        }
        state.timer = this.scheduleRetry(retryIn, () => {
          if (state.timer === undefined) return;
          state.timer = undefined;
          if (state.timerIsBackoff) {
            state.timerIsBackoff = false;
            this.backingOff--;
            this.reportBackoff();
          }
          if (this.phase !== "stopped") this.makeReady(item.key, state);
        });
      }
    }
    this.prune(item.key, state);
    this.pump();
  }
}
