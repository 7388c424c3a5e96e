// Tier 1: controllers/neg/plan.ts planEndpointSteps, the attach and detach calls from what a NEG
// holds to what the desired state gives it: a table, then properties over random endpoint sets.
import * as assert from "node:assert/strict";

import * as fc from "fast-check";

import { MAX_ENDPOINTS_PER_CALL, planEndpointSteps, type EndpointStep } from "../../../../controllers/neg/plan";
import type { NegEndpoint } from "../../../../model";

const e = (instance: string, ipAddress: string): NegEndpoint => ({ instance, ipAddress });

describe("controllers/neg/plan planEndpointSteps", () => {
  const cases: [string, NegEndpoint[], NegEndpoint[], EndpointStep[]][] = [
    ["nothing to do", [e("a", "10.0.0.1")], [e("a", "10.0.0.1")], []],
    [
      "an empty NEG filled, sorted by instance",
      [e("b", "10.0.0.2"), e("a", "10.0.0.1")],
      [],
      [{ change: "attach", endpoints: [e("a", "10.0.0.1"), e("b", "10.0.0.2")] }],
    ],
    [
      "a node leaves",
      [e("a", "10.0.0.1")],
      [e("a", "10.0.0.1"), e("b", "10.0.0.2")],
      [{ change: "detach", endpoints: [e("b", "10.0.0.2")] }],
    ],
    [
      "one comes and one goes: the new one attached before the old one leaves",
      [e("a", "10.0.0.1"), e("c", "10.0.0.3")],
      [e("a", "10.0.0.1"), e("b", "10.0.0.2")],
      [
        { change: "attach", endpoints: [e("c", "10.0.0.3")] },
        { change: "detach", endpoints: [e("b", "10.0.0.2")] },
      ],
    ],
    [
      "a VM held with another IP: detached first, then attached with its IP",
      [e("a", "10.0.0.9"), e("c", "10.0.0.3")],
      [e("a", "10.0.0.1"), e("b", "10.0.0.2")],
      [
        { change: "detach", endpoints: [e("a", "10.0.0.1")] },
        { change: "attach", endpoints: [e("a", "10.0.0.9"), e("c", "10.0.0.3")] },
        { change: "detach", endpoints: [e("b", "10.0.0.2")] },
      ],
    ],
    ["the desired state empties it", [], [e("a", "10.0.0.1")], [{ change: "detach", endpoints: [e("a", "10.0.0.1")] }]],
  ];
  for (const [title, desired, listed, steps] of cases)
    it(title, () => assert.deepStrictEqual(planEndpointSteps(desired, listed), steps));

  it(`1,201 endpoints to attach: three calls of ${MAX_ENDPOINTS_PER_CALL}, ${MAX_ENDPOINTS_PER_CALL} and 201 (GCE's limit per call)`, () => {
    const many = Array.from({ length: 1201 }, (_, i) =>
      e(`vm-${String(i).padStart(4, "0")}`, `10.1.${i >> 8}.${i & 255}`),
    );
    const steps = planEndpointSteps(many, []);
    assert.deepStrictEqual(
      steps.map((step) => [step.change, step.endpoints.length, step.endpoints[0].instance]),
      [
        ["attach", 500, "vm-0000"],
        ["attach", 500, "vm-0500"],
        ["attach", 201, "vm-1000"],
      ],
    );
  });

  const endpointsArb = fc
    .uniqueArray(fc.tuple(fc.integer({ min: 0, max: 1400 }), fc.integer({ min: 0, max: 2 })), {
      selector: ([vm]) => vm,
      maxLength: 1400,
    })
    .map((list) => list.map(([vm, ip]) => e(`vm-${vm}`, `10.0.${ip}.${vm % 250}`)));

  it("properties: applied in order, the steps leave exactly the desired set; no call over the limit; an endpoint both hold is never touched; every new one is attached before any leaving one whose VM stays out is detached", () => {
    fc.assert(
      fc.property(endpointsArb, endpointsArb, (desired, listed) => {
        const steps = planEndpointSteps(desired, listed);
        const key = (x: NegEndpoint): string => `${x.instance}/${x.ipAddress}`;
        const held = new Map(listed.map((x) => [key(x), x]));
        const both = new Set(desired.map(key).filter((k) => held.has(k)));
        const attaching = new Set(desired.filter((x) => !held.has(key(x))).map((x) => x.instance));
        let attachesLeft = steps.filter((s) => s.change === "attach").length;
        let attachedAll = attachesLeft === 0;
        for (const step of steps) {
          assert.ok(step.endpoints.length > 0 && step.endpoints.length <= MAX_ENDPOINTS_PER_CALL);
          for (const x of step.endpoints) {
            assert.equal(both.has(key(x)), false);
            if (step.change === "attach") {
              assert.equal(held.has(key(x)), false);
              held.set(key(x), x);
            } else {
              assert.equal(held.has(key(x)), true);
              if (!attaching.has(x.instance)) assert.equal(attachedAll, true);
              held.delete(key(x));
            }
          }
          if (step.change === "attach") attachesLeft--;
          if (attachesLeft === 0) attachedAll = true;
        }
        assert.deepStrictEqual([...held.keys()].sort(), desired.map(key).sort());
      }),
      { numRuns: 200 },
    );
  });
});
