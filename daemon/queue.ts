/**
 * A work queue keyed by stack: never two runs of one key at once, a burst of enqueues while a key
 * waits or runs coalesces into one more run, bounded parallelism across keys, per-key backoff.
 */
export type ReconcileResult =
  | { kind: "ok" }
  | { kind: "retry"; error: unknown }
  | { kind: "retryAfter"; ms: number; reason: string }
  | { kind: "giveUp"; reason: string };

export interface WorkItem {
  key: string;
  /** Merged flags of every enqueue that coalesced into this run. */
  refresh: boolean;
}

export type Worker = (item: WorkItem) => Promise<ReconcileResult>;

export interface QueueOptions {
  parallelism: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Called after each run, for metrics and logs. */
  onResult?: (item: WorkItem, result: ReconcileResult, attempt: number) => void;
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
  private readonly states = new Map<string, KeyState>();
  private readonly ready: string[] = [];
  private active = 0;
  private stopped = false;
  private readonly running = new Set<Promise<void>>();

  constructor(
    private readonly worker: Worker,
    private readonly options: QueueOptions,
  ) {}

  private state(key: string): KeyState {
    let state = this.states.get(key);
    if (state === undefined) {
      state = { queued: false, running: false, dirty: false, refresh: false, failures: 0 };
      this.states.set(key, state);
    }
    return state;
  }

  /**
   * Schedules `key`; while it waits or runs, further calls merge into a single next run. A pending
   * backoff is cut short (new input may fix the failure) unless `keepBackoff` is set.
   */
  enqueue(key: string, flags: { refresh?: boolean; keepBackoff?: boolean } = {}): void {
    if (this.stopped) return;
    const state = this.state(key);
    if (flags.keepBackoff === true && state.timer !== undefined) {
      state.refresh = state.refresh || flags.refresh === true;
      return;
    }
    state.refresh = state.refresh || flags.refresh === true;
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

  depth(): number {
    return this.ready.length;
  }

  isBusy(key: string): boolean {
    const state = this.states.get(key);
    return state !== undefined && (state.running || state.queued || state.timer !== undefined);
  }

  private report(): void {
    this.options.onDepth?.(this.ready.length);
  }

  private pump(): void {
    while (!this.stopped && this.active < this.options.parallelism && this.ready.length > 0) {
      const key = this.ready.shift() as string;
      const state = this.state(key);
      state.queued = false;
      state.running = true;
      const item: WorkItem = { key, refresh: state.refresh };
      state.refresh = false;
      this.active++;
      this.report();
      const run = this.runOne(item, state).finally(() => {
        this.running.delete(run);
      });
      this.running.add(run);
    }
  }

  private async runOne(item: WorkItem, state: KeyState): Promise<void> {
    let result: ReconcileResult;
    try {
      result = await this.worker(item);
    } catch (error) {
      result = { kind: "retry", error };
    }
    this.active--;
    state.running = false;
    if (result.kind === "ok" || result.kind === "giveUp") state.failures = 0;
    else if (result.kind === "retry") state.failures++;
    this.options.onResult?.(item, result, state.failures);
    if (this.stopped) return;
    if (state.dirty) {
      state.dirty = false;
      // A retry run keeps the refresh wish of the run that failed.
      if (result.kind === "retry" || result.kind === "retryAfter") state.refresh = state.refresh || item.refresh;
      this.enqueue(item.key);
    } else if (result.kind === "retry" || result.kind === "retryAfter") {
      const delay = result.kind === "retry" ? backoffMs(state.failures, this.options.backoffBaseMs, this.options.backoffMaxMs) : result.ms;
      state.refresh = state.refresh || item.refresh;
      state.timer = setTimeout(() => {
        state.timer = undefined;
        this.enqueue(item.key);
      }, delay);
      state.timer.unref();
    }
    this.pump();
  }

  /** Takes no more work, cancels backoff timers, and waits for the runs in progress. */
  async drain(): Promise<void> {
    this.stopped = true;
    for (const state of this.states.values()) {
      if (state.timer !== undefined) clearTimeout(state.timer);
      state.timer = undefined;
    }
    this.ready.length = 0;
    this.report();
    await Promise.all([...this.running]);
  }

  /** Resolves when nothing is queued, running or waiting to retry (for tests and benchmarks). */
  async idle(): Promise<void> {
    while (this.running.size > 0 || this.ready.length > 0) await Promise.race([...this.running]);
  }
}
