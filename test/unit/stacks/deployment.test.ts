/** The pure readers of an exported deployment (stacks/deployment.ts): the root outputs, the Service a stack records, the recovery of a killed run's pending creates. */
import * as assert from "node:assert/strict";
import {
  outputsWithHeldAddresses,
  recordedService,
  recoverPendingCreates,
  stackOutputs,
} from "../../../stacks/deployment";
import { serviceStackName } from "../../../model/names";
import { HASH_OUTPUT } from "../../../components/outputs";

describe("stacks: stackOutputs", () => {
  it("reads the root stack resource's outputs, including the recorded desired-state hash", () => {
    const deployment = {
      resources: [
        {
          urn: "urn:pulumi:cluster::dccm::pulumi:pulumi:Stack::dccm-cluster",
          type: "pulumi:pulumi:Stack",
          outputs: { [HASH_OUTPUT]: "abc", instanceGroups: { "us-central1-a": "link" } },
        },
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
    const unknownKind = {
      urn: "urn:x",
      custom: true,
      type: "gcp:storage/bucket:Bucket",
      inputs: { name: "b", project: "p" },
    };
    const deployment: Record<string, unknown> = {
      resources: [{ urn: "urn:stack" }],
      pending_operations: [
        { type: "creating", resource: firewall },
        { type: "creating", resource: unknownKind },
        { type: "updating", resource: { urn: "urn:y" } },
      ],
    };
    assert.deepEqual(recoverPendingCreates(deployment), [firewall.urn]);
    assert.deepEqual(deployment.resources, [
      { urn: "urn:stack" },
      { ...firewall, id: "projects/dccm-test/global/firewalls/k8s-cid-node-http-hc", outputs: firewall.inputs },
    ]);
    assert.deepEqual(deployment.pending_operations, [
      { type: "creating", resource: unknownKind },
      { type: "updating", resource: { urn: "urn:y" } },
    ]);
  });
});

const NS63 = "n".repeat(62) + "s";

describe("Service stacks back to their Service", () => {
  const ns = NS63;
  const long = "l".repeat(40);
  const stack = serviceStackName(ns, long);
  const component = {
    urn: `urn:pulumi:${stack}::dccm-e2e::dccm:gcp:ServiceLoadBalancer::${ns}/${long}`,
    type: "dccm:gcp:ServiceLoadBalancer",
    custom: false,
  };
  const root = (outputs: Record<string, unknown>): Record<string, unknown> => ({
    urn: `urn:pulumi:${stack}::dccm-e2e::pulumi:pulumi:Stack::dccm-e2e-${stack}`,
    type: "pulumi:pulumi:Stack",
    outputs,
  });

  const table: [string, Record<string, unknown> | undefined, { namespace: string; name: string } | undefined][] = [
    [
      "the output dccmServiceKey",
      { resources: [root({ dccmServiceKey: `${ns}/${long}` })] },
      { namespace: ns, name: long },
    ],
    [
      "the ServiceLoadBalancer component (a first up that failed)",
      { resources: [root({}), component] },
      { namespace: ns, name: long },
    ],
    [
      "a pending create of a killed first up",
      {
        resources: [],
        pending_operations: [
          {
            type: "creating",
            resource: { urn: `urn:pulumi:${stack}::dccm-e2e::gcp:compute/address:Address::${ns}/${long}:address` },
          },
        ],
      },
      { namespace: ns, name: long },
    ],
    ["another Service's key (not this stack's)", { resources: [root({ dccmServiceKey: `${ns}/other` })] }, undefined],
    ["nothing recorded (a stack never applied)", { resources: [] }, undefined],
    ["no deployment", undefined, undefined],
  ];
  for (const [title, deployment, expected] of table) {
    it(`recordedService: ${title}`, () => assert.deepEqual(recordedService(stack, deployment), expected));
  }
});

describe("stacks/deployment: outputsWithHeldAddresses", () => {
  const URN =
    "urn:pulumi:service.default.web::dccm-c0ffee::dccm:gcp:ServiceLoadBalancer$gcp:compute/address:Address::default/web:address";
  const entry = { ingress: ["203.0.113.2"], resources: { forwardingRules: ["a1"], firewalls: ["k8s-fw-a1"] } };
  const root = (loadBalancers: Record<string, unknown>): Record<string, unknown> => ({
    type: "pulumi:pulumi:Stack",
    urn: "urn:pulumi:service.default.web::dccm-c0ffee::pulumi:pulumi:Stack::dccm-c0ffee-service.default.web",
    outputs: { loadBalancers, dccmDesiredHash: "h2" },
  });
  const address = { type: "gcp:compute/address:Address", urn: URN, custom: true, id: "x", outputs: { name: "a1" } };

  it("a failed release run's outputs lose <lb> while the state holds it: the address is named again", () => {
    assert.deepEqual(outputsWithHeldAddresses({ resources: [root({ "default/web": entry }), address] }), {
      loadBalancers: { "default/web": { ...entry, resources: { ...entry.resources, address: "a1" } } },
      dccmDesiredHash: "h2",
    });
  });

  it("outputs that already name it, a state without it, or no such load balancer: the outputs as recorded", () => {
    const naming = { ...entry, resources: { ...entry.resources, address: "a1" } };
    assert.deepEqual(outputsWithHeldAddresses({ resources: [root({ "default/web": naming }), address] }), {
      loadBalancers: { "default/web": naming },
      dccmDesiredHash: "h2",
    });
    assert.deepEqual(outputsWithHeldAddresses({ resources: [root({ "default/web": entry })] }), {
      loadBalancers: { "default/web": entry },
      dccmDesiredHash: "h2",
    });
    assert.deepEqual(outputsWithHeldAddresses({ resources: [root({}), address] }), {
      loadBalancers: {},
      dccmDesiredHash: "h2",
    });
  });
});
