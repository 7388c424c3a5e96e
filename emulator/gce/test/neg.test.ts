// The GCE emulator's rules (`npm run test:emulator`), one row each: what real GCE (and the
// provider @pulumi/gcp bridges) accepts, refuses with which message, replaces or updates in place.
// The source of each rule is cited next to it in emulator/gce/ (kinds.ts, validation.ts, rules/,
// networks.ts, instances.ts); a change that loosens a rule fails its row here.
// This file: zonal GCE_VM_IP network endpoint groups (rules/networkEndpointGroups.ts), their
// endpoints over REST and through NetworkEndpointList (networkEndpointLists.ts), NEG backends of
// backend services, and the one subnetwork of an unmanaged instance group (rules/instanceGroups.ts).
import * as assert from "node:assert/strict";

import { startGceEmulator, type GceEmulator } from "../index";
import type { JsonObject } from "../json";
import type { NetworkSpec } from "../networks";
import { ProviderApi } from "../provider-api";
import { GceState } from "../state";
import { ENDPOINT, gceError, HC, PROJECT, REGION, passthrough, regional, T, V1 } from "./rulesFixtures";

const NEG = "gcp:compute/networkEndpointGroup:NetworkEndpointGroup";
const NEL = "gcp:compute/networkEndpointList:NetworkEndpointList";
const ZONE_A = `${REGION}-a`;
const ZONE_B = `${REGION}-b`;
const SUB_A = `${V1}/regions/${REGION}/subnetworks/sub-a`;
const SUB_B = `${V1}/regions/${REGION}/subnetworks/sub-b`;
const MULTI_NET = `projects/${PROJECT}/global/networks/multi-net`;
const NETWORKS: NetworkSpec[] = [
  { name: "default", autoCreateSubnetworks: true },
  {
    name: "multi-net",
    autoCreateSubnetworks: false,
    subnetworks: [
      {
        name: "sub-a",
        ipCidrRange: "10.170.0.0/20",
        secondaryIpRanges: [{ rangeName: "pods", ipCidrRange: "10.4.0.0/14" }],
      },
      { name: "sub-b", ipCidrRange: "10.180.0.0/20" },
    ],
  },
];
const negInputs = (over: JsonObject = {}): JsonObject => ({
  project: PROJECT,
  zone: ZONE_A,
  name: "neg-a",
  network: MULTI_NET,
  subnetwork: "sub-a",
  networkEndpointType: "GCE_VM_IP",
  description: "d",
  ...over,
});
const NEG_A = `${V1}/zones/${ZONE_A}/networkEndpointGroups/neg-a`;

/** vm-a1, vm-a2 (sub-a), vm-b1 (sub-b) in zone a; vm-c1 (sub-a) in zone b; a regional health check. */
function negWorld(): GceState {
  const state = new GceState({
    endpoint: ENDPOINT,
    project: PROJECT,
    region: REGION,
    zones: [ZONE_A, ZONE_B],
    networks: NETWORKS,
  });
  const nic = (subnetwork: string, networkIP: string, alias?: string): JsonObject => ({
    network: "multi-net",
    subnetwork,
    networkIP,
    ...(alias === undefined ? {} : { aliasIpRanges: [{ ipCidrRange: alias, subnetworkRangeName: "pods" }] }),
  });
  state.putInstance(PROJECT, ZONE_A, "vm-a1", { networkInterfaces: [nic("sub-a", "10.170.0.11", "10.4.1.0/24")] });
  state.putInstance(PROJECT, ZONE_A, "vm-a2", { networkInterfaces: [nic("sub-a", "10.170.0.12")] });
  state.putInstance(PROJECT, ZONE_A, "vm-b1", { networkInterfaces: [nic("sub-b", "10.180.0.11")] });
  state.putInstance(PROJECT, ZONE_B, "vm-c1", { networkInterfaces: [nic("sub-a", "10.170.0.21")] });
  state.create(T.healthCheck, { ...regional, name: "hc", httpHealthCheck: { port: 10256 } });
  return state;
}

const negKey = { kind: "networkEndpointGroups", project: PROJECT, scope: ZONE_A, name: "neg-a" } as const;

