// controllers/failures.ts: the one classifier of a failed stack step.
import * as assert from "node:assert/strict";
import { classifyFailure, type FailureVerdict, quotaExceededMessage } from "../../../controllers/failures";
import { ForeignStackError, StackBusyError } from "../../../stacks/errors";

describe("controllers/failures classifyFailure", () => {
  const foreign = new ForeignStackError("cluster", "uid-other", "uid-ours");
  const busy = new StackBusyError("service.default.web", { cause: new Error("the stack is currently locked") });
  const plain = new Error("googleapi: Error 429: Rate Limit Exceeded");
  const perMinute = new Error(
    "Error creating Address: googleapi: Error 403: Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service 'compute.googleapis.com' for consumer 'project_number:1'., rateLimitExceeded",
  );
  const quota = new Error("pulumi up of service.default.web failed", {
    cause: new Error(
      "error: 1 error occurred:\n\t* Error creating Address: googleapi: Error 403: Quota 'STATIC_ADDRESSES' exceeded. Limit: 8.0 in region us-central1., quotaExceeded",
    ),
  });
  const table: Array<[string, unknown, boolean, FailureVerdict]> = [
    ["another cluster's stack", foreign, false, { kind: "foreign", error: foreign }],
    [
      "another cluster's stack, even while stopping (never retried, never touched)",
      foreign,
      true,
      { kind: "foreign", error: foreign },
    ],
    ["any failure while stopping", plain, true, { kind: "shutdown" }],
    ["a locked stack while stopping", busy, true, { kind: "shutdown" }],
    ["a stack our other run holds", busy, false, { kind: "busy" }],
    ["a real failure", plain, false, { kind: "failed", error: plain }],
    [
      "GCE's per-minute rate quota is no project quota: a failure (it refills by itself)",
      perMinute,
      false,
      { kind: "failed", error: perMinute },
    ],
    [
      "a project quota, named in the engine's output under the cause chain",
      quota,
      false,
      { kind: "quota", quota: { quota: "STATIC_ADDRESSES", limit: 8, region: "us-central1" }, error: quota },
    ],
    ["a project quota while stopping: the shutdown", quota, true, { kind: "shutdown" }],
    ["a thrown non-Error", "boom", false, { kind: "failed", error: "boom" }],
  ];
  for (const [name, error, aborted, verdict] of table) {
    it(name, () => assert.deepEqual(classifyFailure(error, aborted), verdict));
  }
});

describe("controllers/failures quotaExceededMessage", () => {
  it("names the quota, its limit and scope, what to do and when dccm tries again", () => {
    assert.equal(
      quotaExceededMessage("Error syncing load balancer", {
        quota: "STATIC_ADDRESSES",
        limit: 8,
        region: "us-central1",
      }),
      "Error syncing load balancer: GCE quota STATIC_ADDRESSES (limit 8 in region us-central1) exceeded; release unused resources or raise the quota. Next try in 5 minutes, or at once when the desired state changes",
    );
    assert.equal(
      quotaExceededMessage("Error syncing cluster stack", { quota: "ROUTES", limit: 250 }),
      "Error syncing cluster stack: GCE quota ROUTES (limit 250 in the project) exceeded; release unused resources or raise the quota. Next try in 5 minutes, or at once when the desired state changes",
    );
  });
});
