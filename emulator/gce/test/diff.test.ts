// The GCE emulator's rules (`npm run test:emulator`), one row each: what real GCE (and the
// provider @pulumi/gcp bridges) accepts, refuses with which message, replaces or updates in place.
// The source of each rule is cited next to it in emulator/gce/ (kinds.ts, validation.ts, rules/,
// networks.ts, instances.ts); a change that loosens a rule fails its row here.
// This file: Optional + Computed inputs in the provider's diff, and inputs the provider accepts.
import * as assert from "node:assert/strict";

import { ProviderApi } from "../provider-api";
import type { Json, JsonObject } from "../json";
import {
  PROJECT,
  REGION,
  T,
  regional,
  passthrough,
  internalRule,
  world,
  IG,
  FW,
  TP,
  NODE_1,
  INTERNAL_ADDRESS,
  ROUTE,
  REGION_HC,
  TP_SETUP,
} from "./rulesFixtures";

/**
 * An input that is Optional + Computed in the provider's schema (kinds.ts `optionalComputed`, each
 * cited there): the program omitting it keeps the resource's value with no diff at all; a
 * different value is an update or a replacement as the field's ForceNew says.
 */
interface OptionalComputedRow {
  readonly type: string;
  readonly field: string;
  readonly setup?: ReadonlyArray<readonly [string, JsonObject]>;
  /** The resource as created, the field set. */
  readonly inputs: JsonObject;
  /** Another value of the field. */
  readonly other: Json;
  readonly expect: "replaced" | "updated in place";
}

