// controller/queue KeyedQueue, shared by the daemon (keyed by stack) and the node controller
// (keyed by Node name): coalescing with merged flags, one run per key at a time, bounded
// parallelism, per-key backoff that survives re-enqueues (only a changed desired state cuts it
// short), drain and restart.

import * as assert from "node:assert/strict";
import { setTimeout as delay } from "node:timers/promises";

import { backoffMs, jitteredBackoffMs } from "../../../runtime/backoff";
import {
  KeyedQueue,
  OK,
  type EnqueueFlags,
  type ReconcileResult,
  type ScheduleRetry,
  type WorkItem,
} from "../../../runtime/queue";

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve: (value: T) => void = () => undefined;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe("runtime/queue KeyedQueue (the daemon's use)", () => {
  it("backoff doubles from the base and stops at the maximum", () => {
    assert.deepEqual(
      [0, 1, 2, 3, 4, 7, 8, 40].map((failures) => backoffMs(failures, 5000, 300_000)),
      [0, 5000, 10_000, 20_000, 40_000, 300_000, 300_000, 300_000],
    );
  });

  it("never runs one key twice at once; enqueues during a run coalesce into exactly one more run", async () => {
    const gates: { resolve: (value: ReconcileResult) => void }[] = [];
    const runs: WorkItem[] = [];
    let concurrent = 0;
    let maxConcurrent = 0;
    const queue = new KeyedQueue(
      async (item) => {
        runs.push(item);
        concurrent++;
        maxConcurrent = Math.max(maxConcurrent, concurrent);
        const gate = deferred<ReconcileResult>();
        gates.push(gate);
        const result = await gate.promise;
        concurrent--;
        return result;
      },
      { parallelism: 4, backoffBaseMs: 5000, backoffMaxMs: 300_000 },
    );
    queue.enqueue("a");
    for (let i = 0; i < 50; i++) queue.enqueue("a", { refresh: i === 10 });
    assert.equal(runs.length, 1);
    gates[0].resolve({ kind: "ok" });
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(runs, [
      { key: "a", refresh: false },
      { key: "a", refresh: true },
    ]);
    gates[1].resolve({ kind: "ok" });
    await queue.idle();
    assert.equal(runs.length, 2);
    assert.equal(maxConcurrent, 1);
  });

  it("bounds parallelism across keys", async () => {
    const gates: (() => void)[] = [];
    let running = 0;
    let peak = 0;
    const queue = new KeyedQueue(
      async () => {
        running++;
        peak = Math.max(peak, running);
        await new Promise<void>((resolve) => gates.push(resolve));
        running--;
        return { kind: "ok" };
      },
      { parallelism: 2, backoffBaseMs: 1, backoffMaxMs: 1 },
    );
    for (const key of ["a", "b", "c", "d", "e"]) queue.enqueue(key);
    assert.equal(running, 2);
    assert.equal(queue.depth(), 3);
    while (gates.length > 0 || running > 0) {
      gates.shift()?.();
      await new Promise((resolve) => setImmediate(resolve));
    }
    await queue.idle();
    assert.equal(peak, 2);
  });

  it("retries a failure after its backoff; a plain enqueue does not cut the wait short, a changed one does", async () => {
    const results: ReconcileResult[] = [{ kind: "retry", error: new Error("boom") }, { kind: "ok" }, { kind: "ok" }];
    const seen: number[] = [];
    const outcomes: string[] = [];
    const queue = new KeyedQueue(
      async () => {
        seen.push(Date.now());
        return results.shift() ?? { kind: "ok" };
      },
      {
        parallelism: 1,
        backoffBaseMs: 60_000,
        backoffMaxMs: 60_000,
        onResult: (item, result, failures) => outcomes.push(`${item.key}:${result.kind}:${failures}`),
      },
    );
    queue.enqueue("a");
    await queue.idle();
    assert.deepEqual(outcomes, ["a:retry:1"]);
    assert.equal(queue.isBusy("a"), true);
    queue.enqueue("a", { refresh: true });
    queue.enqueue("a");
    await queue.idle();
    assert.equal(seen.length, 1);
    queue.enqueue("a", { changed: true });
    await queue.idle();
    assert.deepEqual(outcomes, ["a:retry:1", "a:ok:0"]);
    assert.equal(queue.isBusy("a"), false);
  });

  it("drain waits for the running item and takes no more work", async () => {
    const gate = deferred<ReconcileResult>();
    const keys: string[] = [];
    const queue = new KeyedQueue(
      async (item) => {
        keys.push(item.key);
        return gate.promise;
      },
      { parallelism: 1, backoffBaseMs: 1, backoffMaxMs: 1 },
    );
    queue.enqueue("a");
    queue.enqueue("b");
    const drained = queue.drain();
    queue.enqueue("c");
    gate.resolve({ kind: "ok" });
    await drained;
    assert.deepEqual(keys, ["a"]);
  });
});

