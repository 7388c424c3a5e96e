/**
 * controllers/cluster/observer.ts DesiredClusterObserver: each thing the stack controllers tell
 * about the cluster stack lands where the daemon reads it (the desired state's observation, the
 * route status the node controller reads), and the instance question is asked only with Compute.
 */
import * as assert from "node:assert/strict";
import { DesiredClusterObserver, type DesiredClusterObserverDeps } from "../../../../controllers/cluster/observer";
import type { ClusterOutputs } from "../../../../controllers/cluster/plan";
import type { ClusterReferences } from "../../../../controllers/references";
import type { InstanceRef, ObservedCloud } from "../../../../model";
import type { LocatedNode } from "../../../../model/desired";
import { DesiredCache } from "../../../../model/desiredCache";
import { CONFIG, gceNode } from "../../../support/builders";

interface Fake {
  observer: DesiredClusterObserver;
  told: string[];
  cache: DesiredCache;
}

function fake(instances?: { gone: InstanceRef[]; subnets?: Record<string, string> }): Fake {
  const told: string[] = [];
  const cache = new DesiredCache(CONFIG);
  cache.update({
    nodes: [gceNode("n1", "u1", "us-central1-a", []), gceNode("n2", "u2", "us-central1-b", [])],
    services: [],
  });
  const deps: DesiredClusterObserverDeps = {
    desired: {
      cache,
      amend: (patch: Partial<ObservedCloud>) => {
        told.push(`amend ${JSON.stringify(patch)}`);
        cache.observe({ ...cache.lastObserved(), ...patch });
      },
      referencesChanged: (references: ClusterReferences) => told.push(`references ${JSON.stringify(references)}`),
      recordedFirewall: (aboveDeny: boolean) => told.push(`recordedFirewall ${aboveDeny}`),
    },
    routeStatus: {
      applied: (outputs: ClusterOutputs) => told.push(`routes applied ${JSON.stringify(outputs.routes)}`),
      failed: (message: string) => told.push(`routes failed ${message}`),
    },
    routesChanged: () => told.push("routesChanged"),
    ...(instances === undefined
      ? {}
      : {
          instances: {
            presence: {
              check: async (
                located: readonly LocatedNode[],
                previous: readonly InstanceRef[],
                previousSubnets: Readonly<Record<string, string>>,
              ) => {
                told.push(
                  `check ${located.map((node) => node.node.name).join(",")} previous ${previous.map((i) => i.name).join(",")} subnets ${JSON.stringify(previousSubnets)}`,
                );
                return { gone: instances.gone, subnets: instances.subnets ?? {} };
              },
            },
            gone: { set: (value: number) => told.push(`gone ${value}`) },
          },
        }),
  };
  return { observer: new DesiredClusterObserver(deps), told, cache };
}

describe("controllers/cluster/observer DesiredClusterObserver", () => {
  it("a run applied: the route status, then the node controller told", () => {
    const { observer, told } = fake();
    observer.applied({ instanceGroups: {}, instanceGroupMembers: {}, routes: { n1: "r1" } });
    assert.deepEqual(told, ['routes applied {"n1":"r1"}', "routesChanged"]);
  });

  it("a run failed: the route status carries the error's description, then the node controller told", () => {
    const { observer, told } = fake();
    observer.failed(new Error("cluster stack update failed", { cause: new Error("quota ROUTES exceeded") }));
    assert.deepEqual(told, ["routes failed cluster stack update failed: quota ROUTES exceeded", "routesChanged"]);
  });

  it("the membership, the recorded firewall and the references go to the desired state", () => {
    const { observer, told } = fake();
    observer.groupMembers({ "us-central1-a/k8s-ig--c1": ["n1"] });
    observer.recordedFirewall(true);
    observer.referencesChanged({ zones: ["us-central1-a"], legacyHealthCheck: false });
    assert.deepEqual(told, [
      'amend {"groupMembers":{"us-central1-a/k8s-ig--c1":["n1"]}}',
      "recordedFirewall true",
      'references {"zones":["us-central1-a"],"legacyHealthCheck":false}',
    ]);
  });

  it("without Compute access, instances are never asked about", () => {
    assert.equal(fake().observer.observeInstances, undefined);
  });

  it("with Compute access: every located Node checked against the last observation; a change amends it, the same answer does not", async () => {
    const { observer, told, cache } = fake({ gone: [{ zone: "us-central1-b", name: "n2" }] });
    assert.ok(observer.observeInstances !== undefined);
    await observer.observeInstances();
    await observer.observeInstances();
    assert.deepEqual(told, [
      "check n1,n2 previous  subnets {}",
      "gone 1",
      'amend {"goneInstances":[{"zone":"us-central1-b","name":"n2"}]}',
      "check n1,n2 previous n2 subnets {}",
      "gone 1",
    ]);
    assert.deepEqual(cache.lastObserved().goneInstances, [{ zone: "us-central1-b", name: "n2" }]);
    assert.equal(cache.lastObserved().instanceSubnets, undefined, "nothing known: the observation as before");
  });

  it("the instances' subnetworks amend instanceSubnets when they change, in the same patch as gone instances", async () => {
    const subnets = { "us-central1-a/n1": "k8s-subnet", "us-central1-b/n2": "k8s-subnet-2" };
    const { observer, told, cache } = fake({ gone: [], subnets });
    assert.ok(observer.observeInstances !== undefined);
    await observer.observeInstances();
    await observer.observeInstances();
    assert.deepEqual(told, [
      "check n1,n2 previous  subnets {}",
      "gone 0",
      `amend {"instanceSubnets":${JSON.stringify(subnets)}}`,
      `check n1,n2 previous  subnets ${JSON.stringify(subnets)}`,
      "gone 0",
    ]);
    assert.deepEqual(cache.lastObserved().instanceSubnets, subnets);
  });
});
