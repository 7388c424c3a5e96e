// The GCE emulator's Shared VPC (networks.ts): a host project, its attached service projects, and
// which cross-project network and subnetwork references GCE accepts; one row per rule.
import * as assert from "node:assert/strict";

import { ProviderApi } from "../provider-api";
import type { JsonObject } from "../json";
import { GceState } from "../state";
import { ENDPOINT, REGION, T, gceError } from "./rulesFixtures";

const HOST = "vpc-host";
const SERVICE = "dccm-test";
const LONE = "lone-project";
const HOST_NET = `projects/${HOST}/global/networks/k8s-net`;
const HOST_SUBNET = `projects/${HOST}/regions/${REGION}/subnetworks/k8s-subnet`;
const HOST_NET_LINK = `${ENDPOINT}/compute/v1/${HOST_NET}`;
const HOST_SUBNET_LINK = `${ENDPOINT}/compute/v1/${HOST_SUBNET}`;
const CROSS = (field: string, link: string): string =>
  `Invalid value for field 'resource.${field}': '${link}'. Cross-project references for this resource are not allowed.`;

/** The host's custom-mode k8s-net, a node of the service project on it, `shared`: the service project attached. */
function world(shared: boolean): GceState {
  const state = new GceState({
    endpoint: ENDPOINT,
    project: SERVICE,
    region: REGION,
    zones: [`${REGION}-a`],
    networks: [
      {
        name: "k8s-net",
        project: HOST,
        autoCreateSubnetworks: false,
        subnetworks: [{ name: "k8s-subnet", ipCidrRange: "10.130.0.0/20" }],
      },
    ],
  });
  state.enableXpnHost(HOST);
  if (shared) state.enableXpnResource(HOST, SERVICE);
  state.putInstance(SERVICE, `${REGION}-a`, "node-1", {
    networkInterfaces: [{ network: HOST_NET, subnetwork: HOST_SUBNET }],
  });
  state.create(T.healthCheck, { project: SERVICE, region: REGION, name: "hc", httpHealthCheck: { port: 10256 } });
  return state;
}

interface Row {
  readonly rule: string;
  readonly shared: boolean;
  readonly type: string;
  readonly inputs: JsonObject;
  readonly expect: "accepted" | readonly [number, string];
}

const FIREWALL = { name: "fw", network: "k8s-net", allows: [{ protocol: "tcp" }], sourceRanges: ["0.0.0.0/0"] };
const ROUTE = {
  name: "r",
  destRange: "10.64.0.0/24",
  network: "k8s-net",
  nextHopInstance: `projects/${SERVICE}/zones/${REGION}-a/instances/node-1`,
};
const INTERNAL_RULE = {
  region: REGION,
  name: "fr",
  loadBalancingScheme: "INTERNAL",
  ports: ["80"],
  network: HOST_NET,
  subnetwork: HOST_SUBNET,
};

const ROWS: Row[] = [
  {
    rule: "a firewall in the host project on its network is accepted",
    shared: true,
    type: T.firewall,
    inputs: { ...FIREWALL, project: HOST },
    expect: "accepted",
  },
  {
    rule: "a firewall in an attached service project naming the host's network is refused",
    shared: true,
    type: T.firewall,
    inputs: { ...FIREWALL, project: SERVICE, network: HOST_NET },
    expect: [400, CROSS("network", HOST_NET_LINK)],
  },
  {
    rule: "a route in the host project to an instance of an attached service project is accepted",
    shared: true,
    type: T.route,
    inputs: { ...ROUTE, project: HOST },
    expect: "accepted",
  },
  {
    rule: "a route in an attached service project naming the host's network is refused",
    shared: true,
    type: T.route,
    inputs: { ...ROUTE, project: SERVICE, network: HOST_NET },
    expect: [400, CROSS("network", HOST_NET_LINK)],
  },
  {
    rule: "an internal forwarding rule of an attached service project on the host's network and subnet is accepted",
    shared: true,
    type: T.forwardingRule,
    inputs: { ...INTERNAL_RULE, project: SERVICE },
    expect: "accepted",
  },
  {
    rule: "the same from a service project not yet attached is refused",
    shared: false,
    type: T.forwardingRule,
    inputs: { ...INTERNAL_RULE, project: SERVICE },
    expect: [400, CROSS("network", HOST_NET_LINK)],
  },
  {
    rule: "an internal address of an attached service project in the host's subnet is accepted",
    shared: true,
    type: T.address,
    inputs: { project: SERVICE, region: REGION, name: "a", addressType: "INTERNAL", subnetwork: HOST_SUBNET },
    expect: "accepted",
  },
  {
    rule: "an internal address of a project attached to no host in the host's subnet is refused",
    shared: true,
    type: T.address,
    inputs: { project: LONE, region: REGION, name: "a", addressType: "INTERNAL", subnetwork: HOST_SUBNET },
    expect: [400, CROSS("subnetwork", HOST_SUBNET_LINK)],
  },
  {
    rule: "an internal backend service of an attached service project on the host's network is accepted",
    shared: true,
    type: T.backendService,
    inputs: {
      project: SERVICE,
      region: REGION,
      name: "bs",
      protocol: "TCP",
      loadBalancingScheme: "INTERNAL",
      healthChecks: `regions/${REGION}/healthChecks/hc`,
      network: HOST_NET,
    },
    expect: "accepted",
  },
  {
    rule: "an instance group of an attached service project on the host's network, holding its VM there, is accepted",
    shared: true,
    type: T.instanceGroup,
    inputs: { project: SERVICE, zone: `${REGION}-a`, name: "ig", network: HOST_NET, instances: [`${REGION}-a/node-1`] },
    expect: "accepted",
  },
  {
    rule: "a GCE_VM_IP NEG of an attached service project in the host's network and subnet is accepted",
    shared: true,
    type: "gcp:compute/networkEndpointGroup:NetworkEndpointGroup",
    inputs: {
      project: SERVICE,
      zone: `${REGION}-a`,
      name: "neg",
      networkEndpointType: "GCE_VM_IP",
      network: HOST_NET,
      subnetwork: HOST_SUBNET,
    },
    expect: "accepted",
  },
];

