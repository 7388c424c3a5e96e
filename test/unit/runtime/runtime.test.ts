/** runtime/backoff.ts, runtime/retry.ts, runtime/guards.ts: the runtime's shared pieces. */
import * as assert from "node:assert/strict";
import fc from "fast-check";
import { backoffMs, fullJitterBackoffMs, jitteredBackoffMs } from "../../../runtime/backoff";
import pino from "pino";
import { isRecord } from "../../../runtime/guards";
import { resultObserver } from "../../../runtime/results";
import { ConflictRetriesExhaustedError, retryOnConflict, type ConflictAttempt } from "../../../runtime/retry";

describe("runtime/backoff", () => {
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
      fc.property(
        fc.integer({ min: 0, max: 60 }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.integer({ min: 1, max: 600_000 }),
        fc.double({ min: 0, max: 0.999, noNaN: true }),
        (failures, base, max, random) => {
          const plain = backoffMs(failures, base, max);
          const full = fullJitterBackoffMs(failures, base, max, random);
          const spread = jitteredBackoffMs(failures, base, max, 0.1, random);
          return (
            plain <= max &&
            full >= 0 &&
            full <= plain &&
            spread <= max &&
            Math.abs(spread - plain) <= Math.ceil(plain * 0.1) + 1
          );
        },
      ),
    );
  });
});

describe("runtime/retry retryOnConflict", () => {
  it("re-runs the attempt (which reads again) on a conflict, and returns the first done value", async () => {
    const seen: number[] = [];
    const value = await retryOnConflict("patching Node n1", 5, async (attempt): Promise<ConflictAttempt<string>> => {
      seen.push(attempt);
      return attempt < 3
        ? { kind: "conflict", error: new Error(`409 #${attempt}`) }
        : { kind: "done", value: "patched" };
    });
    assert.equal(value, "patched");
    assert.deepEqual(seen, [1, 2, 3]);
  });

  it("gives up after the last attempt with the last conflict as cause", async () => {
    const last = new Error("409 #2");
    await assert.rejects(
      retryOnConflict("patching Node n1", 2, async (attempt) => ({
        kind: "conflict",
        error: attempt === 2 ? last : new Error("409 #1"),
      })),
      (error: unknown) =>
        error instanceof ConflictRetriesExhaustedError &&
        error.message === "patching Node n1: conflicts on 2 attempts" &&
        error.cause === last,
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

describe("runtime/guards isRecord", () => {
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

describe("runtime/results resultObserver", () => {
  function observe(giveUpLevel: "info" | "error"): {
    lines: Record<string, unknown>[];
    counted: string[];
    observer: ReturnType<typeof resultObserver>;
  } {
    const lines: Record<string, unknown>[] = [];
    const counted: string[] = [];
    const logger = pino(
      { level: "debug", base: undefined, timestamp: false },
      { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
    );
    const observer = resultObserver({
      logger,
      keyField: "stack",
      kindOf: (key) => (key === "cluster" ? "cluster" : "service"),
      giveUpLevel,
      reconciles: { inc: (labels) => counted.push(`reconciles ${labels.kind} ${labels.result}`) },
      retries: { inc: (labels) => counted.push(`retries ${labels.kind}`) },
    });
    return { lines, counted, observer };
  }

  it("logs each result once at its level, escalates from the third failure, and counts it", () => {
    const { lines, counted, observer } = observe("info");
    observer({ key: "service.default.web", refresh: false }, { kind: "ok" }, 0);
    observer(
      { key: "service.default.web", refresh: false },
      { kind: "retryAfter", ms: 1000, reason: "waiting for the cluster stack" },
      0,
    );
    observer(
      { key: "cluster", refresh: false },
      { kind: "retry", error: new Error("googleapi: Error 429: Rate Limit Exceeded") },
      2,
    );
    observer(
      { key: "cluster", refresh: false },
      { kind: "retry", error: new Error("googleapi: Error 429: Rate Limit Exceeded") },
      3,
    );
    observer(
      { key: "service.default.bad", refresh: false },
      { kind: "giveUp", reason: "the Service is invalid: SCTP is not supported" },
      0,
    );
    assert.deepEqual(lines, [
      {
        level: 20,
        stack: "service.default.web",
        ms: 1000,
        reason: "waiting for the cluster stack",
        msg: "reconcile deferred",
      },
      {
        level: 40,
        stack: "cluster",
        failures: 2,
        err: "googleapi: Error 429: Rate Limit Exceeded",
        msg: "reconcile failed; will retry",
      },
      {
        level: 50,
        stack: "cluster",
        failures: 3,
        err: "googleapi: Error 429: Rate Limit Exceeded",
        msg: "reconcile failing; will retry",
      },
      {
        level: 30,
        stack: "service.default.bad",
        reason: "the Service is invalid: SCTP is not supported",
        msg: "reconcile ended without retry",
      },
    ]);
    assert.deepEqual(counted, [
      "reconciles service ok",
      "reconciles service retryAfter",
      "reconciles cluster retry",
      "retries cluster",
      "reconciles cluster retry",
      "retries cluster",
      "reconciles service giveUp",
    ]);
  });

  it("a give-up is an error where the controller says so", () => {
    const { lines, observer } = observe("error");
    observer({ key: "node-1", refresh: false }, { kind: "giveUp", reason: "no providerID" }, 0);
    assert.deepEqual(lines, [
      { level: 50, stack: "node-1", reason: "no providerID", msg: "reconcile ended without retry" },
    ]);
  });
});