describe("GCE emulator rules: instances seeded with a subnetwork per interface", () => {
  it("the interface carries its subnetwork's link; none named is the network's subnetwork in the region", () => {
    const state = negWorld();
    state.putInstance(PROJECT, ZONE_A, "plain");
    const nic = (name: string): JsonObject | undefined => {
      const nics = state.get({ kind: "instances", project: PROJECT, scope: ZONE_A, name }).properties.networkInterfaces;
      return Array.isArray(nics) ? (nics[0] as JsonObject) : undefined;
    };
    assert.equal(nic("vm-b1")?.subnetwork, SUB_B);
    assert.equal(nic("plain")?.subnetwork, `${V1}/regions/${REGION}/subnetworks/default`);
  });

  it("a subnetwork of another network is refused", () => {
    const e = gceError(() =>
      negWorld().putInstance(PROJECT, ZONE_A, "x", {
        networkInterfaces: [{ network: "default", subnetwork: "sub-a" }],
      }),
    );
    assert.deepEqual(
      [e.status, e.message],
      [
        400,
        `Invalid value for field 'resource.subnetwork': '${SUB_A}'. Subnetwork should belong to network '${V1}/global/networks/default', but it belongs to '${V1}/global/networks/multi-net'.`,
      ],
    );
  });
});

describe("GCE emulator rules: unmanaged instance groups hold VMs of one subnetwork", () => {
  const group = (instances: string[]): JsonObject => ({
    project: PROJECT,
    zone: ZONE_A,
    name: "ig",
    network: MULTI_NET,
    instances,
  });
  it("VMs of one subnetwork: accepted", () => {
    assert.equal(negWorld().create(T.instanceGroup, group([`${ZONE_A}/vm-a1`, `${ZONE_A}/vm-a2`])).properties.size, 2);
  });
  it("insert with VMs of two subnetworks: GCE's 400 wrongSubnetwork", () => {
    const e = gceError(() => negWorld().create(T.instanceGroup, group([`${ZONE_A}/vm-a1`, `${ZONE_A}/vm-b1`])));
    assert.deepEqual(
      [e.status, e.reason, e.message],
      [
        400,
        "wrongSubnetwork",
        `Resource 'projects/${PROJECT}/zones/${ZONE_A}/instances/vm-b1' is expected to be in the subnetwork 'projects/${PROJECT}/regions/${REGION}/subnetworks/sub-a' but is in the subnetwork 'projects/${PROJECT}/regions/${REGION}/subnetworks/sub-b'.`,
      ],
    );
  });
  it("addInstances of a VM of another subnetwork: refused, the group unchanged", () => {
    const state = negWorld();
    state.create(T.instanceGroup, group([`${ZONE_A}/vm-a1`]));
    const key = { kind: "instanceGroups", project: PROJECT, scope: ZONE_A, name: "ig" } as const;
    const e = gceError(() => state.changeMembers(key, [`zones/${ZONE_A}/instances/vm-b1`], true));
    assert.equal(e.reason, "wrongSubnetwork");
    assert.deepEqual(state.get(key).properties.instances, [`${V1}/zones/${ZONE_A}/instances/vm-a1`]);
  });
});

