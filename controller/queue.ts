/**
 * The work queue shared by the daemon (keyed by stack) and the node controller (keyed by Node
 * name). Event handlers only enqueue a key; a worker reconciles it from the caches.
 *
 * - A key never runs twice at once. Enqueues while it waits coalesce into its one pending run;
 *   enqueues while it runs coalesce into exactly one more run afterwards (bursts of watch events
 *   cost one reconcile), and their flags are merged into that run.
 * - At most `parallelism` keys run at a time.
 * - Per-key exponential backoff on `retry`, a fixed delay on `retryAfter`; `ok` and `giveUp`
 *   forget the failures. A plain enqueue cuts a pending backoff short (new input may fix the
 *   failure); `keepBackoff` does not.
 * - drain() stops taking work and waits for the runs in progress; start() resumes after it (the
 *   node controller is stopped and started again when leadership moves).
 */
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
  /** While the key waits out a backoff, only merge the flags: the retry keeps its time. */
  keepBackoff?: boolean;
}

export type Worker = (item: WorkItem) => Promise<ReconcileResult>;

export interface QueueOptions {
  /** Keys run at once. */
  parallelism: number;
  /** First retry delay; doubles per consecutive failure of a key. Default 1 s. */
  backoffBaseMs?: number;
  /** Default 5 min. */
  backoffMaxMs?: number;
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
  refresh: boolean;
  failures: number;
  timer?: NodeJS.Timeout;
}

export function backoffMs(failures: number, baseMs: number, maxMs: number): number {
  if (failures <= 0) return 0;
  return Math.min(maxMs, baseMs * 2 ** Math.min(failures - 1, 30));
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

  constructor(
    private readonly worker: Worker,
    private readonly options: QueueOptions,
  ) {
    this.phase = options.paused === true ? "paused" : "running";
    this.backoffBaseMs = options.backoffBaseMs ?? 1000;
    this.backoffMaxMs = options.backoffMaxMs ?? 300_000;
  }

  /** Runs the queued keys: after construction with `paused`, or again after drain(). */
  start(): void {
    if (this.phase === "running") return;
    this.phase = "running";
    this.pump();
  }

  /**
   * Schedules `key`; while it waits or runs, further calls merge into a single next run. Dropped
   * after drain() until the next start().
   */
  enqueue(key: string, flags: EnqueueFlags = {}): void {
    if (this.phase === "stopped") return;
    const state = this.state(key);
    state.refresh = state.refresh || flags.refresh === true;
    if (flags.keepBackoff === true && state.timer !== undefined) return;
    if (state.running) {
      state.dirty = true;
      return;
    }
    if (state.queued) return;
    if (state.timer !== undefined) {
      clearTimeout(state.timer);
      state.timer = undefined;
    }
    state.queued = true;
    this.ready.push(key);
    this.report();
    this.pump();
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

  /** Takes no more work, cancels backoff timers and forgets failures, and waits for the runs in progress. */
  async drain(): Promise<void> {
    this.phase = "stopped";
    for (const [key, state] of this.states) {
      if (state.timer !== undefined) clearTimeout(state.timer);
      state.timer = undefined;
      state.queued = false;
      state.dirty = false;
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
      state = { queued: false, running: false, dirty: false, refresh: false, failures: 0 };
      this.states.set(key, state);
    }
    return state;
  }

  private prune(key: string, state: KeyState): void {
    if (!state.queued && !state.running && !state.dirty && !state.refresh && state.failures === 0 && state.timer === undefined) this.states.delete(key);
  }

  private report(): void {
    try {
      this.options.onDepth?.(this.depth());
    } catch {
      // Like onResult: a broken metric must not wedge the queue (or reject a run).
    }
  }

  private pump(): void {
    while (this.phase === "running" && this.running < this.options.parallelism && this.depth() > 0) {
      const key = this.ready[this.readyHead++] as string;
      if (this.readyHead > 1024 && this.readyHead * 2 > this.ready.length) {
        this.ready = this.ready.slice(this.readyHead);
        this.readyHead = 0;
      }
      const state = this.state(key);
      state.queued = false;
      state.running = true;
      const item: WorkItem = { key, refresh: state.refresh };
      state.refresh = false;
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
    const retryIn = result.kind === "retry" ? backoffMs(state.failures, this.backoffBaseMs, this.backoffMaxMs) : result.kind === "retryAfter" ? result.ms : undefined;
    if (this.phase !== "stopped") {
      if (state.dirty) {
        state.dirty = false;
        // The extra run also carries the refresh wish of the run that failed.
        if (retryIn !== undefined) state.refresh = state.refresh || item.refresh;
        this.enqueue(item.key);
      } else if (retryIn !== undefined) {
        state.refresh = state.refresh || item.refresh;
        state.timer = setTimeout(() => {
          state.timer = undefined;
          this.enqueue(item.key);
        }, retryIn);
        // A pending retry must not keep a stopping process alive.
        state.timer.unref();
      }
    }
    this.prune(item.key, state);
    this.pump();
  }
}
