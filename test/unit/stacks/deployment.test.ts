/** The pure readers of an exported deployment (stacks/deployment.ts): the root outputs, the recovery of a killed run's pending creates. */
import * as assert from "node:assert/strict";
import { recoverPendingCreates, stackOutputs } from "../../../stacks/deployment";
import { HASH_OUTPUT } from "../../../components/outputs";

describe("stacks: stackOutputs", () => {
  it("reads the root stack resource's outputs, including the recorded desired-state hash", () => {
    const deployment = {
      resources: [
        { urn: "urn:pulumi:cluster::dccm::pulumi:pulumi:Stack::dccm-cluster", type: "pulumi:pulumi:Stack", outputs: { [HASH_OUTPUT]: "abc", instanceGroups: { "us-central1-a": "link" } } },
        { urn: "urn:x", type: "gcp:compute/firewall:Firewall", outputs: { name: "f" } },
      ],
    };
    assert.deepEqual(stackOutputs(deployment), { dccmDesiredHash: "abc", instanceGroups: { "us-central1-a": "link" } });
    assert.deepEqual(stackOutputs({}), {});
  });
});

describe("stacks: recoverPendingCreates", () => {
  it("moves pending creates of named GCE resources into the resources under their derived ID and keeps the rest", () => {
    const firewall = {
      urn: "urn:pulumi:cluster::dccm::dccm:gcp:ClusterNetwork$gcp:compute/firewall:Firewall::cluster:node-hc-fw",
      custom: true,
      type: "gcp:compute/firewall:Firewall",
      inputs: { name: "k8s-cid-node-http-hc", project: "dccm-test", network: "net" },
    };
    const unknownKind = { urn: "urn:x", custom: true, type: "gcp:storage/bucket:Bucket", inputs: { name: "b", project: "p" } };
    const deployment: Record<string, unknown> = {
      resources: [{ urn: "urn:stack" }],
      pending_operations: [
        { type: "creating", resource: firewall },
        { type: "creating", resource: unknownKind },
        { type: "updating", resource: { urn: "urn:y" } },
      ],
    };
    assert.deepEqual(recoverPendingCreates(deployment), [firewall.urn]);
    assert.deepEqual(deployment.resources, [{ urn: "urn:stack" }, { ...firewall, id: "projects/dccm-test/global/firewalls/k8s-cid-node-http-hc", outputs: firewall.inputs }]);
    assert.deepEqual(deployment.pending_operations, [
      { type: "creating", resource: unknownKind },
      { type: "updating", resource: { urn: "urn:y" } },
    ]);
  });
});
