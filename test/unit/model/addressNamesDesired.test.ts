// Tier 1: networking.gke.io/load-balancer-ip-addresses through desiredState: a named address's IP is
// the Service's user-owned IP of its family (the spec.loadBalancerIP path), the name wins over
// spec.loadBalancerIP with ingress-gce's MixedStaticIP notice, and each refusal is exact.
import * as assert from "node:assert/strict";

import * as fc from "fast-check";

import type { NamedAddress } from "../../../model/addressNames";
import { DesiredCache } from "../../../model/desiredCache";
import { desiredState } from "../../../model/desired";
import { MIXED_STATIC_IP_MESSAGE } from "../../../model/service";
import {
  NOTHING_OBSERVED,
  type ClusterSnapshot,
  type DesiredState,
  type ObservedCloud,
  type ServiceInfo,
} from "../../../model/types";
import { CONFIG, gceNode, lbService } from "../../support/builders";

const KEY = "default/web";
const UID = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
const ANNOTATION = "networking.gke.io/load-balancer-ip-addresses";
const FIELD = `metadata.annotations[${ANNOTATION}]`;
const NODES = [gceNode("n-a", "00000000-0000-4000-8000-000000000001", "us-central1-a", [])];
const DUAL = { ipFamilies: ["IPv4", "IPv6"], ipFamilyPolicy: "RequireDualStack" };

const V4: NamedAddress = { name: "web-v4", address: "34.1.2.3", addressType: "EXTERNAL", ipVersion: "IPV4" };
const V6: NamedAddress = {
  name: "web-v6",
  address: "2600:1900:4000:9a2:0:0:0:0/96",
  addressType: "EXTERNAL",
  ipVersion: "IPV6",
};
const V4_INTERNAL: NamedAddress = {
  name: "db-v4",
  address: "10.0.0.9",
  addressType: "INTERNAL",
  purpose: "GCE_ENDPOINT",
};
const GCE: Record<string, NamedAddress | null> = { "web-v4": V4, "web-v6": V6, "db-v4": V4_INTERNAL, gone: null };

function web(annotations: Record<string, string>, over: Partial<ServiceInfo> = {}): ServiceInfo {
  return lbService("default", "web", UID, { annotations, ...over });
}

function run(service: ServiceInfo, addressNames: ObservedCloud["addressNames"]): DesiredState {
  return desiredState(
    { nodes: NODES, services: [service] },
    CONFIG,
    addressNames !== undefined ? { ...NOTHING_OBSERVED, addressNames } : NOTHING_OBSERVED,
  );
}

/** What a Service's IPs come out as: [userIP, ipv6.userIP, reserveAddress, notices]. */
type Ips = [string | undefined, string | undefined, boolean, { reason: string; message: string }[]];

function ips(state: DesiredState): Ips {
  assert.deepStrictEqual(state.rejected, []);
  const [service] = state.services;
  assert.ok(service !== undefined);
  return [service.userIP, service.ipv6?.userIP, service.reserveAddress === true, service.notices ?? []];
}

const MIXED = { reason: "MixedStaticIP", message: MIXED_STATIC_IP_MESSAGE };

