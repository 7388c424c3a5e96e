// Which health-check inputs a run leaves as they are (docs/guides/services.md#health-checks): the
// timings no annotation names, so a repair keeps an operator's hand tuning.
import * as assert from "node:assert/strict";

import { healthCheckIgnoredChanges } from "../../../components/primitives";

const TIMINGS = ["checkIntervalSec", "timeoutSec", "healthyThreshold", "unhealthyThreshold"];

describe("components: health-check ignoreChanges", () => {
  const cases: [string, Parameters<typeof healthCheckIgnoredChanges>[0], boolean, string[]][] = [
    [
      "regional, timings not annotated",
      "gcp:compute/regionHealthCheck:RegionHealthCheck",
      false,
      ["description", ...TIMINGS],
    ],
    ["regional, timings annotated", "gcp:compute/regionHealthCheck:RegionHealthCheck", true, ["description"]],
    [
      "legacy HTTP, timings not annotated",
      "gcp:compute/httpHealthCheck:HttpHealthCheck",
      false,
      ["description", ...TIMINGS],
    ],
    ["legacy HTTP, timings annotated", "gcp:compute/httpHealthCheck:HttpHealthCheck", true, ["description"]],
  ];
  for (const [title, type, declared, want] of cases)
    it(title, () =>
      assert.deepStrictEqual(healthCheckIgnoredChanges(type, declared ? { timingsDeclared: true } : {}), want),
    );
});