describe("GCE emulator rules: zonal network endpoint groups", () => {
  const ROWS: ReadonlyArray<{ rule: string; inputs: JsonObject; expect: "accepted" | readonly [number, string] }> = [
    { rule: "GCE_VM_IP in a subnetwork of its network: accepted", inputs: negInputs(), expect: "accepted" },
    {
      rule: "a GCE_VM_IP NEG has no default port",
      inputs: negInputs({ defaultPort: 80 }),
      expect: [
        400,
        "Invalid value for field 'resource.defaultPort': a network endpoint group of type GCE_VM_IP has no port.",
      ],
    },
    {
      rule: "the network is required",
      inputs: negInputs({ network: null }),
      expect: [400, `Missing required argument: "network"`],
    },
    {
      rule: "an unknown endpoint type is refused",
      inputs: negInputs({ networkEndpointType: "VM" }),
      expect: [
        400,
        "expected networkEndpointType to be one of [GCE_VM_IP GCE_VM_IP_PORT NON_GCP_PRIVATE_IP_PORT INTERNET_IP_PORT INTERNET_FQDN_PORT SERVERLESS PRIVATE_SERVICE_CONNECT GCE_VM_IP_DEDICATED_BACKEND], got VM",
      ],
    },
    {
      rule: "the subnetwork must belong to the network",
      inputs: negInputs({ network: `projects/${PROJECT}/global/networks/default` }),
      expect: [
        400,
        `Invalid value for field 'resource.subnetwork': '${SUB_A}'. Subnetwork should belong to network '${V1}/global/networks/default', but it belongs to '${V1}/global/networks/multi-net'.`,
      ],
    },
  ];
  for (const row of ROWS)
    it(row.rule, () => {
      const state = negWorld();
      if (row.expect === "accepted") {
        const neg = state.create(NEG, row.inputs).properties;
        assert.deepEqual(
          [neg.network, neg.subnetwork, neg.networkEndpointType, neg.size, neg.selfLink],
          [`${V1}/global/networks/multi-net`, SUB_A, "GCE_VM_IP", 0, NEG_A],
        );
      } else {
        const e = gceError(() => state.create(NEG, row.inputs));
        assert.deepEqual([e.status, e.message], row.expect);
      }
    });

  it("without a type it is GCE's default GCE_VM_IP_PORT", () => {
    const neg = negWorld().create(NEG, negInputs({ networkEndpointType: null })).properties;
    assert.equal(neg.networkEndpointType, "GCE_VM_IP_PORT");
  });

  it("every input forces a replacement (the provider's ForceNew)", () => {
    const state = negWorld();
    const created = state.create(NEG, negInputs());
    const diff = new ProviderApi(state).diff({
      type: NEG,
      id: state.path(created),
      olds: created.properties,
      news: negInputs({ description: "e", subnetwork: "sub-b" }),
    });
    assert.deepEqual(
      [diff.diffs, diff.replaces, diff.deleteBeforeReplace],
      [["description", "subnetwork"], ["description", "subnetwork"], true],
    );
  });
});

