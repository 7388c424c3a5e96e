// Fault injection (faults.ts): which operations an injected fault fails, how often, and the refusal
// of a fault that is not one.
import * as assert from "node:assert/strict";

import { GceError } from "../errors";
import { Faults } from "../faults";

/** The status, reason and message of what `fn` throws, or "ok". */
function outcome(fn: () => void): string {
  try {
    fn();
    return "ok";
  } catch (e) {
    return e instanceof GceError ? `${e.status} ${e.reason} ${e.message}` : `Error ${String(e)}`;
  }
}

describe("GCE emulator faults (faults.ts)", () => {
  it("a fault fails its kind's matching operations, `count` times, by name when it names one", () => {
    const faults = new Faults();
    faults.inject({
      kind: "gcp:compute/forwardingRule:ForwardingRule",
      name: "fr",
      operation: "create",
      status: 503,
      message: "busy",
      count: 2,
    });
    assert.deepEqual(
      [
        outcome(() => faults.check("forwardingRules", "other", "create")),
        outcome(() => faults.check("forwardingRules", "fr", "delete")),
        outcome(() => faults.check("addresses", "fr", "create")),
        outcome(() => faults.check("forwardingRules", "fr", "create")),
        outcome(() => faults.check("forwardingRules", "fr", "create")),
        outcome(() => faults.check("forwardingRules", "fr", "create")),
      ],
      ["ok", "ok", "ok", "503 backendError busy", "503 backendError busy", "ok"],
    );
  });

  it("a fault without a name fails any name; its reason is the one given; clear drops every fault", () => {
    const faults = new Faults();
    faults.inject({ kind: "addresses", operation: "get", status: 403, message: "no", reason: "forbidden" });
    faults.inject({ kind: "addresses", operation: "update", status: 409, message: "conflict" });
    assert.equal(
      outcome(() => faults.check("addresses", "any", "get")),
      "403 forbidden no",
    );
    faults.clear();
    assert.equal(
      outcome(() => faults.check("addresses", "any", "update")),
      "ok",
    );
  });

  it("refuses a count that is not a positive integer and a status that is not an HTTP error", () => {
    const faults = new Faults();
    assert.throws(() => faults.inject({ kind: "addresses", operation: "get", status: 500, message: "m", count: 0 }), {
      message: "injectFault: count must be a positive integer, got 0",
    });
    assert.throws(() => faults.inject({ kind: "addresses", operation: "get", status: 302, message: "m" }), {
      message: "injectFault: status must be an HTTP error status, got 302",
    });
  });
});
