import assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";
import { declareStack } from "../../../components/stack";

import { desiredState, type DesiredState, type Scope } from "../../../model";
import { capture, type Registered } from "../../support/fakes/pulumiMocks";
import { CONFIG, gceNode, lbService } from "../../support/builders";
import { stackSlice } from "../../../components/outputs";

const DESIRED: DesiredState = desiredState(
  {
    nodes: [
      gceNode("node-a1", "aaaaaaaa-0000-4000-8000-000000000001", "us-central1-a", ["10.64.1.0/24"]),
      gceNode("node-b1", "bbbbbbbb-0000-4000-8000-000000000002", "us-central1-b", ["10.64.2.0/24"]),
    ],
    services: [
      lbService("default", "web", "11111111-aaaa-4aaa-8aaa-111111111111", {
        ports: [
          { protocol: "TCP", port: 80 },
          { protocol: "UDP", port: 53 },
        ],
      }),
      lbService("default", "pool", "22222222-bbbb-4bbb-8bbb-222222222222", {
        annotations: { "dccm.io/backend": "target-pool" },
        externalTrafficPolicy: "Local",
        healthCheckNodePort: 30100,
      }),
      lbService("default", "ilb", "33333333-cccc-4ccc-8ccc-333333333333", {
        annotations: { "networking.gke.io/load-balancer-type": "Internal" },
      }),
      lbService("default", "bad", "44444444-dddd-4ddd-8ddd-444444444444", { ports: [{ protocol: "SCTP", port: 80 }] }),
    ],
  },
  CONFIG,
);

async function registered(desired: DesiredState, scope: Scope): Promise<Omit<Registered, "importId">[]> {
  const mockState = (
    type: string,
    inputs: Record<string, unknown>,
  ): { id: string; state: Record<string, unknown> } => ({
    id: `${type}/${String(inputs.name)}`,
    state: { ...inputs, address: "198.51.100.5", selfLink: `https://mock.test/${type}/${String(inputs.name)}` },
  });
  const captured = await capture(mockState, (opts) => {
    declareStack(desired, scope);
    return new pulumi.ComponentResource("test:index:Root", "root", {}, opts);
  });
  return captured.registered
    .map(({ type, name, custom, inputs }) => ({ type, name, custom, inputs }))
    .sort((a, b) => a.name.localeCompare(b.name));
}

describe("components/outputs stackSlice: a stack's run declares from its own slice of the desired state", () => {
  for (const name of ["web", "pool", "ilb"]) {
    it(`Service ${name}: exactly the resources and inputs the whole desired state gives`, async () => {
      const scope: Scope = { kind: "service", namespace: "default", name };
      const slice = stackSlice(DESIRED, scope);
      assert.deepEqual(
        slice.services.map((service) => service.key),
        [`default/${name}`],
      );
      assert.deepEqual(slice.cluster.routes, []);
      assert.deepEqual(await registered(slice, scope), await registered(DESIRED, scope));
    });
  }

  it("a rejected Service keeps its rejection (its run fails before declaring anything); the cluster stack gets the whole state", () => {
    const bad = stackSlice(DESIRED, { kind: "service", namespace: "default", name: "bad" });
    assert.deepEqual(bad.services, []);
    assert.deepEqual(
      bad.rejected.map((rejection) => rejection.service),
      ["default/bad"],
    );
    assert.equal(stackSlice(DESIRED, { kind: "cluster" }), DESIRED);
  });
});