describe("GCE emulator rules: GCE_VM_IP endpoints (attach, detach)", () => {
  const attach = (state: GceState, endpoints: JsonObject[]): void => {
    state.changeEndpoints(negKey, endpoints, true);
  };
  const endpoints = (state: GceState): string[] =>
    state.endpointsOf(negKey).map((e) => `${e.instance.slice(e.instance.lastIndexOf("/") + 1)}=${e.ipAddress}`);
  const withNeg = (): GceState => {
    const state = negWorld();
    state.create(NEG, negInputs());
    return state;
  };

  it("a VM of the NEG's zone and subnetwork by its primary IP, and one by an alias IP: attached; size follows", () => {
    const state = withNeg();
    attach(state, [
      { instance: "vm-a1", ipAddress: "10.4.1.7" },
      { instance: `zones/${ZONE_A}/instances/vm-a2`, ipAddress: "10.170.0.12" },
    ]);
    assert.deepEqual(endpoints(state), ["vm-a1=10.4.1.7", "vm-a2=10.170.0.12"]);
    assert.equal(state.get(negKey).properties.size, 2);
  });

  it("no IP: the VM's primary IP in the NEG's subnetwork; no instance: the VM holding the IP", () => {
    const state = withNeg();
    attach(state, [{ instance: "vm-a1" }, { ipAddress: "10.170.0.12" }]);
    assert.deepEqual(endpoints(state), ["vm-a1=10.170.0.11", "vm-a2=10.170.0.12"]);
  });

  it("the same endpoint again changes nothing (no update recorded)", () => {
    const state = withNeg();
    attach(state, [{ instance: "vm-a1", ipAddress: "10.170.0.11" }]);
    state.clearHistory();
    attach(state, [{ instance: "vm-a1", ipAddress: "10.170.0.11" }]);
    assert.deepEqual([endpoints(state), state.history()], [["vm-a1=10.170.0.11"], []]);
  });

  const REFUSED: ReadonlyArray<readonly [string, JsonObject[], string]> = [
    [
      "a VM of another zone",
      [{ instance: `zones/${ZONE_B}/instances/vm-c1`, ipAddress: "10.170.0.21" }],
      `Invalid value for field 'networkEndpoints[0].instance': 'zones/${ZONE_B}/instances/vm-c1'. Instance must be in zone '${ZONE_A}' of the network endpoint group.`,
    ],
    [
      "a VM of another subnetwork",
      [{ instance: "vm-b1", ipAddress: "10.180.0.11" }],
      `Invalid value for field 'networkEndpoints[0].instance': 'vm-b1'. Instance has no network interface in '${SUB_A}', the subnetwork of the network endpoint group.`,
    ],
    [
      "an IP that is not the VM's",
      [{ instance: "vm-a1", ipAddress: "10.170.0.12" }],
      `Invalid value for field 'networkEndpoints[0].ipAddress': '10.170.0.12'. The IP address is neither the primary internal IP nor in an alias IP range of the network interface of instance 'vm-a1' in '${SUB_A}'.`,
    ],
    [
      "an IP no VM of the zone holds",
      [{ ipAddress: "10.170.0.99" }],
      "Invalid value for field 'networkEndpoints[0].ipAddress': '10.170.0.99'. The IP address must belong to a VM in the zone of the network endpoint group.",
    ],
    [
      "a port",
      [{ instance: "vm-a1", ipAddress: "10.170.0.11", port: 80 }],
      "Invalid value for field 'networkEndpoints[0].port': '80'. A network endpoint of type GCE_VM_IP has no port.",
    ],
    [
      "a second endpoint of one VM",
      [
        { instance: "vm-a1", ipAddress: "10.170.0.11" },
        { instance: "vm-a1", ipAddress: "10.4.1.7" },
      ],
      "Invalid value for field 'networkEndpoints[1]': '10.4.1.7'. Network endpoint group 'neg-a' already has an endpoint of instance 'vm-a1' with IP address '10.170.0.11': a GCE_VM_IP network endpoint group holds one endpoint per VM and per IP address.",
    ],
  ];
  for (const [what, request, message] of REFUSED)
    it(`${what}: refused, nothing attached`, () => {
      const state = withNeg();
      const e = gceError(() => attach(state, request));
      assert.deepEqual([e.status, e.message, endpoints(state)], [400, message, []]);
    });

  it("a VM that does not exist: 404", () => {
    const e = gceError(() => attach(withNeg(), [{ instance: "gone", ipAddress: "10.170.0.30" }]));
    assert.deepEqual(
      [e.status, e.message],
      [404, `The resource 'projects/${PROJECT}/zones/${ZONE_A}/instances/gone' was not found`],
    );
  });

  it("detach: the endpoints named leave (by instance and IP, or by IP); one not attached changes nothing", () => {
    const state = withNeg();
    attach(state, [{ instance: "vm-a1" }, { instance: "vm-a2" }]);
    state.changeEndpoints(
      negKey,
      [{ ipAddress: "10.170.0.12" }, { instance: "vm-b1", ipAddress: "10.180.0.11" }],
      false,
    );
    assert.deepEqual(endpoints(state), ["vm-a1=10.170.0.11"]);
  });

  it("endpoints of a NEG of another type: the emulator models GCE_VM_IP only", () => {
    const state = negWorld();
    state.create(NEG, negInputs({ networkEndpointType: "GCE_VM_IP_PORT" }));
    const e = gceError(() => attach(state, [{ instance: "vm-a1", ipAddress: "10.170.0.11", port: 80 }]));
    assert.deepEqual(
      [e.status, e.message],
      [
        400,
        `The GCE emulator models the endpoints of GCE_VM_IP network endpoint groups only; 'projects/${PROJECT}/zones/${ZONE_A}/networkEndpointGroups/neg-a' is of type GCE_VM_IP_PORT.`,
      ],
    );
  });
});

