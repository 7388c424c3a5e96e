// Which health-check inputs a run leaves as they are (docs/guides/services.md#health-checks): the
// timings no annotation names, so a repair keeps an operator's hand tuning.
import * as assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";

import { ServiceLoadBalancer } from "../../../components/serviceLoadBalancer";
import { desiredState } from "../../../model/desired";
import { capture } from "../../support/fakes/pulumiMocks";
import { CONFIG, gceNode, lbService } from "../../support/builders";

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

describe("components: a tuned ETP=Cluster Service's own check (Pulumi mocks)", () => {
  const UID = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
  const LB = "a0f1e2d3c4b5a49788695a4b3c2d1e0f";
  const LINK = "https://www.googleapis.com/compute/v1/projects/dccm-test";

  function mockState(type: string, inputs: Record<string, unknown>): { id: string; state: Record<string, unknown> } {
    const name = typeof inputs.name === "string" ? inputs.name : "";
    const state: Record<string, unknown> = { ...inputs, selfLink: `${LINK}/${type}/${name}` };
    if (type === "gcp:compute/forwardingRule:ForwardingRule") state.ipAddress = "203.0.113.10";
    return { id: `${type}/${name}`, state };
  }

  it("registers <lb> on the node probe with the annotated timings, its firewall, and declares the timings", async () => {
    const state = desiredState(
      {
        nodes: [gceNode("n-a", "00000000-0000-4000-8000-000000000001", "us-central1-a", [])],
        services: [
          lbService("default", "svc", UID, {
            annotations: { "dccm.io/health-check-interval": "30", "dccm.io/health-check-timeout": "10" },
          }),
        ],
      },
      { ...CONFIG, nodeHealthCheckPort: 9879 },
    );
    assert.deepStrictEqual(state.rejected, []);
    const captured = await capture(
      mockState,
      (opts) =>
        new ServiceLoadBalancer(
          "default/svc",
          {
            service: state.services[0],
            project: "dccm-test",
            region: "us-central1",
            network: "k8s-net",
            cluster: {
              nodeHealthCheck: `${LINK}/regions/us-central1/healthChecks/k8s-c0ffee1234-node`,
              legacyNodeHealthCheck: `${LINK}/global/httpHealthChecks/k8s-c0ffee1234-node`,
              instanceGroups: { "us-central1-a": `${LINK}/zones/us-central1-a/instanceGroups/k8s-ig--c0ffee1234` },
            },
          },
          opts,
        ),
    );
    const check = captured.registered.find((r) => r.name === "default/svc:hc");
    assert.equal(check?.type, "gcp:compute/regionHealthCheck:RegionHealthCheck");
    assert.deepStrictEqual(
      {
        name: check?.inputs.name,
        checkIntervalSec: check?.inputs.checkIntervalSec,
        timeoutSec: check?.inputs.timeoutSec,
        healthyThreshold: check?.inputs.healthyThreshold,
        unhealthyThreshold: check?.inputs.unhealthyThreshold,
        httpHealthCheck: check?.inputs.httpHealthCheck,
      },
      {
        name: LB,
        checkIntervalSec: 30,
        timeoutSec: 10,
        healthyThreshold: 1,
        unhealthyThreshold: 3,
        httpHealthCheck: { port: 9879, requestPath: "/healthz" },
      },
    );
    assert.deepStrictEqual(captured.constructions.find((c) => c.name === "default/svc:hc")?.ignoreChanges, [
      "description",
    ]);
    const backend = captured.registered.find((r) => r.type === "gcp:compute/regionBackendService:RegionBackendService");
    assert.deepStrictEqual(
      backend?.inputs.healthChecks,
      `${LINK}/gcp:compute/regionHealthCheck:RegionHealthCheck/${LB}`,
    );
    const firewall = captured.registered.find((r) => r.inputs.name === `k8s-${LB}-http-hc`);
    assert.deepStrictEqual(firewall?.inputs.allows, [{ protocol: "tcp", ports: ["9879"] }]);
    await pulumi.runtime.disconnect();
  });
});