const OPTIONAL_COMPUTED_ROWS: OptionalComputedRow[] = [
  {
    type: T.address,
    field: "address",
    inputs: { ...INTERNAL_ADDRESS, address: "10.130.0.50" },
    other: "10.130.0.51",
    expect: "replaced",
  },
  {
    type: T.address,
    field: "deletionPolicy",
    inputs: { ...regional, name: "a", deletionPolicy: "PREVENT" },
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.address,
    field: "networkTier",
    inputs: { ...regional, name: "a", networkTier: "STANDARD" },
    other: "PREMIUM",
    expect: "replaced",
  },
  {
    type: T.address,
    field: "prefixLength",
    inputs: { ...INTERNAL_ADDRESS, prefixLength: 32 },
    other: 30,
    expect: "replaced",
  },
  {
    type: T.address,
    field: "purpose",
    inputs: { ...INTERNAL_ADDRESS, purpose: "SHARED_LOADBALANCER_VIP" },
    other: "GCE_ENDPOINT",
    expect: "replaced",
  },
  { type: T.address, field: "subnetwork", inputs: INTERNAL_ADDRESS, other: "other-subnet", expect: "replaced" },
  {
    type: T.forwardingRule,
    field: "deletionPolicy",
    inputs: internalRule({ deletionPolicy: "PREVENT" }),
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.forwardingRule,
    field: "ipAddress",
    inputs: internalRule({ ipAddress: "10.130.0.60" }),
    other: "10.130.0.61",
    expect: "replaced",
  },
  {
    type: T.forwardingRule,
    field: "ipProtocol",
    inputs: internalRule({ ipProtocol: "UDP" }),
    other: "TCP",
    expect: "replaced",
  },
  {
    type: T.forwardingRule,
    field: "ipVersion",
    inputs: internalRule({ ipVersion: "IPV4" }),
    other: "IPV6",
    expect: "replaced",
  },
  { type: T.forwardingRule, field: "network", inputs: internalRule(), other: "default", expect: "replaced" },
  // What GCE reads back on the stock CCM's internal rules (which send no networkTier).
  {
    type: T.forwardingRule,
    field: "networkTier",
    inputs: internalRule({ networkTier: "PREMIUM" }),
    other: "STANDARD",
    expect: "replaced",
  },
  {
    type: T.forwardingRule,
    field: "portRange",
    setup: TP_SETUP,
    inputs: { ...regional, name: "fr", portRange: "80-90", target: "tp" },
    other: "80-91",
    expect: "replaced",
  },
  {
    type: T.forwardingRule,
    field: "serviceDirectoryRegistrations",
    inputs: internalRule({ serviceDirectoryRegistrations: [{ namespace: "ns", service: "svc" }] }),
    other: [{ namespace: "ns-2", service: "svc" }],
    expect: "replaced",
  },
  { type: T.forwardingRule, field: "subnetwork", inputs: internalRule(), other: "other-subnet", expect: "replaced" },
  {
    type: T.backendService,
    field: "cdnPolicy",
    inputs: passthrough({ cdnPolicy: { cacheMode: "CACHE_ALL_STATIC" } }),
    other: { cacheMode: "USE_ORIGIN_HEADERS" },
    expect: "updated in place",
  },
  {
    type: T.backendService,
    field: "deletionPolicy",
    inputs: passthrough({ deletionPolicy: "PREVENT" }),
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.backendService,
    field: "iap",
    inputs: passthrough({ iap: { enabled: false } }),
    other: { enabled: true },
    expect: "updated in place",
  },
  {
    type: T.backendService,
    field: "logConfig",
    inputs: passthrough({ logConfig: { enable: true } }),
    other: { enable: false },
    expect: "updated in place",
  },
  {
    type: T.backendService,
    field: "portName",
    inputs: passthrough({ portName: "http" }),
    other: "https",
    expect: "updated in place",
  },
  {
    type: T.backendService,
    field: "protocol",
    inputs: passthrough({ protocol: "UDP" }),
    other: "TCP",
    expect: "updated in place",
  },
  {
    type: T.backendService,
    field: "sessionAffinity",
    inputs: passthrough({ sessionAffinity: "CLIENT_IP" }),
    other: "NONE",
    expect: "updated in place",
  },
  {
    type: T.backendService,
    field: "timeoutSec",
    inputs: passthrough({ timeoutSec: 30 }),
    other: 40,
    expect: "updated in place",
  },
  {
    type: T.targetPool,
    field: "deletionPolicy",
    inputs: { ...TP, deletionPolicy: "PREVENT" },
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.targetPool,
    field: "instances",
    inputs: { ...TP, instances: [NODE_1] },
    other: [`zones/${REGION}-a/instances/node-2`],
    expect: "updated in place",
  },
  {
    type: T.healthCheck,
    field: "deletionPolicy",
    inputs: { ...REGION_HC, deletionPolicy: "PREVENT" },
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.healthCheck,
    field: "logConfig",
    inputs: { ...REGION_HC, logConfig: { enable: true } },
    other: { enable: false },
    expect: "updated in place",
  },
  {
    type: T.globalHealthCheck,
    field: "deletionPolicy",
    inputs: { project: PROJECT, name: "ghc-2", httpHealthCheck: { port: 1 }, deletionPolicy: "PREVENT" },
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.globalHealthCheck,
    field: "logConfig",
    inputs: { project: PROJECT, name: "ghc-2", httpHealthCheck: { port: 1 }, logConfig: { enable: true } },
    other: { enable: false },
    expect: "updated in place",
  },
  {
    type: T.httpHealthCheck,
    field: "deletionPolicy",
    inputs: { project: PROJECT, name: "legacy-2", deletionPolicy: "PREVENT" },
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.instanceGroup,
    field: "deletionPolicy",
    inputs: { ...IG, deletionPolicy: "PREVENT" },
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.instanceGroup,
    field: "instances",
    inputs: { ...IG, instances: [NODE_1] },
    other: [`zones/${REGION}-a/instances/node-1`, `zones/${REGION}-a/instances/node-2`],
    expect: "updated in place",
  },
  {
    type: T.instanceGroup,
    field: "network",
    inputs: IG,
    other: `projects/${PROJECT}/global/networks/default`,
    expect: "replaced",
  },
  {
    type: T.firewall,
    field: "deletionPolicy",
    inputs: { ...FW, deletionPolicy: "PREVENT" },
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.firewall,
    field: "destinationRanges",
    inputs: { ...FW, destinationRanges: ["203.0.113.7"] },
    other: ["203.0.113.8"],
    expect: "updated in place",
  },
  {
    type: T.firewall,
    field: "direction",
    inputs: { ...FW, sourceRanges: null, direction: "EGRESS", destinationRanges: ["10.0.0.0/8"] },
    other: "INGRESS",
    expect: "replaced",
  },
  {
    type: T.firewall,
    field: "enableLogging",
    inputs: { ...FW, enableLogging: true },
    other: false,
    expect: "updated in place",
  },
  {
    type: T.route,
    field: "deletionPolicy",
    inputs: { ...ROUTE, deletionPolicy: "PREVENT" },
    other: "DELETE",
    expect: "updated in place",
  },
  {
    type: T.route,
    field: "nextHopInstanceZone",
    inputs: { ...ROUTE, nextHopInstanceZone: `${REGION}-a` },
    other: `${REGION}-b`,
    expect: "replaced",
  },
  {
    type: T.route,
    field: "nextHopIp",
    inputs: { project: PROJECT, name: "r", destRange: "10.64.0.0/24", network: "k8s-net", nextHopIp: "10.130.0.9" },
    other: "10.130.0.10",
    expect: "replaced",
  },
];