describe("GCE emulator rules: NEG backends of regional backend services", () => {
  const neg = (state: GceState, name: string, type = "GCE_VM_IP"): string => {
    state.create(NEG, negInputs({ name, networkEndpointType: type }));
    return `projects/${PROJECT}/zones/${ZONE_A}/networkEndpointGroups/${name}`;
  };

  it("a GCE_VM_IP NEG backend: balancingMode CONNECTION by default; the passthrough fields are stored as given", () => {
    const state = negWorld();
    const group = neg(state, "neg-a");
    const bs = state.create(
      T.backendService,
      passthrough({
        backends: [{ group }],
        connectionDrainingTimeoutSec: 30,
        localityLbPolicy: "WEIGHTED_MAGLEV",
        networkPassThroughLbTrafficPolicy: { zonalAffinity: { spillover: "ZONAL_AFFINITY_SPILL_CROSS_ZONE" } },
      }),
    ).properties;
    assert.deepEqual(
      [bs.backends, bs.connectionDrainingTimeoutSec, bs.localityLbPolicy, bs.networkPassThroughLbTrafficPolicy],
      [
        [{ group: NEG_A, balancingMode: "CONNECTION" }],
        30,
        "WEIGHTED_MAGLEV",
        { zonalAffinity: { spillover: "ZONAL_AFFINITY_SPILL_CROSS_ZONE" } },
      ],
    );
  });

  it("instance groups and NEGs in one backend service: refused", () => {
    const state = negWorld();
    const group = neg(state, "neg-a");
    state.create(T.instanceGroup, { project: PROJECT, zone: ZONE_A, name: "ig", network: MULTI_NET });
    const e = gceError(() =>
      state.create(
        T.backendService,
        passthrough({ backends: [{ group: `zones/${ZONE_A}/instanceGroups/ig` }, { group }] }),
      ),
    );
    assert.deepEqual(
      [e.status, e.message],
      [
        400,
        `Invalid value for field 'resource.backends[1].group': '${NEG_A}'. A backend service's backends must all be instance groups or all be network endpoint groups.`,
      ],
    );
  });

  it("a GCE_VM_IP_PORT NEG behind a passthrough backend service: refused", () => {
    const state = negWorld();
    const group = neg(state, "neg-p", "GCE_VM_IP_PORT");
    const e = gceError(() => state.create(T.backendService, passthrough({ backends: [{ group }] })));
    assert.deepEqual(
      [e.status, e.message],
      [
        400,
        `Invalid value for field 'resource.backends[0].group': '${V1}/zones/${ZONE_A}/networkEndpointGroups/neg-p'. A backend service with loadBalancingScheme INTERNAL takes network endpoint groups of type GCE_VM_IP only, not GCE_VM_IP_PORT.`,
      ],
    );
  });

  it("a GCE_VM_IP NEG behind a proxy (INTERNAL_MANAGED) backend service: refused", () => {
    const state = negWorld();
    const group = neg(state, "neg-a");
    const e = gceError(() =>
      state.create(T.backendService, {
        ...regional,
        name: "bs",
        protocol: "HTTP",
        healthChecks: HC,
        loadBalancingScheme: "INTERNAL_MANAGED",
        backends: [{ group, balancingMode: "RATE", maxRatePerEndpoint: 10 }],
      }),
    );
    assert.deepEqual(
      [e.status, e.message],
      [
        400,
        `Invalid value for field 'resource.backends[0].group': '${NEG_A}'. A network endpoint group of type GCE_VM_IP is a backend of a passthrough (INTERNAL or EXTERNAL) backend service only, not of one with loadBalancingScheme INTERNAL_MANAGED.`,
      ],
    );
  });

  it("deleting a NEG a backend service uses: 400 resourceInUseByAnotherResource; once unused, deleted", () => {
    const state = negWorld();
    const group = neg(state, "neg-a");
    state.create(T.backendService, passthrough({ backends: [{ group }] }));
    const e = gceError(() => state.delete(negKey));
    assert.deepEqual(
      [e.status, e.reason, e.message],
      [
        400,
        "resourceInUseByAnotherResource",
        `The network_endpoint_group resource 'projects/${PROJECT}/zones/${ZONE_A}/networkEndpointGroups/neg-a' is already being used by 'projects/${PROJECT}/regions/${REGION}/backendServices/bs'`,
      ],
    );
    state.delete({ kind: "backendServices", project: PROJECT, scope: REGION, name: "bs" });
    state.delete(negKey);
    assert.equal(state.find(negKey), undefined);
  });
});

