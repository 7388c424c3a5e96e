// WorkQueue: coalescing, one worker per key, bounded concurrency, per-key backoff.

import * as assert from "node:assert/strict";
import { setTimeout as delay } from "node:timers/promises";

import { OK, type ReconcileResult, WorkQueue } from "../../nodes/queue";

describe("nodes/queue WorkQueue", () => {
    it("coalesces adds of a queued key into one run", async () => {
        const runs: string[] = [];
        const q = new WorkQueue({ concurrency: 1, handler: async (k) => { runs.push(k); return OK; } });
        q.add("a");
        q.add("a");
        q.add("b");
        q.add("a");
        q.start();
        await q.idle();
        assert.deepEqual(runs, ["a", "b"]);
        await q.stop();
    });

    it("never runs one key twice at once; an add during a run re-runs it after", async () => {
        let concurrent = 0;
        let maxConcurrent = 0;
        let runs = 0;
        const q = new WorkQueue({
            concurrency: 4,
            handler: async () => {
                concurrent++;
                maxConcurrent = Math.max(maxConcurrent, concurrent);
                runs++;
                await delay(20);
                concurrent--;
                return OK;
            },
        });
        q.start();
        q.add("k");
        await delay(5);
        q.add("k");
        q.add("k");
        await delay(5);
        await q.idle();
        assert.equal(maxConcurrent, 1);
        assert.equal(runs, 2);
        await q.stop();
    });

    it("bounds concurrency across keys", async () => {
        let concurrent = 0;
        let maxConcurrent = 0;
        const q = new WorkQueue({
            concurrency: 3,
            handler: async () => {
                concurrent++;
                maxConcurrent = Math.max(maxConcurrent, concurrent);
                await delay(5);
                concurrent--;
                return OK;
            },
        });
        q.start();
        for (let i = 0; i < 20; i++) {
            q.add(`k${i}`);
        }
        await q.idle();
        assert.equal(maxConcurrent, 3);
        await q.stop();
    });

    it("retries with doubling backoff, forgets on success, reports failures", async () => {
        const times: number[] = [];
        const seen: [ReconcileResult["kind"], number][] = [];
        let n = 0;
        const q = new WorkQueue({
            concurrency: 1,
            baseBackoffMs: 10,
            handler: async () => {
                times.push(Date.now());
                return ++n <= 3 ? { kind: "retry", error: new Error(`fail ${n}`) } : OK;
            },
            onResult: (_k, r, failures) => seen.push([r.kind, failures]),
        });
        q.start();
        q.add("k");
        for (let i = 0; i < 100 && n < 4; i++) {
            await delay(10);
        }
        assert.equal(n, 4);
        assert.deepEqual(seen, [["retry", 1], ["retry", 2], ["retry", 3], ["ok", 0]]);
        const gaps = times.slice(1).map((t, i) => t - (times[i] ?? 0));
        assert.ok((gaps[0] ?? 0) >= 9 && (gaps[1] ?? 0) >= 19 && (gaps[2] ?? 0) >= 39, `gaps ${gaps.join(",")}`);
        await q.stop();
    });

    it("retryAfter re-runs after the given delay; giveUp does not re-run", async () => {
        const runs: string[] = [];
        const q = new WorkQueue({
            concurrency: 2,
            handler: async (k) => {
                runs.push(k);
                if (k === "later" && runs.filter((r) => r === "later").length === 1) {
                    return { kind: "retryAfter", ms: 20 };
                }
                return k === "bad" ? { kind: "giveUp", reason: "no" } : OK;
            },
        });
        q.start();
        q.add("later");
        q.add("bad");
        await delay(60);
        assert.deepEqual(runs.filter((r) => r === "later").length, 2);
        assert.deepEqual(runs.filter((r) => r === "bad").length, 1);
        await q.stop();
    });

    it("a throwing handler counts as retry; stop waits for running work and drops pending retries", async () => {
        let runs = 0;
        const q = new WorkQueue({
            concurrency: 1,
            baseBackoffMs: 5,
            handler: async () => {
                runs++;
                await delay(20);
                throw new Error("boom");
            },
        });
        q.start();
        q.add("k");
        await delay(5);
        await q.stop();
        assert.equal(q.active, 0);
        await delay(30);
        assert.equal(runs, 1);
    });
});