describe("runtime/queue KeyedQueue (the node controller's use)", () => {
  it("coalesces adds of a queued key into one run", async () => {
    const runs: string[] = [];
    const q = new KeyedQueue(
      async ({ key }) => {
        runs.push(key);
        return OK;
      },
      { parallelism: 1, paused: true },
    );
    q.enqueue("a");
    q.enqueue("a");
    q.enqueue("b");
    q.enqueue("a");
    q.start();
    await q.idle();
    assert.deepEqual(runs, ["a", "b"]);
    await q.drain();
  });

  it("never runs one key twice at once; an add during a run re-runs it after", async () => {
    let concurrent = 0;
    let maxConcurrent = 0;
    let runs = 0;
    const q = new KeyedQueue(
      async () => {
        concurrent++;
        maxConcurrent = Math.max(maxConcurrent, concurrent);
        runs++;
        await delay(20);
        concurrent--;
        return OK;
      },
      { parallelism: 4 },
    );
    q.enqueue("k");
    await delay(5);
    q.enqueue("k");
    q.enqueue("k");
    await delay(5);
    await q.idle();
    assert.equal(maxConcurrent, 1);
    assert.equal(runs, 2);
    await q.drain();
  });

  it("bounds concurrency across keys", async () => {
    let concurrent = 0;
    let maxConcurrent = 0;
    const q = new KeyedQueue(
      async () => {
        concurrent++;
        maxConcurrent = Math.max(maxConcurrent, concurrent);
        await delay(5);
        concurrent--;
        return OK;
      },
      { parallelism: 3 },
    );
    for (let i = 0; i < 20; i++) {
      q.enqueue(`k${i}`);
    }
    await q.idle();
    assert.equal(maxConcurrent, 3);
    await q.drain();
  });

  it("retries with doubling backoff, forgets on success, reports failures", async () => {
    const times: number[] = [];
    const seen: [ReconcileResult["kind"], number][] = [];
    let n = 0;
    const q = new KeyedQueue(
      async () => {
        times.push(Date.now());
        return ++n <= 3 ? { kind: "retry", error: new Error(`fail ${n}`) } : OK;
      },
      {
        parallelism: 1,
        backoffBaseMs: 10,
        backoffJitter: 0,
        onResult: (_item, r, failures) => seen.push([r.kind, failures]),
      },
    );
    q.enqueue("k");
    for (let i = 0; i < 100 && n < 4; i++) {
      await delay(10);
    }
    assert.equal(n, 4);
    assert.deepEqual(seen, [
      ["retry", 1],
      ["retry", 2],
      ["retry", 3],
      ["ok", 0],
    ]);
    const gaps = times.slice(1).map((t, i) => t - (times[i] ?? 0));
    assert.ok((gaps[0] ?? 0) >= 9 && (gaps[1] ?? 0) >= 19 && (gaps[2] ?? 0) >= 39, `gaps ${gaps.join(",")}`);
    assert.equal(q.isBusy("k"), false);
    await q.drain();
  });

  it("retryAfter re-runs after the given delay; giveUp does not re-run", async () => {
    const runs: string[] = [];
    const q = new KeyedQueue(
      async ({ key }) => {
        runs.push(key);
        if (key === "later" && runs.filter((r) => r === "later").length === 1) {
          return { kind: "retryAfter", ms: 20, reason: "not yet" };
        }
        return key === "bad" ? { kind: "giveUp", reason: "no" } : OK;
      },
      { parallelism: 2 },
    );
    q.enqueue("later");
    q.enqueue("bad");
    await delay(60);
    assert.deepEqual(runs.filter((r) => r === "later").length, 2);
    assert.deepEqual(runs.filter((r) => r === "bad").length, 1);
    await q.drain();
  });

  it("a throwing handler counts as retry; drain waits for running work and drops pending retries", async () => {
    let runs = 0;
    const results: ReconcileResult[] = [];
    const q = new KeyedQueue(
      async () => {
        runs++;
        await delay(20);
        throw new Error("boom");
      },
      { parallelism: 1, backoffBaseMs: 5, onResult: (_item, r) => results.push(r) },
    );
    q.enqueue("k");
    await delay(5);
    await q.drain();
    assert.equal(q.active(), 0);
    await delay(30);
    assert.equal(runs, 1);
    assert.equal(results[0]?.kind, "retry");
  });
});

