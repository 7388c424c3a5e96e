/**
 * gce/resources.ts: the one table of GCE resource kinds, and what gce/ids.ts and gce/listing.ts
 * derive from it (the Pulumi resource ID, the API path, the kind's `kind/scope/name` ID).
 */
import * as assert from "node:assert/strict";
import { gceResourceId, isDeclaredGceType } from "../../../gce/ids";
import { regionalOrGlobalScope } from "../../../gce/listing";
import {
  isResourceKind,
  kindOfPulumiType,
  KINDS,
  RESOURCE_KINDS,
  resourceIdOfPath,
  resourcePath,
  type ResourceKind,
} from "../../../gce/resources";

const INPUTS = { project: "p", region: "us-central1", zone: "us-central1-b", name: "n" };

describe("gce/resources KINDS", () => {
  it("the collections, in deletion order (users before what they use)", () => {
    assert.deepEqual(RESOURCE_KINDS, [
      "forwardingRules",
      "targetPools",
      "backendServices",
      "healthChecks",
      "httpHealthChecks",
      "addresses",
      "instanceGroups",
      "networkEndpointGroups",
      "firewalls",
      "routes",
    ]);
  });

  const rows: Array<[string, ResourceKind, string, string, string | undefined]> = [
    [
      "gcp:compute/forwardingRule:ForwardingRule",
      "forwardingRules",
      "projects/p/regions/us-central1/forwardingRules/n",
      "forwardingRules.list",
      "us-central1",
    ],
    [
      "gcp:compute/targetPool:TargetPool",
      "targetPools",
      "projects/p/regions/us-central1/targetPools/n",
      "targetPools.list",
      "us-central1",
    ],
    [
      "gcp:compute/regionBackendService:RegionBackendService",
      "backendServices",
      "projects/p/regions/us-central1/backendServices/n",
      "regionBackendServices.list",
      "us-central1",
    ],
    [
      "gcp:compute/regionHealthCheck:RegionHealthCheck",
      "healthChecks",
      "projects/p/regions/us-central1/healthChecks/n",
      "regionHealthChecks.list",
      "us-central1",
    ],
    [
      "gcp:compute/httpHealthCheck:HttpHealthCheck",
      "httpHealthChecks",
      "projects/p/global/httpHealthChecks/n",
      "httpHealthChecks.list",
      "global",
    ],
    [
      "gcp:compute/address:Address",
      "addresses",
      "projects/p/regions/us-central1/addresses/n",
      "addresses.list",
      "us-central1",
    ],
    [
      "gcp:compute/instanceGroup:InstanceGroup",
      "instanceGroups",
      "projects/p/zones/us-central1-b/instanceGroups/n",
      "instanceGroups.list",
      undefined,
    ],
    [
      "gcp:compute/networkEndpointGroup:NetworkEndpointGroup",
      "networkEndpointGroups",
      "projects/p/zones/us-central1-b/networkEndpointGroups/n",
      "networkEndpointGroups.list",
      undefined,
    ],
    ["gcp:compute/firewall:Firewall", "firewalls", "projects/p/global/firewalls/n", "firewalls.list", "global"],
    ["gcp:compute/route:Route", "routes", "projects/p/global/routes/n", "routes.list", "global"],
  ];
  for (const [type, kind, path, list, scope] of rows)
    it(`${kind}: ${type}, at ${path}, listed by ${list}`, () => {
      assert.equal(isDeclaredGceType(type), true);
      assert.equal(kindOfPulumiType(type)?.kind, kind);
      assert.equal(gceResourceId(type, INPUTS), path);
      const resourceScope = scope ?? "us-central1-b";
      assert.equal(resourcePath("p", { kind, scope: resourceScope, name: "n" }), path);
      assert.equal(resourceIdOfPath(path), `${kind}/${resourceScope}/n`);
      assert.equal(`${KINDS.find((row) => row.kind === kind)?.call}.list`, list);
      assert.equal(regionalOrGlobalScope(kind, "us-central1"), scope);
      assert.equal(isResourceKind(kind), true);
    });

  it("a type, a collection or a path of something dccm does not create", () => {
    assert.equal(isDeclaredGceType("gcp:compute/network:Network"), false);
    // A NetworkEndpointList is its NEG's endpoints, no GCE resource of its own (its ID is no API path).
    assert.equal(isDeclaredGceType("gcp:compute/networkEndpointList:NetworkEndpointList"), false);
    assert.equal(gceResourceId("gcp:compute/network:Network", INPUTS), undefined);
    assert.equal(isResourceKind("networks"), false);
    assert.equal(resourceIdOfPath("projects/p/global/networks/default"), undefined);
  });

  it("inputs without their location: no ID", () => {
    assert.equal(gceResourceId("gcp:compute/address:Address", { project: "p", name: "n" }), undefined);
    assert.equal(gceResourceId("gcp:compute/instanceGroup:InstanceGroup", { project: "p", name: "n" }), undefined);
    assert.equal(gceResourceId("gcp:compute/firewall:Firewall", { name: "n" }), undefined);
  });
});