describe("networking.gke.io/load-balancer-ip-addresses in the desired state", () => {
  const accepted: [string, ServiceInfo, Ips][] = [
    [
      "an IPv4 name: its IP, user-owned (no address of dccm's)",
      web({ [ANNOTATION]: "web-v4" }),
      ["34.1.2.3", undefined, false, []],
    ],
    [
      "a name and spec.loadBalancerIP: the name wins, MixedStaticIP",
      web({ [ANNOTATION]: "web-v4" }, { loadBalancerIP: "34.9.9.9" }),
      ["34.1.2.3", undefined, false, [MIXED]],
    ],
    [
      "a name and an invalid spec.loadBalancerIP: not read (as ingress-gce), MixedStaticIP",
      web({ [ANNOTATION]: "web-v4" }, { loadBalancerIP: "nope" }),
      ["34.1.2.3", undefined, false, [MIXED]],
    ],
    [
      "only an IPv6 name on an IPv4 Service: not used, spec.loadBalancerIP is (ingress-gce IPv4ToUse)",
      web({ [ANNOTATION]: "web-v6" }, { loadBalancerIP: "34.9.9.9" }),
      ["34.9.9.9", undefined, false, []],
    ],
    [
      "dual-stack, both names: each family's IP, the IPv6 one without its range, RFC 5952",
      web({ [ANNOTATION]: "web-v4,web-v6" }, DUAL),
      ["34.1.2.3", "2600:1900:4000:9a2::", false, []],
    ],
    [
      "dual-stack, an IPv6 name only: IPv4 ephemeral",
      web({ [ANNOTATION]: "web-v6" }, DUAL),
      [undefined, "2600:1900:4000:9a2::", false, []],
    ],
    [
      "dual-stack, an IPv6 name and an IPv4 spec.loadBalancerIP: both used, no MixedStaticIP (ingress-gce: only an IPv4 name wins)",
      web({ [ANNOTATION]: "web-v6" }, { ...DUAL, loadBalancerIP: "34.9.9.9" }),
      ["34.9.9.9", "2600:1900:4000:9a2::", false, []],
    ],
    [
      "internal, an INTERNAL GCE_ENDPOINT address",
      web({ [ANNOTATION]: "db-v4", "networking.gke.io/load-balancer-type": "Internal" }),
      ["10.0.0.9", undefined, false, []],
    ],
  ];
  for (const [what, service, want] of accepted) it(what, () => assert.deepStrictEqual(ips(run(service, GCE)), want));

  const refused: [string, ServiceInfo, ObservedCloud["addressNames"], string][] = [
    [
      "not read yet (the stack program, render, a daemon before its read)",
      web({ [ANNOTATION]: "web-v4, web-v6" }),
      undefined,
      "address web-v4, web-v6 not read from GCE yet: the daemon reads each named address before it applies the Service (the stack program, dccm render and dccm preview do not read GCE)",
    ],
    [
      "one of two not read yet",
      web({ [ANNOTATION]: "web-v4,web-v6" }),
      { "web-v4": V4 },
      "address web-v6 not read from GCE yet: the daemon reads each named address before it applies the Service (the stack program, dccm render and dccm preview do not read GCE)",
    ],
    [
      "GCE has no such address in the region",
      web({ [ANNOTATION]: "gone" }),
      GCE,
      "no address gone in project dccm-test region us-central1; the load balancer needs a regional address of its own region (gcloud compute addresses create gone --region us-central1)",
    ],
    [
      "an INTERNAL address for an external Service",
      web({ [ANNOTATION]: "db-v4" }),
      GCE,
      "address db-v4 is INTERNAL; an external load balancer needs an EXTERNAL address",
    ],
    [
      "an EXTERNAL address for an internal Service",
      web({ [ANNOTATION]: "web-v4", "networking.gke.io/load-balancer-type": "Internal" }),
      GCE,
      "address web-v4 is EXTERNAL; an internal load balancer needs an INTERNAL address",
    ],
    [
      "two IPv4 addresses",
      web({ [ANNOTATION]: "web-v4,other-v4" }),
      { ...GCE, "other-v4": { ...V4, name: "other-v4", address: "34.1.2.4" } },
      "addresses web-v4 and other-v4 are both IPv4; name at most one address of each family",
    ],
    [
      "not a name",
      web({ [ANNOTATION]: "Web" }),
      GCE,
      '"Web" is not an address name (1-63 characters: a lowercase letter, then lowercase letters, digits or hyphens, not ending with a hyphen)',
    ],
  ];
  for (const [what, service, observed, message] of refused)
    it(`refused: ${what}`, () => {
      const state = run(service, observed);
      assert.deepStrictEqual(state.services, []);
      assert.deepStrictEqual(state.rejected, [
        { service: KEY, field: FIELD, message: `Service ${KEY}: ${FIELD}: ${message}` },
      ]);
    });

  it("a named IPv4 address gives the desired state spec.loadBalancerIP with that IP gives, MixedStaticIP aside", () => {
    fc.assert(
      fc.property(fc.ipV4(), fc.boolean(), fc.option(fc.ipV4(), { nil: undefined }), (ip, internal, specIP) => {
        const type: Record<string, string> = internal ? { "networking.gke.io/load-balancer-type": "Internal" } : {};
        const address: NamedAddress = internal
          ? { name: "mine", address: ip, addressType: "INTERNAL" }
          : { name: "mine", address: ip };
        const named = run(
          web({ ...type, [ANNOTATION]: "mine" }, specIP !== undefined ? { loadBalancerIP: specIP } : {}),
          { mine: address },
        );
        const spec = run(web(type, { loadBalancerIP: ip }), undefined);
        const [service] = named.services;
        assert.ok(service !== undefined);
        const { notices, ...rest } = service;
        assert.deepStrictEqual(notices, specIP !== undefined ? [MIXED] : undefined);
        assert.deepStrictEqual({ ...named, services: [rest] }, spec);
      }),
    );
  });

  it("without the annotation, an observation of names changes nothing", () => {
    const service = web({}, { loadBalancerIP: "34.9.9.9" });
    assert.deepStrictEqual(run(service, GCE), run(service, undefined));
  });

  it("the cache plans the Service again once its names are read, as desiredState from scratch", () => {
    const snapshot: ClusterSnapshot = {
      nodes: NODES,
      services: [
        web({ [ANNOTATION]: "web-v4" }),
        lbService("default", "plain", "1b4e28ba-2fa1-41d2-883f-0016d3cca427"),
      ],
    };
    const cache = new DesiredCache(CONFIG);
    cache.update(snapshot);
    assert.equal(cache.view("service.default.web").service, undefined);
    const changes = cache.observe({ ...NOTHING_OBSERVED, addressNames: { "web-v4": V4 } });
    assert.deepStrictEqual(
      changes.map((change) => change.stack),
      ["service.default.web"],
    );
    assert.equal(cache.view("service.default.web").service?.userIP, "34.1.2.3");
    assert.deepStrictEqual(cache.desired(), desiredState(snapshot, CONFIG, cache.lastObserved()));
  });
});
