/** components/outputs.ts: a Service's IPs read from what its stack recorded, checked. */
import * as assert from "node:assert/strict";
import { ingressOf } from "../../../components/outputs";

describe("components/outputs: ingressOf (checked)", () => {
  const cases: Array<[string, Record<string, unknown>, string[]]> = [
    [
      "the Service's IPs",
      { loadBalancers: { "default/web": { ingress: ["34.1.2.3", "34.1.2.4"] } } },
      ["34.1.2.3", "34.1.2.4"],
    ],
    ["another Service's entry only", { loadBalancers: { "default/other": { ingress: ["34.1.2.3"] } } }, []],
    ["no loadBalancers output", {}, []],
    ["loadBalancers not an object", { loadBalancers: ["x"] }, []],
    [
      "non-string IPs are left out",
      { loadBalancers: { "default/web": { ingress: ["34.1.2.3", 5, null] } } },
      ["34.1.2.3"],
    ],
    ["ingress not a list", { loadBalancers: { "default/web": { ingress: "34.1.2.3" } } }, []],
  ];
  for (const [title, outputs, expected] of cases)
    it(title, () => assert.deepEqual(ingressOf(outputs, "default", "web"), expected));
});
