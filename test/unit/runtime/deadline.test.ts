import * as assert from "node:assert/strict";
import { getEventListeners, once } from "node:events";
import { deadline } from "../../../runtime/deadline";

describe("runtime/deadline", () => {
  it("the caller aborts first: aborted with the caller's reason, not timed out, the caller's signal let go", () => {
    const caller = new AbortController();
    const limit = deadline(caller.signal, 60_000);
    assert.equal(getEventListeners(caller.signal, "abort").length, 1);
    caller.abort(new Error("shutting down"));
    assert.equal(limit.signal.aborted, true);
    assert.deepEqual(limit.signal.reason, new Error("shutting down"));
    assert.equal(limit.timedOut(), false);
    assert.equal(getEventListeners(caller.signal, "abort").length, 0);
    limit.done();
  });

  it("the deadline passes first: aborted with a TimeoutError, as AbortSignal.timeout's, and the caller's signal let go", async () => {
    const caller = new AbortController();
    const limit = deadline(caller.signal, 1);
    await once(limit.signal, "abort");
    assert.equal(limit.timedOut(), true);
    assert.equal((limit.signal.reason as DOMException).name, "TimeoutError");
    assert.equal(getEventListeners(caller.signal, "abort").length, 0);
    caller.abort();
    assert.equal((limit.signal.reason as DOMException).name, "TimeoutError");
  });

  it("done() first: the caller's signal let go, and neither the caller's abort nor the time aborts it any more", () => {
    const caller = new AbortController();
    const limit = deadline(caller.signal, 60_000);
    limit.done();
    limit.done();
    assert.equal(getEventListeners(caller.signal, "abort").length, 0);
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

  it("20,000 calls under one long-lived signal, each done: the signal holds none of them", () => {
    const daemon = new AbortController();
    for (let i = 0; i < 20_000; i++) deadline(daemon.signal, 60_000).done();
    assert.equal(getEventListeners(daemon.signal, "abort").length, 0);
  });
});
