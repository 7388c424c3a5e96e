// controllers/failures.ts: the one classifier of a failed stack step.
import * as assert from "node:assert/strict";
import { classifyFailure, type FailureVerdict } from "../../../controllers/failures";
import { ForeignStackError, StackBusyError } from "../../../stacks/errors";

describe("controllers/failures classifyFailure", () => {
  const foreign = new ForeignStackError("cluster", "uid-other", "uid-ours");
  const busy = new StackBusyError("service.default.web", { cause: new Error("the stack is currently locked") });
  const plain = new Error("googleapi: Error 429: Rate Limit Exceeded");
  const table: Array<[string, unknown, boolean, FailureVerdict]> = [
    ["another cluster's stack", foreign, false, { kind: "foreign", error: foreign }],
    ["another cluster's stack, even while stopping (never retried, never touched)", foreign, true, { kind: "foreign", error: foreign }],
    ["any failure while stopping", plain, true, { kind: "shutdown" }],
    ["a locked stack while stopping", busy, true, { kind: "shutdown" }],
    ["a stack our other run holds", busy, false, { kind: "busy" }],
    ["a real failure", plain, false, { kind: "failed", error: plain }],
    ["a thrown non-Error", "boom", false, { kind: "failed", error: "boom" }],
  ];
  for (const [name, error, aborted, verdict] of table) {
    it(name, () => assert.deepEqual(classifyFailure(error, aborted), verdict));
  }
});