describe("GCE emulator rules (one row per rule)", () => {
  describe("Optional + Computed inputs: omitted keeps the resource's value, no diff (the provider's schema)", () => {
    for (const row of OPTIONAL_COMPUTED_ROWS) {
      it(`${row.type.split(":").pop() ?? row.type}.${row.field}: omitted → no diff, value kept; another value → ${row.expect}`, () => {
        const state = world();
        const api = new ProviderApi(state);
        for (const [type, inputs] of row.setup ?? []) state.create(type, inputs);
        const created = api.create({ type: row.type, inputs: row.inputs });
        assert.notEqual(created.outputs[row.field] ?? null, null, `${row.field} is set on the resource`);
        const { [row.field]: _omitted, ...news } = row.inputs;
        assert.deepEqual(
          api.diff({ type: row.type, id: created.id, olds: created.outputs, oldInputs: row.inputs, news }),
          { changes: false, diffs: [], replaces: [], deleteBeforeReplace: false },
        );
        const updated = api.update({ type: row.type, id: created.id, olds: created.outputs, news });
        assert.deepEqual(
          updated.outputs[row.field],
          created.outputs[row.field],
          `${row.field} kept by an update that omits it`,
        );
        const changed = api.diff({
          type: row.type,
          id: created.id,
          olds: created.outputs,
          oldInputs: row.inputs,
          news: { ...row.inputs, [row.field]: row.other },
        });
        assert.deepEqual(
          [changed.diffs, changed.replaces.length > 0 ? "replaced" : "updated in place"],
          [[row.field], row.expect],
        );
      });
    }
  });

  describe("inputs the provider accepts", () => {
    it("http2HealthCheck on a RegionHealthCheck and ipv6EndpointType on an Address pass check", () => {
      const api = new ProviderApi(world());
      assert.deepEqual(
        api.check({
          type: T.healthCheck,
          urn: "urn:x::hc",
          olds: {},
          news: { ...regional, name: "h2", http2HealthCheck: { port: 443 } },
        }).failures,
        [],
      );
      assert.deepEqual(
        api.check({
          type: T.address,
          urn: "urn:x::a",
          olds: {},
          news: { ...regional, name: "a6", ipv6EndpointType: "NETLB" },
        }).failures,
        [],
      );
    });

    it("internal addresses and ephemeral internal forwarding-rule IPs come from their subnetwork's range", () => {
      const state = world();
      // node-1 and node-3 (k8s-net, us-central1) hold 10.130.0.2 and 10.130.0.3.
      assert.equal(
        state.create(T.address, { ...regional, name: "a", addressType: "INTERNAL", subnetwork: "k8s-subnet" })
          .properties.address,
        "10.130.0.4",
      );
      assert.equal(state.create(T.forwardingRule, internalRule()).properties.ipAddress, "10.130.0.5");
    });
  });
});