describe("runtime/queue KeyedQueue (shared)", () => {
  it("starts again after drain (leadership regained); adds while drained are dropped", async () => {
    const runs: string[] = [];
    const q = new KeyedQueue(
      async ({ key }) => {
        runs.push(key);
        return OK;
      },
      { parallelism: 1 },
    );
    q.enqueue("a");
    await q.idle();
    await q.drain();
    q.enqueue("dropped");
    q.start();
    q.enqueue("b");
    await q.idle();
    assert.deepEqual(runs, ["a", "b"]);
    await q.drain();
  });

  it("a changed enqueue during a failing run re-runs at once with the failed run's refresh; retryAfter keeps the failure count", async () => {
    const gate = deferred<ReconcileResult>();
    const runs: WorkItem[] = [];
    const outcomes: string[] = [];
    const results: Promise<ReconcileResult>[] = [
      Promise.resolve({ kind: "retry", error: new Error("x") }),
      gate.promise,
      Promise.resolve({ kind: "retryAfter", ms: 60_000, reason: "wait" }),
    ];
    const q = new KeyedQueue(
      async (item) => {
        runs.push(item);
        return (await results.shift()) ?? OK;
      },
      {
        parallelism: 1,
        backoffBaseMs: 60_000,
        onResult: (item, result, failures) => outcomes.push(`${item.key}:${result.kind}:${failures}`),
      },
    );
    q.enqueue("a", { refresh: true });
    await q.idle();
    q.enqueue("a", { changed: true });
    assert.equal(runs.length, 2, "a changed enqueue cuts the 60 s backoff short");
    q.enqueue("a", { changed: true });
    gate.resolve({ kind: "retry", error: new Error("y") });
    await q.idle();
    assert.deepEqual(runs, [
      { key: "a", refresh: true },
      { key: "a", refresh: true },
      { key: "a", refresh: true },
    ]);
    assert.deepEqual(outcomes, ["a:retry:1", "a:retry:2", "a:retryAfter:2"]);
    assert.equal(q.isBusy("a"), true, "waiting out the retryAfter");
    await q.drain();
    assert.equal(q.isBusy("a"), false);
  });

  it("a throwing onResult does not wedge the queue", async () => {
    let runs = 0;
    const q = new KeyedQueue(
      async () => {
        runs++;
        return OK;
      },
      {
        parallelism: 1,
        onResult: () => {
          throw new Error("broken logger");
        },
      },
    );
    q.enqueue("a");
    await q.idle();
    q.enqueue("a");
    await q.idle();
    assert.equal(runs, 2);
  });
});

/** Retry timers the test fires by hand: exact delays, no sleeping. */
class FakeRetries {
  readonly pending: { ms: number; run: () => void; cancelled: boolean }[] = [];
  readonly schedule: ScheduleRetry = (ms, run) => {
    const timer = { ms, run, cancelled: false };
    this.pending.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  };

  /** Delays of the timers still armed. */
  armed(): number[] {
    return this.pending.filter((timer) => !timer.cancelled).map((timer) => timer.ms);
  }

  /** Fires the one armed timer. */
  fire(): void {
    const live = this.pending.filter((timer) => !timer.cancelled);
    assert.equal(live.length, 1, `expected one armed retry timer, found ${live.length}`);
    const [timer] = live;
    timer.cancelled = true;
    timer.run();
  }
}

type Step = { enqueue: EnqueueFlags } | { enqueueDuringRun: EnqueueFlags } | { fire: true };

