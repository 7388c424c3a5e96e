/** controller/backoff.ts, controller/retry.ts, controller/guards.ts: the runtime's shared pieces. */
import * as assert from "node:assert/strict";
import fc from "fast-check";
import { backoffMs, fullJitterBackoffMs, jitteredBackoffMs } from "../../controller/backoff";
import { isRecord } from "../../controller/guards";
import { ConflictRetriesExhaustedError, retryOnConflict, type ConflictAttempt } from "../../controller/retry";

describe("controller/backoff", () => {
  it("full jitter is uniform below the doubled backoff", () => {
    assert.deepEqual(
      [
        [1, 0],
        [1, 0.5],
        [3, 0.999],
        [10, 0.5],
      ].map(([failures, random]) => fullJitterBackoffMs(failures, 250, 10_000, random)),
      [0, 125, 999, 5000],
    );
  });

  it("every spread stays within [0, max] and never exceeds the plain backoff by more than its jitter", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 1, max: 10_000 }), fc.integer({ min: 1, max: 600_000 }), fc.double({ min: 0, max: 0.999, noNaN: true }), (failures, base, max, random) => {
        const plain = backoffMs(failures, base, max);
        const full = fullJitterBackoffMs(failures, base, max, random);
        const spread = jitteredBackoffMs(failures, base, max, 0.1, random);
        return plain <= max && full >= 0 && full <= plain && spread <= max && Math.abs(spread - plain) <= Math.ceil(plain * 0.1) + 1;
      }),
    );
  });
});

describe("controller/retry retryOnConflict", () => {
  it("re-runs the attempt (which reads again) on a conflict, and returns the first done value", async () => {
    const seen: number[] = [];
    const value = await retryOnConflict("patching Node n1", 5, async (attempt): Promise<ConflictAttempt<string>> => {
      seen.push(attempt);
      return attempt < 3 ? { kind: "conflict", error: new Error(`409 #${attempt}`) } : { kind: "done", value: "patched" };
    });
    assert.equal(value, "patched");
    assert.deepEqual(seen, [1, 2, 3]);
  });

  it("gives up after the last attempt with the last conflict as cause", async () => {
    const last = new Error("409 #2");
    await assert.rejects(
      retryOnConflict("patching Node n1", 2, async (attempt) => ({ kind: "conflict", error: attempt === 2 ? last : new Error("409 #1") })),
      (error: unknown) => error instanceof ConflictRetriesExhaustedError && error.message === "patching Node n1: conflicts on 2 attempts" && error.cause === last,
    );
  });

  it("lets any other error through at once", async () => {
    let calls = 0;
    await assert.rejects(
      retryOnConflict("patching Node n1", 5, async () => {
        calls++;
        throw new Error("403 forbidden");
      }),
      /403 forbidden/,
    );
    assert.equal(calls, 1);
  });
});

describe("controller/guards isRecord", () => {
  const cases: Array<[string, unknown, boolean]> = [
    ["an object", { a: 1 }, true],
    ["an empty object", {}, true],
    ["null", null, false],
    ["an array", [1], false],
    ["a string", "x", false],
    ["undefined", undefined, false],
  ];
  for (const [title, value, expected] of cases) it(title, () => assert.equal(isRecord(value), expected));
});