describe("GCE emulator: Shared VPC (one row per rule)", () => {
  describe("cross-project references", () => {
    for (const row of ROWS) {
      it(row.rule, () => {
        const state = world(row.shared);
        if (row.expect === "accepted") {
          const stored = state.create(row.type, row.inputs);
          assert.deepEqual([stored.project, stored.name], [row.inputs.project, row.inputs.name]);
        } else {
          const e = gceError(() => state.create(row.type, row.inputs));
          assert.deepEqual([e.status, e.message], row.expect);
        }
      });
    }
  });

  describe("host and service projects", () => {
    it("a service project is attached to its host: getXpnHost names it; none for another project", () => {
      const state = world(true);
      assert.deepEqual([state.xpnHostOf(SERVICE), state.xpnHostOf(LONE)], [HOST, undefined]);
    });

    it("a service project cannot become a host", () => {
      const e = gceError(() => world(true).enableXpnHost(SERVICE));
      assert.deepEqual(
        [e.status, e.message],
        [
          400,
          `Project '${SERVICE}' is a service project of Shared VPC host '${HOST}': a project cannot be both a host and a service project.`,
        ],
      );
    });

    it("a project is attached to one host only, and only to a host", () => {
      const state = world(true);
      state.enableXpnHost("other-host");
      const twice = gceError(() => state.enableXpnResource("other-host", SERVICE));
      assert.deepEqual(
        [twice.status, twice.message],
        [400, `Project '${SERVICE}' cannot be attached to Shared VPC host 'other-host': it is attached to '${HOST}'.`],
      );
      const noHost = gceError(() => state.enableXpnResource(LONE, "x-project"));
      assert.deepEqual(
        [noHost.status, noHost.message],
        [400, `Project '${LONE}' is not a Shared VPC host project (enableXpnHost first).`],
      );
      const host = gceError(() => state.enableXpnResource(HOST, "other-host"));
      assert.deepEqual(
        [host.status, host.message],
        [400, `Project 'other-host' cannot be attached to Shared VPC host '${HOST}': it is a host project.`],
      );
    });

    it("reset forgets the Shared VPC: the service project is attached to nothing", () => {
      const state = world(true);
      state.reset();
      assert.equal(state.xpnHostOf(SERVICE), undefined);
    });
  });

  describe("provider face", () => {
    it("a Firewall and a Route are created in their `project` input, not the provider's", () => {
      const state = world(true);
      const api = new ProviderApi(state);
      for (const [type, inputs] of [
        [T.firewall, { ...FIREWALL, project: HOST }],
        [T.route, { ...ROUTE, project: HOST }],
      ] as const) {
        const checked = api.check({ type, urn: `urn:pulumi:s::p::${type}::r`, olds: {}, news: inputs });
        assert.deepEqual(checked.failures, []);
        const created = api.create({ type, inputs: checked.inputs });
        assert.equal(created.outputs.project, HOST);
      }
      assert.deepEqual(
        state
          .list()
          .filter((r) => r.kind === "firewalls" || r.kind === "routes")
          .map((r) => [r.kind, r.project, r.name]),
        [
          ["firewalls", HOST, "fw"],
          ["routes", HOST, "r"],
        ],
      );
    });
  });
});