describe("GCE emulator provider face: NetworkEndpointList", () => {
  const setup = (): { state: GceState; api: ProviderApi } => {
    const state = negWorld();
    state.create(NEG, negInputs());
    return { state, api: new ProviderApi(state) };
  };
  const list = (networkEndpoints: JsonObject[]): JsonObject => ({
    project: PROJECT,
    zone: ZONE_A,
    networkEndpointGroup: "neg-a",
    networkEndpoints,
  });
  const ID = `${PROJECT}/${ZONE_A}/neg-a`;

  it("create attaches every endpoint; ID {project}/{zone}/{network_endpoint_group}; read lists them", () => {
    const { state, api } = setup();
    const created = api.create({
      type: NEL,
      inputs: list([
        { instance: "vm-a1", ipAddress: "10.170.0.11" },
        { instance: "vm-a2", ipAddress: "10.170.0.12" },
      ]),
    });
    assert.equal(created.id, ID);
    const read = api.read({ type: NEL, id: ID, state: created.outputs });
    assert.deepEqual(read.outputs, {
      networkEndpointGroup: "neg-a",
      networkEndpoints: [
        { instance: "vm-a1", ipAddress: "10.170.0.11" },
        { instance: "vm-a2", ipAddress: "10.170.0.12" },
      ],
      project: PROJECT,
      zone: ZONE_A,
    });
    assert.equal(state.get(negKey).properties.size, 2);
  });

  it("update detaches the removed endpoints and attaches the added ones; the diff is in place", () => {
    const { state, api } = setup();
    const olds = api.create({
      type: NEL,
      inputs: list([
        { instance: "vm-a1", ipAddress: "10.170.0.11" },
        { instance: "vm-a2", ipAddress: "10.170.0.12" },
      ]),
    }).outputs;
    const news = list([{ instance: "vm-a2", ipAddress: "10.170.0.12" }]);
    const diff = api.diff({ type: NEL, id: ID, olds, news });
    assert.deepEqual([diff.diffs, diff.replaces], [["networkEndpoints"], []]);
    state.putInstance(PROJECT, ZONE_A, "vm-a3", {
      networkInterfaces: [{ network: "multi-net", subnetwork: "sub-a", networkIP: "10.170.0.13" }],
    });
    const updated = api.update({
      type: NEL,
      id: ID,
      olds,
      news: list([
        { instance: "vm-a2", ipAddress: "10.170.0.12" },
        { instance: "vm-a3", ipAddress: "10.170.0.13" },
      ]),
    });
    assert.deepEqual(updated.outputs.networkEndpoints, [
      { instance: "vm-a2", ipAddress: "10.170.0.12" },
      { instance: "vm-a3", ipAddress: "10.170.0.13" },
    ]);
    assert.deepEqual(
      state.endpointsOf(negKey).map((e) => e.ipAddress),
      ["10.170.0.12", "10.170.0.13"],
    );
  });

  it("another NEG forces a replacement", () => {
    const { api } = setup();
    const olds = api.create({ type: NEL, inputs: list([]) }).outputs;
    const diff = api.diff({ type: NEL, id: ID, olds, news: { ...list([]), networkEndpointGroup: "neg-b" } });
    assert.deepEqual([diff.replaces, diff.deleteBeforeReplace], [["networkEndpointGroup"], true]);
  });

  it("501 endpoints are attached in two calls (500 per call)", () => {
    const state = negWorld();
    state.putNetwork({
      name: "wide-net",
      autoCreateSubnetworks: false,
      subnetworks: [{ name: "wide", ipCidrRange: "10.96.0.0/16" }],
    });
    state.create(NEG, negInputs({ network: `projects/${PROJECT}/global/networks/wide-net`, subnetwork: "wide" }));
    const eps: JsonObject[] = [];
    for (let i = 0; i < 501; i++) {
      const ip = `10.96.${Math.floor(i / 200) + 1}.${(i % 200) + 1}`;
      state.putInstance(PROJECT, ZONE_A, `w-${i}`, {
        networkInterfaces: [{ network: "wide-net", subnetwork: "wide", networkIP: ip }],
      });
      eps.push({ instance: `w-${i}`, ipAddress: ip });
    }
    state.clearHistory();
    new ProviderApi(state).create({ type: NEL, inputs: list(eps) });
    assert.deepEqual(
      state.history().map((h) => [h.kind, h.name, h.op]),
      [
        ["networkEndpointGroups", "neg-a", "update"],
        ["networkEndpointGroups", "neg-a", "update"],
      ],
    );
    assert.equal(state.get(negKey).properties.size, 501);
  });

  it("delete detaches what the list holds; a NEG already gone is success, and reads as gone", () => {
    const { state, api } = setup();
    const outputs = api.create({ type: NEL, inputs: list([{ instance: "vm-a1", ipAddress: "10.170.0.11" }]) }).outputs;
    api.delete({ type: NEL, id: ID, outputs });
    assert.deepEqual(state.endpointsOf(negKey), []);
    state.deleteOutOfBand(negKey);
    api.delete({ type: NEL, id: ID, outputs });
    assert.deepEqual(api.read({ type: NEL, id: ID, state: outputs }), { id: null, outputs: {}, inputs: {} });
  });

  it("a NEG's provider outputs carry no endpoints (they are the list's)", () => {
    const { state, api } = setup();
    api.create({ type: NEL, inputs: list([{ instance: "vm-a1", ipAddress: "10.170.0.11" }]) });
    const read = api.read({ type: NEG, id: state.path(negKey) });
    assert.deepEqual([read.outputs.networkEndpoints, read.outputs.size], [undefined, 1]);
  });
});

