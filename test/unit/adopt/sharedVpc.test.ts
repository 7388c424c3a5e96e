// `dccm adopt` of a stock CCM that ran with gce.conf `network-project-id` (a Shared VPC): its
// firewalls and routes are in the host project (cloud-provider-gcp v0.28.2 support.go), the rest in
// the service project; dccm with `networkProject` imports each from where it is.
import assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";

import {
  planAdoption,
  servicesToPinOnTargetPool,
  withTargetPoolPins,
  type GceItem,
  type Inventory,
} from "../../../adopt/plan";
import { declareStack } from "../../../components/stack";
import { declaredResourceIds, gceResourceId } from "../../../gce/ids";
import { desiredState, loadBalancerName, type ClusterSnapshot, type DesiredState, type Scope } from "../../../model";
import { capture } from "../../support/fakes/pulumiMocks";
import { CONFIG, gceNode, lbService } from "../../support/builders";

const HOST = "vpc-host";
const UID = { web: "11111111-aaaa-4aaa-8aaa-111111111111", ilb: "33333333-cccc-4ccc-8ccc-333333333333" } as const;
const LB = { web: loadBalancerName(UID.web), ilb: loadBalancerName(UID.ilb) };
const R = "projects/dccm-test/regions/us-central1";
const G = "projects/dccm-test/global";
const H = `projects/${HOST}/global`;
const Z = (zone: string): string => `projects/dccm-test/zones/${zone}`;
const V1 = "https://www.googleapis.com/compute/v1/";
const ROUTE_A = "prod-aaaaaaaa-0000-4000-8000-000000000001";
const ROUTE_B = "prod-bbbbbbbb-0000-4000-8000-000000000002";

const SNAPSHOT: ClusterSnapshot = {
  nodes: [
    gceNode("node-a1", "aaaaaaaa-0000-4000-8000-000000000001", "us-central1-a", ["10.64.1.0/24"]),
    gceNode("node-b2", "bbbbbbbb-0000-4000-8000-000000000002", "us-central1-b", ["10.64.2.0/24"]),
  ],
  services: [
    lbService("default", "web", UID.web),
    lbService("default", "ilb", UID.ilb, { annotations: { "networking.gke.io/load-balancer-type": "Internal" } }),
  ],
};

function inventory(entries: [string, Record<string, unknown>][]): Inventory {
  return new Map(entries.map(([id, properties]): [string, GceItem] => [id, { id, properties }]));
}

/** What a stock CCM with `network-project-id = vpc-host` left: firewalls and routes in the host. */
const STOCK = inventory([
  [
    `${R}/forwardingRules/${LB.web}`,
    { name: LB.web, IPAddress: "34.0.0.1", target: `${V1}${R}/targetPools/${LB.web}` },
  ],
  [`${R}/targetPools/${LB.web}`, { name: LB.web }],
  [`${H}/firewalls/k8s-fw-${LB.web}`, { name: `k8s-fw-${LB.web}` }],
  [`${G}/httpHealthChecks/k8s-c0ffee1234-node`, { name: "k8s-c0ffee1234-node" }],
  [`${H}/firewalls/k8s-c0ffee1234-node-http-hc`, { name: "k8s-c0ffee1234-node-http-hc" }],
  [
    `${R}/forwardingRules/${LB.ilb}`,
    { name: LB.ilb, IPAddress: "10.0.0.5", backendService: `${V1}${R}/backendServices/${LB.ilb}` },
  ],
  [`${R}/backendServices/${LB.ilb}`, { name: LB.ilb }],
  [`${H}/firewalls/k8s-fw-${LB.ilb}`, { name: `k8s-fw-${LB.ilb}` }],
  [`${H}/firewalls/k8s-c0ffee1234-node-hc`, { name: "k8s-c0ffee1234-node-hc" }],
  [`${Z("us-central1-a")}/instanceGroups/k8s-ig--c0ffee1234`, { name: "k8s-ig--c0ffee1234" }],
  [`${Z("us-central1-b")}/instanceGroups/k8s-ig--c0ffee1234`, { name: "k8s-ig--c0ffee1234" }],
  [`${H}/routes/${ROUTE_A}`, { name: ROUTE_A }],
  [`${H}/routes/${ROUTE_B}`, { name: ROUTE_B }],
  // The same names in the service project are not the stock CCM's here: never imported.
  [`${G}/firewalls/k8s-fw-${LB.web}`, { name: `k8s-fw-${LB.web}` }],
  [`${G}/routes/${ROUTE_A}`, { name: ROUTE_A }],
]);

const SHARED = { ...CONFIG, networkProject: HOST };

function pinnedDesired(): DesiredState {
  const pins = servicesToPinOnTargetPool(desiredState(SNAPSHOT, SHARED), SNAPSHOT.services, STOCK);
  return desiredState({ ...SNAPSHOT, services: withTargetPoolPins(SNAPSHOT.services, pins) }, SHARED);
}

async function registeredIds(desired: DesiredState, scope: Scope): Promise<string[]> {
  const captured = await capture(
    (type, inputs) => ({ id: `${type}/${String(inputs.name)}`, state: { ...inputs, address: "198.51.100.5" } }),
    (opts) => {
      declareStack(desired, scope);
      return new pulumi.ComponentResource("test:index:Root", "root", {}, opts);
    },
  );
  return captured.registered
    .filter((resource) => resource.custom)
    .map((resource) => gceResourceId(resource.type, resource.inputs) ?? `no id: ${resource.name}`)
    .sort();
}

describe("adopt: a stock CCM run with network-project-id (Shared VPC)", () => {
  afterEach(() => pulumi.runtime.disconnect());

  for (const scope of [
    { kind: "cluster" },
    { kind: "service", namespace: "default", name: "web" },
    { kind: "service", namespace: "default", name: "ilb" },
  ] as Scope[]) {
    it(`declaredResourceIds is exactly what the program registers, scope ${scope.kind === "service" ? scope.name : scope.kind}`, async () => {
      const desired = pinnedDesired();
      assert.deepEqual([...declaredResourceIds(desired, scope)].sort(), await registeredIds(desired, scope));
    });
  }

  it("imports the firewalls and routes from the host project, the rest from the service project", () => {
    const plans = planAdoption(pinnedDesired(), STOCK, () => new Set());
    assert.deepEqual(
      plans.map((plan) => [plan.stack, plan.imports, plan.leftovers]),
      [
        [
          "cluster",
          [
            `${G}/httpHealthChecks/k8s-c0ffee1234-node`,
            `${Z("us-central1-a")}/instanceGroups/k8s-ig--c0ffee1234`,
            `${Z("us-central1-b")}/instanceGroups/k8s-ig--c0ffee1234`,
            `${H}/firewalls/k8s-c0ffee1234-node-http-hc`,
            `${H}/routes/${ROUTE_A}`,
            `${H}/routes/${ROUTE_B}`,
          ],
          [],
        ],
        [
          "service.default.ilb",
          [`${R}/backendServices/${LB.ilb}`, `${R}/forwardingRules/${LB.ilb}`, `${H}/firewalls/k8s-fw-${LB.ilb}`],
          [`${H}/firewalls/k8s-c0ffee1234-node-hc`],
        ],
        [
          "service.default.web",
          [`${R}/forwardingRules/${LB.web}`, `${R}/targetPools/${LB.web}`, `${H}/firewalls/k8s-fw-${LB.web}`],
          [],
        ],
      ],
    );
  });
});
