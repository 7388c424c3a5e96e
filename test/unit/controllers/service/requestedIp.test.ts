/** checkRequestedIp: spec.loadBalancerIP against the project's static addresses (issue 19.4), as the stock CCM's verifyUserRequestedIP. */
import * as assert from "node:assert/strict";
import {
  checkRequestedIp,
  type ObservedAddress,
  type RequestedIpCheck,
} from "../../../../controllers/service/requestedIp";

const WHERE = { project: "dccm-test", region: "us-central1" };
const IP = "203.0.113.77";
type Service = Parameters<typeof checkRequestedIp>[0];
const external = (over: Partial<Service> = {}): Service => ({
  key: "default/web",
  scheme: "EXTERNAL",
  networkTier: "PREMIUM",
  userIP: IP,
  ...over,
});
const NOT_RESERVED =
  `Service default/web: spec.loadBalancerIP: ${IP} is neither a static address reserved in project dccm-test region us-central1 nor the current IP of the load balancer; ` +
  `reserve it first (gcloud compute addresses create NAME --region us-central1 --addresses ${IP})`;

describe("controllers/service/requestedIp: checkRequestedIp", () => {
  const table: Array<[string, Service, ObservedAddress[], string[], RequestedIpCheck | undefined]> = [
    ["no loadBalancerIP: nothing to check", external({ userIP: undefined }), [], [], undefined],
    ["internal: GCE takes any free subnetwork IP, not checked", external({ scheme: "INTERNAL" }), [], [], undefined],
    [
      "a static address of that IP: used as the user's",
      external(),
      [{ name: "web-ip", address: IP }],
      [],
      { ok: true, source: "static" },
    ],
    [
      "explicit EXTERNAL PREMIUM address",
      external(),
      [{ name: "web-ip", address: IP, addressType: "EXTERNAL", networkTier: "PREMIUM" }],
      [],
      { ok: true, source: "static" },
    ],
    [
      "not reserved but the load balancer's current IP: kept",
      external(),
      [{ name: "other", address: "203.0.113.1" }],
      [IP],
      { ok: true, source: "current" },
    ],
    [
      "not reserved, not current: refused, naming the field and what to do",
      external(),
      [{ name: "other", address: "203.0.113.1" }],
      ["198.51.100.9"],
      { ok: false, message: NOT_RESERVED },
    ],
    [
      "reserved in the STANDARD tier for a PREMIUM Service: refused",
      external(),
      [{ name: "web-ip", address: IP, networkTier: "STANDARD" }],
      [],
      {
        ok: false,
        message: `Service default/web: spec.loadBalancerIP: ${IP} is address web-ip of the STANDARD network tier, and the Service asks for PREMIUM (annotation cloud.google.com/network-tier)`,
      },
    ],
    [
      "an internal address of that IP: refused",
      external(),
      [{ name: "ilb-ip", address: IP, addressType: "INTERNAL" }],
      [],
      {
        ok: false,
        message: `Service default/web: spec.loadBalancerIP: ${IP} is the internal address ilb-ip; an external load balancer needs an EXTERNAL address`,
      },
    ],
    [
      "STANDARD tier Service with a STANDARD address",
      external({ networkTier: "STANDARD" }),
      [{ name: "web-ip", address: IP, networkTier: "STANDARD" }],
      [],
      { ok: true, source: "static" },
    ],
  ];
  for (const [title, service, addresses, ruleIps, expected] of table) {
    it(title, () => assert.deepEqual(checkRequestedIp(service, WHERE, addresses, ruleIps), expected));
  }
});