describe("GCE emulator provider face: NetworkEndpointGroup and NEG backends", () => {
  it("create answers the NEG's path as ID; delete while a backend service uses it is refused", () => {
    const state = negWorld();
    const api = new ProviderApi(state);
    const created = api.create({ type: NEG, inputs: negInputs() });
    assert.deepEqual(
      [created.id, created.outputs.size, created.outputs.networkEndpointType],
      [`projects/${PROJECT}/zones/${ZONE_A}/networkEndpointGroups/neg-a`, 0, "GCE_VM_IP"],
    );
    api.create({ type: T.backendService, inputs: passthrough({ backends: [{ group: created.id }] }) });
    const e = gceError(() => api.delete({ type: NEG, id: created.id }));
    assert.equal(e.reason, "resourceInUseByAnotherResource");
  });

  it("a backend service switches from instance-group backends to NEG backends in one update; the group is then free", () => {
    const state = negWorld();
    const api = new ProviderApi(state);
    const ig = api.create({
      type: T.instanceGroup,
      inputs: { project: PROJECT, zone: ZONE_A, name: "ig", network: MULTI_NET, instances: [`${ZONE_A}/vm-a1`] },
    }).id;
    const neg = api.create({ type: NEG, inputs: negInputs() }).id;
    const before = api.create({ type: T.backendService, inputs: passthrough({ backends: [{ group: ig }] }) });
    const news = passthrough({
      backends: [{ group: neg, balancingMode: "CONNECTION" }],
      connectionDrainingTimeoutSec: 30,
    });
    const diff = api.diff({ type: T.backendService, id: before.id, olds: before.outputs, news });
    assert.deepEqual([diff.diffs, diff.replaces], [["backends", "connectionDrainingTimeoutSec"], []]);
    const after = api.update({ type: T.backendService, id: before.id, olds: before.outputs, news });
    assert.deepEqual(after.outputs.backends, [{ group: NEG_A, balancingMode: "CONNECTION" }]);
    api.delete({ type: T.instanceGroup, id: ig });
    assert.equal(state.find({ kind: "instanceGroups", project: PROJECT, scope: ZONE_A, name: "ig" }), undefined);
  });
});

