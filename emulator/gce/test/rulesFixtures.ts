// The fixtures the GCE emulator's rule tests share: the world they run in (networks, instances),
// shorthands of common inputs, and the row shapes and runner of the create rows.
import * as assert from "node:assert/strict";

import type { JsonObject } from "../json";
import { GceError } from "../errors";
import type { NetworkSpec } from "../networks";
import { GceState } from "../state";

export const ENDPOINT = "http://gce.test";
export const PROJECT = "dccm-test";
export const REGION = "us-central1";
export const V1 = `${ENDPOINT}/compute/v1/projects/${PROJECT}`;

export const T = {
  address: "gcp:compute/address:Address",
  forwardingRule: "gcp:compute/forwardingRule:ForwardingRule",
  backendService: "gcp:compute/regionBackendService:RegionBackendService",
  targetPool: "gcp:compute/targetPool:TargetPool",
  healthCheck: "gcp:compute/regionHealthCheck:RegionHealthCheck",
  globalHealthCheck: "gcp:compute/healthCheck:HealthCheck",
  httpHealthCheck: "gcp:compute/httpHealthCheck:HttpHealthCheck",
  instanceGroup: "gcp:compute/instanceGroup:InstanceGroup",
  firewall: "gcp:compute/firewall:Firewall",
  route: "gcp:compute/route:Route",
} as const;

export const NETWORKS: NetworkSpec[] = [
  { name: "default", autoCreateSubnetworks: true },
  {
    name: "k8s-net",
    autoCreateSubnetworks: false,
    subnetworks: [{ name: "k8s-subnet", ipCidrRange: "10.130.0.0/20" }],
  },
  {
    name: "other-net",
    autoCreateSubnetworks: false,
    subnetworks: [{ name: "other-subnet", ipCidrRange: "10.140.0.0/20" }],
  },
  {
    name: "dual-net",
    autoCreateSubnetworks: false,
    subnetworks: [
      {
        name: "v6-ext",
        ipCidrRange: "10.150.0.0/20",
        stackType: "IPV4_IPV6",
        ipv6AccessType: "EXTERNAL",
        ipv6CidrRange: "2600:1900:4000:7f3::/64",
      },
      {
        name: "v6-int",
        ipCidrRange: "10.160.0.0/20",
        stackType: "IPV4_IPV6",
        ipv6AccessType: "INTERNAL",
        ipv6CidrRange: "fd20:0:0:1::/64",
      },
    ],
  },
];

export const regional = { project: PROJECT, region: REGION };
export const HC = `regions/${REGION}/healthChecks/hc`;
export const GLOBAL_HC = `projects/${PROJECT}/global/healthChecks/ghc`;
export const passthrough = (over: JsonObject = {}): JsonObject => ({
  ...regional,
  name: "bs",
  protocol: "TCP",
  healthChecks: HC,
  loadBalancingScheme: "INTERNAL",
  ...over,
});
export const internalRule = (over: JsonObject = {}): JsonObject => ({
  ...regional,
  name: "fr",
  loadBalancingScheme: "INTERNAL",
  ports: ["80"],
  network: "k8s-net",
  subnetwork: "k8s-subnet",
  ...over,
});

/** A fresh emulator state with node-1 (k8s-net, zone a), node-2 (default, zone a), a regional and a legacy health check. */
export function world(): GceState {
  const state = new GceState({
    endpoint: ENDPOINT,
    project: PROJECT,
    region: REGION,
    zones: [`${REGION}-a`, `${REGION}-b`],
    networks: NETWORKS,
  });
  state.putInstance(PROJECT, `${REGION}-a`, "node-1", { networkInterfaces: [{ network: "k8s-net" }] });
  state.putInstance(PROJECT, `${REGION}-a`, "node-2");
  state.putInstance(PROJECT, `${REGION}-b`, "node-3", { networkInterfaces: [{ network: "k8s-net" }] });
  state.create(T.healthCheck, { ...regional, name: "hc", httpHealthCheck: { port: 10256 } });
  state.create(T.httpHealthCheck, { project: PROJECT, name: "legacy" });
  state.create(T.globalHealthCheck, {
    project: PROJECT,
    name: "ghc",
    httpHealthCheck: { port: 10256, requestPath: "/healthz" },
  });
  return state;
}

export interface CreateRow {
  readonly rule: string;
  /** Resources created first (type, inputs). */
  readonly setup?: ReadonlyArray<readonly [string, JsonObject]>;
  readonly type: string;
  readonly inputs: JsonObject;
  /** "accepted", or [HTTP status, GCE's message]. */
  readonly expect: "accepted" | readonly [number, string];
}

export const IG = {
  project: PROJECT,
  zone: `${REGION}-a`,
  name: "ig",
  network: `projects/${PROJECT}/global/networks/k8s-net`,
  description: "a",
};
export const FW = {
  project: PROJECT,
  name: "fw",
  network: "k8s-net",
  allows: [{ protocol: "tcp" }],
  sourceRanges: ["0.0.0.0/0"],
};
export const TP = { ...regional, name: "tp", healthChecks: "legacy", description: "a", sessionAffinity: "NONE" };

export const NODE_1 = `zones/${REGION}-a/instances/node-1`;
export const INTERNAL_ADDRESS = { ...regional, name: "a", addressType: "INTERNAL", subnetwork: "k8s-subnet" };
export const ROUTE = {
  project: PROJECT,
  name: "r",
  destRange: "10.64.0.0/24",
  network: "k8s-net",
  nextHopInstance: NODE_1,
};
export const REGION_HC = { ...regional, name: "hc-2", httpHealthCheck: { port: 1 } };
export const TP_SETUP: ReadonlyArray<readonly [string, JsonObject]> = [[T.targetPool, TP]];

export function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function gceError(fn: () => unknown): GceError {
  try {
    fn();
  } catch (e) {
    if (e instanceof GceError) return e;
    throw e;
  }
  assert.fail("expected a GceError");
}

/** One test per row: the create is accepted, or refused with GCE's status and message. */
export function itCreates(rows: readonly CreateRow[]): void {
  for (const row of rows) {
    it(row.rule, () => {
      const state = world();
      for (const [type, inputs] of row.setup ?? []) state.create(type, inputs);
      if (row.expect === "accepted") {
        assert.equal(state.create(row.type, row.inputs).name, row.inputs.name);
      } else {
        const e = gceError(() => state.create(row.type, row.inputs));
        assert.deepEqual([e.status, e.message], row.expect);
      }
    });
  }
}
