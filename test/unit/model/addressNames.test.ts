/** resolveAddressNames: networking.gke.io/load-balancer-ip-addresses names → at most one IP per family, each refusal exact. */
import * as assert from "node:assert/strict";
import { resolveAddressNames, type AddressNamesResolution, type NamedAddress } from "../../../model/addressNames";

const WHERE = { project: "dccm-test", region: "us-central1" };
const V4: NamedAddress = { name: "web-v4", address: "203.0.113.10", addressType: "EXTERNAL", ipVersion: "IPV4" };
const V6: NamedAddress = { name: "web-v6", address: "2600:1900:4000:1::", addressType: "EXTERNAL", ipVersion: "IPV6" };
const V4_DEFAULTS: NamedAddress = { name: "bare", address: "203.0.113.11" };
const V4_OTHER: NamedAddress = { name: "web-v4b", address: "203.0.113.12" };
const INTERNAL: NamedAddress = { name: "ilb", address: "10.0.0.9", addressType: "INTERNAL", purpose: "GCE_ENDPOINT" };
const SHARED: NamedAddress = {
  name: "vip",
  address: "10.0.0.8",
  addressType: "INTERNAL",
  purpose: "SHARED_LOADBALANCER_VIP",
};
const PEERING: NamedAddress = { name: "psa", address: "10.1.0.0", addressType: "INTERNAL", purpose: "VPC_PEERING" };

const GCE = new Map<string, NamedAddress>(
  [V4, V6, V4_DEFAULTS, V4_OTHER, INTERNAL, SHARED, PEERING].map((a) => [a.name, a]),
);

function resolve(scheme: "EXTERNAL" | "INTERNAL", names: string[]): AddressNamesResolution {
  return resolveAddressNames(scheme, WHERE, names, new Map(names.map((n) => [n, GCE.get(n)])));
}

describe("resolveAddressNames", () => {
  const cases: [string, "EXTERNAL" | "INTERNAL", string[], AddressNamesResolution][] = [
    ["no names", "EXTERNAL", [], { ok: true }],
    ["one IPv4", "EXTERNAL", ["web-v4"], { ok: true, ipv4: { name: "web-v4", ip: "203.0.113.10" } }],
    [
      "IPv4 by GCE's defaults (no type, no version)",
      "EXTERNAL",
      ["bare"],
      { ok: true, ipv4: { name: "bare", ip: "203.0.113.11" } },
    ],
    ["one IPv6", "EXTERNAL", ["web-v6"], { ok: true, ipv6: { name: "web-v6", ip: "2600:1900:4000:1::" } }],
    [
      "both families, either order",
      "EXTERNAL",
      ["web-v6", "web-v4"],
      { ok: true, ipv4: { name: "web-v4", ip: "203.0.113.10" }, ipv6: { name: "web-v6", ip: "2600:1900:4000:1::" } },
    ],
    ["internal GCE_ENDPOINT", "INTERNAL", ["ilb"], { ok: true, ipv4: { name: "ilb", ip: "10.0.0.9" } }],
    ["internal SHARED_LOADBALANCER_VIP", "INTERNAL", ["vip"], { ok: true, ipv4: { name: "vip", ip: "10.0.0.8" } }],
    [
      "unknown name (or global, or of another region)",
      "EXTERNAL",
      ["nope"],
      {
        ok: false,
        problem: `no address nope in project dccm-test region us-central1; the load balancer needs a regional address of its own region (gcloud compute addresses create nope --region us-central1)`,
      },
    ],
    [
      "two IPv4",
      "EXTERNAL",
      ["web-v4", "web-v4b"],
      {
        ok: false,
        problem: `addresses web-v4 and web-v4b are both IPv4; name at most one address of each family`,
      },
    ],
    [
      "internal address on an external Service",
      "EXTERNAL",
      ["ilb"],
      { ok: false, problem: `address ilb is INTERNAL; an external load balancer needs an EXTERNAL address` },
    ],
    [
      "external address on an internal Service",
      "INTERNAL",
      ["web-v4"],
      {
        ok: false,
        problem: `address web-v4 is EXTERNAL; an internal load balancer needs an INTERNAL address`,
      },
    ],
    [
      "internal address of another purpose",
      "INTERNAL",
      ["psa"],
      {
        ok: false,
        problem: `address psa has purpose VPC_PEERING; an internal load balancer needs purpose GCE_ENDPOINT or SHARED_LOADBALANCER_VIP`,
      },
    ],
  ];
  for (const [name, scheme, names, expected] of cases)
    it(name, () => {
      assert.deepStrictEqual(resolve(scheme, names), expected);
    });
});