describe("GCE emulator REST face: networkEndpointGroups", function () {
  let gce: GceEmulator;
  const Z = `projects/${PROJECT}/zones/${ZONE_A}`;
  const call = async (
    method: string,
    rel: string,
    body?: JsonObject,
  ): Promise<{ status: number; body: JsonObject }> => {
    const res = await fetch(`${gce.computeEndpoint}${rel}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
    });
    return { status: res.status, body: (await res.json()) as JsonObject };
  };

  beforeEach(async () => {
    gce = await startGceEmulator({ networks: NETWORKS });
    gce.putInstance("vm-a1", {
      zone: ZONE_A,
      networkInterfaces: [{ network: "multi-net", subnetwork: "sub-a", networkIP: "10.170.0.11" }],
    });
    gce.putInstance("vm-a2", {
      zone: ZONE_A,
      networkInterfaces: [{ network: "multi-net", subnetwork: "sub-a", networkIP: "10.170.0.12" }],
    });
  });
  afterEach(async () => gce?.stop());

  it("insert, get (size, no endpoints), attach, listNetworkEndpoints (instance by name), detach, list, aggregatedList, delete", async () => {
    const link = (rel: string): string => `${gce.endpoint}/compute/v1/${rel}`;
    const inserted = await call("POST", `${Z}/networkEndpointGroups`, {
      name: "neg-a",
      networkEndpointType: "GCE_VM_IP",
      network: link(`projects/${PROJECT}/global/networks/multi-net`),
      subnetwork: link(`projects/${PROJECT}/regions/${REGION}/subnetworks/sub-a`),
    });
    assert.deepEqual([inserted.status, inserted.body.operationType, inserted.body.status], [200, "insert", "DONE"]);
    const attached = await call("POST", `${Z}/networkEndpointGroups/neg-a/attachNetworkEndpoints`, {
      networkEndpoints: [
        { instance: "vm-a1", ipAddress: "10.170.0.11" },
        { instance: link(`${Z}/instances/vm-a2`), ipAddress: "10.170.0.12" },
      ],
    });
    assert.deepEqual([attached.status, attached.body.operationType], [200, "attachNetworkEndpoints"]);
    const got = await call("GET", `${Z}/networkEndpointGroups/neg-a`);
    assert.deepEqual(
      [got.body.kind, got.body.size, got.body.networkEndpoints, got.body.zone],
      ["compute#networkEndpointGroup", 2, undefined, link(Z)],
    );
    const listed = await call("POST", `${Z}/networkEndpointGroups/neg-a/listNetworkEndpoints`);
    assert.deepEqual(listed.body, {
      kind: "compute#networkEndpointGroupsListNetworkEndpoints",
      items: [
        { networkEndpoint: { instance: "vm-a1", ipAddress: "10.170.0.11" } },
        { networkEndpoint: { instance: "vm-a2", ipAddress: "10.170.0.12" } },
      ],
    });
    const refused = await call("POST", `${Z}/networkEndpointGroups/neg-a/attachNetworkEndpoints`, {
      networkEndpoints: [{ instance: "vm-a1", ipAddress: "10.170.0.11", port: 80 }],
    });
    assert.equal(refused.status, 400);
    const detached = await call("POST", `${Z}/networkEndpointGroups/neg-a/detachNetworkEndpoints`, {
      networkEndpoints: [{ instance: "vm-a1", ipAddress: "10.170.0.11" }],
    });
    assert.deepEqual([detached.status, detached.body.operationType], [200, "detachNetworkEndpoints"]);
    const after = await call("POST", `${Z}/networkEndpointGroups/neg-a/listNetworkEndpoints`);
    assert.deepEqual(after.body.items, [{ networkEndpoint: { instance: "vm-a2", ipAddress: "10.170.0.12" } }]);
    const zonal = await call("GET", `${Z}/networkEndpointGroups`);
    assert.deepEqual(
      (zonal.body.items as JsonObject[]).map((n) => [n.name, n.size]),
      [["neg-a", 1]],
    );
    const aggregated = await call("GET", `projects/${PROJECT}/aggregated/networkEndpointGroups`);
    const items = aggregated.body.items as Record<string, JsonObject>;
    assert.deepEqual(
      ((items[`zones/${ZONE_A}`]?.networkEndpointGroups ?? []) as JsonObject[]).map((n) => n.name),
      ["neg-a"],
    );
    assert.equal((items[`zones/${REGION}-b`]?.warning as JsonObject | undefined)?.code, "NO_RESULTS_ON_PAGE");
    const deleted = await call("DELETE", `${Z}/networkEndpointGroups/neg-a`);
    assert.deepEqual([deleted.status, deleted.body.operationType], [200, "delete"]);
    assert.equal((await call("GET", `${Z}/networkEndpointGroups/neg-a`)).status, 404);
  });
});
