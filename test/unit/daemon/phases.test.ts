/** PhaseTimer (daemon/phases.ts): each phase's duration, from the start or the previous mark. */
import * as assert from "node:assert/strict";
import { PhaseTimer } from "../../../daemon/phases";

describe("daemon: PhaseTimer", () => {
  it("gives each phase the time since the previous mark, the first one since the start, rounded to ms", () => {
    const clock = [1200.4, 1260.6, 1261.0, 1900.2];
    const timer = new PhaseTimer(() => clock.shift() ?? Number.NaN, 0);
    for (const phase of ["load", "lease", "clusterUid", "lists"]) timer.mark(phase);
    assert.deepEqual(timer.phases, { load: 1200, lease: 60, clusterUid: 0, lists: 639 });
    assert.deepEqual(Object.keys(timer.phases), ["load", "lease", "clusterUid", "lists"]);
  });

  it("starts from `since` when given one", () => {
    const timer = new PhaseTimer(() => 105, 100);
    timer.mark("only");
    assert.deepEqual(timer.phases, { only: 5 });
  });
});
