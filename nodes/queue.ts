// A keyed work queue: event handlers add a Node name, workers reconcile it. A key is never
// processed by two workers at once; adds while it is being processed mark it dirty so it runs
// once more afterwards (bursts of informer events coalesce into one reconcile). Failed keys back
// off exponentially per key; successful ones are forgotten.

export type ReconcileResult =
    | { readonly kind: "ok" }
    | { readonly kind: "retry"; readonly error: Error }
    | { readonly kind: "retryAfter"; readonly ms: number }
    | { readonly kind: "giveUp"; readonly reason: string };

export const OK: ReconcileResult = { kind: "ok" };

export interface WorkQueueOptions {
    readonly concurrency: number;
    readonly handler: (key: string) => Promise<ReconcileResult>;
    /** First retry delay; doubles per consecutive failure of the same key. Default 1 s. */
    readonly baseBackoffMs?: number;
    /** Default 5 min. */
    readonly maxBackoffMs?: number;
    /** Observes every result (logging, metrics). Must not throw. */
    readonly onResult?: (key: string, result: ReconcileResult, failures: number) => void;
}

export class WorkQueue {
    private readonly opts: WorkQueueOptions;
    private readonly baseBackoffMs: number;
    private readonly maxBackoffMs: number;
    /** FIFO of keys waiting for a worker; `queued` mirrors it for O(1) membership. */
    private readonly pending: string[] = [];
    private pendingHead = 0;
    private readonly queued = new Set<string>();
    private readonly processing = new Set<string>();
    /** Keys added while processing: re-queued when their run ends. */
    private readonly dirty = new Set<string>();
    private readonly failures = new Map<string, number>();
    private readonly timers = new Map<string, { at: number; timer: NodeJS.Timeout }>();
    private running = 0;
    /** Adds before start() are kept; adds after stop() are dropped (until the next start). */
    private state: "new" | "running" | "stopped" = "new";
    private idleWaiters: (() => void)[] = [];

    constructor(opts: WorkQueueOptions) {
        this.opts = opts;
        this.baseBackoffMs = opts.baseBackoffMs ?? 1000;
        this.maxBackoffMs = opts.maxBackoffMs ?? 300_000;
    }

    start(): void {
        this.state = "running";
        this.pump();
    }

    /** Stops taking work, cancels delayed adds and waits for running handlers to finish. */
    async stop(): Promise<void> {
        this.state = "stopped";
        for (const t of this.timers.values()) {
            clearTimeout(t.timer);
        }
        this.timers.clear();
        this.pending.length = 0;
        this.pendingHead = 0;
        this.queued.clear();
        this.dirty.clear();
        this.failures.clear();
        await this.idle();
    }

    add(key: string): void {
        if (this.state === "stopped") {
            return;
        }
        if (this.processing.has(key)) {
            this.dirty.add(key);
            return;
        }
        if (this.queued.has(key)) {
            return;
        }
        this.queued.add(key);
        this.pending.push(key);
        this.pump();
    }

    /** Adds `key` after `ms`; an earlier pending delayed add wins over a later one. */
    addAfter(key: string, ms: number): void {
        if (this.state === "stopped") {
            return;
        }
        if (ms <= 0) {
            this.add(key);
            return;
        }
        const at = Date.now() + ms;
        const existing = this.timers.get(key);
        if (existing !== undefined) {
            if (existing.at <= at) {
                return;
            }
            clearTimeout(existing.timer);
        }
        const timer = setTimeout(() => {
            this.timers.delete(key);
            this.add(key);
        }, ms);
        // Pending retries must not keep a stopping process alive.
        timer.unref();
        this.timers.set(key, { at, timer });
    }

    /** Clears a key's failure count (e.g. the Node was deleted). */
    forget(key: string): void {
        this.failures.delete(key);
    }

    get length(): number {
        return this.pending.length - this.pendingHead;
    }

    get active(): number {
        return this.running;
    }

    /** Resolves when nothing is queued or running (delayed adds do not count). */
    idle(): Promise<void> {
        if (this.running === 0 && (this.state !== "running" || this.length === 0)) {
            return Promise.resolve();
        }
        return new Promise((resolve) => this.idleWaiters.push(resolve));
    }

    private pump(): void {
        while (this.state === "running" && this.running < this.opts.concurrency && this.length > 0) {
            const key = this.pending[this.pendingHead++] as string;
            if (this.pendingHead > 1024 && this.pendingHead * 2 > this.pending.length) {
                this.pending.splice(0, this.pendingHead);
                this.pendingHead = 0;
            }
            this.queued.delete(key);
            this.processing.add(key);
            this.running++;
            void this.run(key);
        }
        if (this.running === 0 && (this.state !== "running" || this.length === 0)) {
            const waiters = this.idleWaiters;
            this.idleWaiters = [];
            for (const w of waiters) {
                w();
            }
        }
    }

    /** Never rejects: handler errors become `retry` results. */
    private async run(key: string): Promise<void> {
        let result: ReconcileResult;
        try {
            result = await this.opts.handler(key);
        } catch (err) {
            result = { kind: "retry", error: err instanceof Error ? err : new Error(String(err)) };
        }
        this.processing.delete(key);
        this.running--;
        let failures = 0;
        switch (result.kind) {
            case "ok":
            case "giveUp":
                this.failures.delete(key);
                break;
            case "retry": {
                failures = (this.failures.get(key) ?? 0) + 1;
                this.failures.set(key, failures);
                const delay = Math.min(this.maxBackoffMs, this.baseBackoffMs * 2 ** Math.min(failures - 1, 30));
                this.addAfter(key, delay);
                break;
            }
            case "retryAfter":
                this.failures.delete(key);
                this.addAfter(key, result.ms);
                break;
        }
        try {
            this.opts.onResult?.(key, result, failures);
        } catch {
            // Observers are best effort; a broken logger must not wedge the queue.
        }
        if (this.dirty.delete(key)) {
            this.add(key);
        }
        this.pump();
    }
}
