/** controllers/fullRefresh.ts: the full refresh cadence, and how many full refreshes run at once. */
import * as assert from "node:assert/strict";
import { firstRefreshDelay, FullRefreshTimers, refreshWaitMs } from "../../../controllers/fullRefresh";
import { jitteredDelay } from "../../../runtime/periodic";

describe("controllers/fullRefresh: FullRefreshTimers, the full refresh cadence", () => {
  it("delays: the first at a uniform phase of the period, then period ± jitter; a capped one waits 1 % of the period, 1 s to 1 min", () => {
    assert.deepEqual(
      [0, 0.25, 0.999].map((random) => firstRefreshDelay(86_400_000, random)),
      [1, 21_600_000, 86_313_600],
    );
    assert.deepEqual(
      [0, 0.5, 0.999].map((random) => jitteredDelay(600_000, 0.1, random)),
      [540_000, 600_000, 659_880],
    );
    assert.deepEqual([4000, 600_000, 86_400_000].map(refreshWaitMs), [1000, 6000, 60_000]);
  });

  it("never more than maxInFlight at once: the second stack is enqueued only after the first one's run ended (armed again)", async () => {
    const abort = new AbortController();
    let firstDone = false;
    const order: string[] = [];
    let timers: FullRefreshTimers | undefined;
    const both = new Promise<void>((resolve) => {
      timers = new FullRefreshTimers({
        periodMs: 1,
        jitter: 0,
        signal: abort.signal,
        maxInFlight: 1,
        inFlightMs: 3_600_000,
        enqueue: (stack, flags) => {
          assert.deepEqual(flags, { refresh: true });
          order.push(`${stack}${order.length === 1 ? (firstDone ? " after" : " before") : ""}`);
          if (order.length === 1) {
            // The first refresh's run ends a moment later; only then may the other start.
            setImmediate(() => {
              firstDone = true;
              timers?.disarm(stack);
            });
          }
          if (order.length === 2) resolve();
        },
      });
    });
    timers?.arm("a");
    timers?.arm("b");
    await both;
    abort.abort();
    timers?.stop();
    assert.equal(order.length, 2);
    assert.match(order[1], / after$/);
  });
});
