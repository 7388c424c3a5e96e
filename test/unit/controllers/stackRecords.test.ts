/** controllers/stackRecords.ts: one record per stack, and the union of what the Service stacks among them point at. */
import * as assert from "node:assert/strict";
import { StackRecords } from "../../../controllers/stackRecords";

describe("controllers/stackRecords: StackRecords", () => {
  it("the Service stacks known at the start are unread until each is referenced or forgotten; the cluster stack is none of them", () => {
    const records = new StackRecords(["cluster", "service.default.a", "service.default.b"]);
    assert.deepEqual(records.references(), { zones: [], legacyHealthCheck: false, unread: true });
    records.setReferences(records.get("service.default.a"), {
      zones: [],
      legacyHealthCheck: false,
      denyRules: ["default/a"],
    });
    assert.deepEqual(records.references(), {
      zones: [],
      legacyHealthCheck: false,
      denyRules: ["default/a"],
      unread: true,
    });
    assert.equal(records.forget("service.default.b"), true, "the last unread: the union changed");
    assert.deepEqual(records.references(), { zones: [], legacyHealthCheck: false, denyRules: ["default/a"] });
    records.setReferences(records.get("service.default.a"), { zones: [], legacyHealthCheck: false });
    assert.deepEqual(records.references(), { zones: [], legacyHealthCheck: false });
  });
});
