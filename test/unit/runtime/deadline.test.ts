import * as assert from "node:assert/strict";
import { getEventListeners, once } from "node:events";
import { deadline } from "../../../runtime/deadline";

describe("runtime/deadline", () => {
  it("the caller aborts first: aborted with the caller's reason, not timed out, the caller's signal let go", () => {
    const caller = new AbortController();
    const limit = deadline(caller.signal, 60_000);
    caller.abort(new Error("shutting down"));
    assert.equal(limit.signal.aborted, true);
    assert.deepEqual(limit.signal.reason, new Error("shutting down"));
    assert.equal(limit.timedOut(), false);
    assert.equal(getEventListeners(caller.signal, "abort").length, 0);
    limit.done();
  });

  it("the deadline passes first: aborted with a TimeoutError, as AbortSignal.timeout's; the caller's later abort changes nothing", async () => {
    const caller = new AbortController();
    const limit = deadline(caller.signal, 1);
    await once(limit.signal, "abort");
    assert.equal(limit.timedOut(), true);
    assert.equal((limit.signal.reason as DOMException).name, "TimeoutError");
    caller.abort();
    assert.equal((limit.signal.reason as DOMException).name, "TimeoutError");
  });

  it("done() first: the caller's signal let go, and neither the caller's abort nor the time aborts it any more", () => {
    const caller = new AbortController();
    const limit = deadline(caller.signal, 60_000);
    limit.done();
    limit.done();
    caller.abort();
    assert.equal(limit.signal.aborted, false);
    assert.equal(limit.timedOut(), false);
  });

  it("a caller already aborted: aborted at once with its reason; no caller: only the time", () => {
    const limit = deadline(AbortSignal.abort("gone"), 60_000);
    assert.equal(limit.signal.reason, "gone");
    const alone = deadline(undefined, 60_000);
    assert.equal(alone.signal.aborted, false);
    alone.done();
  });

  it("20,000 calls at once under one long-lived signal: one listener on it (no MaxListenersExceededWarning); its abort reaches each call in flight, not one that is done", () => {
    const daemon = new AbortController();
    const calls = Array.from({ length: 20_000 }, () => deadline(daemon.signal, 60_000));
    assert.equal(getEventListeners(daemon.signal, "abort").length, 1);
    for (const call of calls.slice(0, 10_000)) call.done();
    daemon.abort();
    assert.deepEqual(
      [calls.filter((call) => call.signal.aborted).length, calls[0]?.signal.aborted, calls[19_999]?.signal.aborted],
      [10_000, false, true],
    );
    for (const call of calls) call.done();
  });
});