describe("runtime/queue KeyedQueue backoff survives re-enqueues", () => {
  it("jitter spreads a backoff over ±jitter and never above the maximum", () => {
    assert.deepEqual(
      [
        [1, 0],
        [1, 0.5],
        [1, 0.999],
        [3, 0],
        [7, 0.999],
        [7, 0],
      ].map(([failures, random]) => jitteredBackoffMs(failures, 5000, 300_000, 0.2, random)),
      [4000, 5000, 5998, 16_000, 300_000, 240_000],
    );
  });

  const table: { name: string; steps: Step[]; runs: number; armed: number[] }[] = [
    {
      name: "failures back off base, 2·base, 4·base when only the timer triggers",
      steps: [{ fire: true }, { fire: true }],
      runs: 3,
      armed: [8000],
    },
    {
      name: "a plain enqueue (resync, meta event) during a backoff only waits",
      steps: [{ enqueue: {} }, { enqueue: {} }],
      runs: 1,
      armed: [2000],
    },
    {
      name: "a refresh (drift) enqueue during a backoff only merges its flag",
      steps: [{ enqueue: { refresh: true } }, { fire: true }],
      runs: 2,
      armed: [4000],
    },
    {
      name: "a changed enqueue runs at once; its failure goes on growing the backoff",
      steps: [{ enqueue: { changed: true } }],
      runs: 2,
      armed: [4000],
    },
    {
      name: "a plain enqueue during the failing run (a dependent's nudge) does not re-run it at once",
      steps: [{ enqueueDuringRun: {} }],
      runs: 2,
      armed: [4000],
    },
    {
      name: "a changed enqueue during the failing run re-runs it at once",
      steps: [{ enqueueDuringRun: { changed: true } }],
      runs: 3,
      armed: [8000],
    },
  ];
  for (const row of table) {
    it(row.name, async () => {
      const retries = new FakeRetries();
      let runs = 0;
      let duringRun: EnqueueFlags | undefined;
      const failures: number[] = [];
      const queue: KeyedQueue = new KeyedQueue(
        async () => {
          runs++;
          if (duringRun !== undefined) queue.enqueue("cluster", duringRun);
          duringRun = undefined;
          return { kind: "retry", error: new Error("compute is down") };
        },
        {
          parallelism: 1,
          backoffBaseMs: 2000,
          backoffMaxMs: 300_000,
          backoffJitter: 0,
          scheduleRetry: retries.schedule,
          onResult: (_item, _result, count) => failures.push(count),
        },
      );
      queue.enqueue("cluster");
      await queue.idle();
      for (const step of row.steps) {
        if ("fire" in step) retries.fire();
        else if ("enqueue" in step) queue.enqueue("cluster", step.enqueue);
        else {
          duringRun = step.enqueueDuringRun;
          retries.fire();
        }
        await queue.idle();
      }
      assert.equal(runs, row.runs);
      assert.deepEqual(
        failures,
        Array.from({ length: runs }, (_, index) => index + 1),
      );
      assert.deepEqual(retries.armed(), row.armed);
      await queue.drain();
      assert.deepEqual(retries.armed(), []);
    });
  }

  it("the refresh of enqueues merged during a backoff reaches the retry; success forgets the failures", async () => {
    const retries = new FakeRetries();
    const items: WorkItem[] = [];
    const results: ReconcileResult[] = [
      { kind: "retry", error: new Error("quota") },
      OK,
      { kind: "retry", error: new Error("quota") },
    ];
    const queue = new KeyedQueue(
      async (item) => {
        items.push(item);
        return results.shift() ?? OK;
      },
      { parallelism: 1, backoffBaseMs: 5000, backoffJitter: 0.1, random: () => 0.75, scheduleRetry: retries.schedule },
    );
    queue.enqueue("a");
    await queue.idle();
    queue.enqueue("a", { refresh: true });
    await queue.idle();
    assert.deepEqual(retries.armed(), [5250]);
    retries.fire();
    await queue.idle();
    queue.enqueue("a", { changed: true });
    await queue.idle();
    assert.deepEqual(items, [
      { key: "a", refresh: false },
      { key: "a", refresh: true },
      { key: "a", refresh: false },
    ]);
    assert.deepEqual(retries.armed(), [5250], "after a success the next failure starts again at the base");
    await queue.drain();
  });

  it("reports how many keys wait out a failure backoff (a retryAfter is not one)", async () => {
    const retries = new FakeRetries();
    const reported: number[] = [];
    const queue = new KeyedQueue(
      async (item): Promise<ReconcileResult> =>
        item.key === "later"
          ? { kind: "retryAfter", ms: 1000, reason: "waiting for the cluster stack" }
          : { kind: "retry", error: new Error("down") },
      {
        parallelism: 2,
        backoffBaseMs: 5000,
        backoffJitter: 0,
        scheduleRetry: retries.schedule,
        onBackoff: (keys) => reported.push(keys),
      },
    );
    queue.enqueue("a");
    queue.enqueue("b");
    queue.enqueue("later");
    await queue.idle();
    queue.enqueue("a", { changed: true });
    await queue.idle();
    await queue.drain();
    assert.deepEqual(reported, [1, 2, 1, 2, 1, 0]);
  });

  it("waiting() lists the keys on a backoff or a retryAfter timer, sorted; a plain enqueue leaves one there, a changed one runs it", async () => {
    const retries = new FakeRetries();
    let waitFor = true;
    const queue = new KeyedQueue(
      async (item): Promise<ReconcileResult> =>
        item.key === "later" && waitFor
          ? { kind: "retryAfter", ms: 60_000, reason: "waiting for its NEGs" }
          : item.key === "broken"
            ? { kind: "retry", error: new Error("down") }
            : OK,
      { parallelism: 2, backoffBaseMs: 5000, backoffJitter: 0, scheduleRetry: retries.schedule },
    );
    queue.enqueue("later");
    queue.enqueue("broken");
    queue.enqueue("fine");
    await queue.idle();
    assert.deepEqual(queue.waiting(), ["broken", "later"]);
    waitFor = false;
    queue.enqueue("later");
    await queue.idle();
    assert.deepEqual(queue.waiting(), ["broken", "later"]);
    queue.enqueue("later", { changed: true });
    await queue.idle();
    assert.deepEqual(queue.waiting(), ["broken"]);
    await queue.drain();
    assert.deepEqual(queue.waiting(), []);
  });
});
