import * as assert from "node:assert/strict";
import { instanceSubnetsOf, planGoneInstances, type CheckedNode } from "../../../../controllers/cluster/instances";
import { gceNode } from "../../../support/builders";

describe("controllers/cluster/instances: planGoneInstances", () => {
  const located = (name: string, zone = "us-central1-a"): CheckedNode["located"] => ({
    node: gceNode(name, `uid-${name}`, zone, []),
    instance: { zone, name },
  });
  const notFound = (name: string, zone = "us-central1-a"): CheckedNode["lookup"] => ({
    kind: "notFound",
    scope: "instance",
    project: "dccm-test",
    zone,
    name,
  });
  const found: CheckedNode["lookup"] = {
    kind: "found",
    instance: { name: "x", zone: "us-central1-a", project: "dccm-test", networkInterfaces: [] } as never,
  };
  const error: CheckedNode["lookup"] = { kind: "error", error: new Error("googleapi: Error 503") };
  const table: Array<[string, Array<{ zone: string; name: string }>, CheckedNode[], string[], string[]]> = [
    ["found: present", [], [{ located: located("a"), lookup: found }], [], []],
    [
      "a 404 naming the instance: gone, and newly so",
      [],
      [{ located: located("a"), lookup: notFound("a") }],
      ["us-central1-a/a"],
      ["a"],
    ],
    [
      "a 404 for another zone of that name proves nothing",
      [],
      [{ located: located("a"), lookup: notFound("a", "us-central1-b") }],
      [],
      [],
    ],
    [
      "a name search that found nothing proves nothing",
      [],
      [{ located: located("a"), lookup: { kind: "notFound", scope: "region", name: "a", zones: ["us-central1-a"] } }],
      [],
      [],
    ],
    ["an error keeps a present instance present", [], [{ located: located("a"), lookup: error }], [], []],
    [
      "an error keeps a gone instance gone, without a second event",
      [{ zone: "us-central1-a", name: "a" }],
      [{ located: located("a"), lookup: error }],
      ["us-central1-a/a"],
      [],
    ],
    [
      "still 404: gone, no second event",
      [{ zone: "us-central1-a", name: "a" }],
      [{ located: located("a"), lookup: notFound("a") }],
      ["us-central1-a/a"],
      [],
    ],
    [
      "found again: back in",
      [{ zone: "us-central1-a", name: "a" }],
      [{ located: located("a"), lookup: found }],
      [],
      [],
    ],
    [
      "sorted by zone then name",
      [],
      [
        { located: located("b", "us-central1-b"), lookup: notFound("b", "us-central1-b") },
        { located: located("z"), lookup: notFound("z") },
        { located: located("c"), lookup: notFound("c") },
      ],
      ["us-central1-a/c", "us-central1-a/z", "us-central1-b/b"],
      ["b", "z", "c"],
    ],
  ];
  for (const [title, previous, checked, gone, newlyGone] of table) {
    it(title, () => {
      const plan = planGoneInstances(previous, checked);
      assert.deepEqual(
        plan.gone.map((i) => `${i.zone}/${i.name}`),
        gone,
      );
      assert.deepEqual(
        plan.newlyGone.map((l) => l.node.name),
        newlyGone,
      );
    });
  }
});

describe("controllers/cluster/instances: instanceSubnetsOf (ObservedCloud.instanceSubnets, from the same answers)", () => {
  const located = (name: string, zone = "us-central1-a"): CheckedNode["located"] => ({
    node: gceNode(name, `uid-${name}`, zone, []),
    instance: { zone, name },
  });
  const foundIn = (subnetwork: string | undefined, name: string, zone = "us-central1-a"): CheckedNode["lookup"] => ({
    kind: "found",
    instance: {
      name,
      zone,
      project: "dccm-test",
      machineType: "e2-standard-4",
      networkInterfaces: [
        { name: "nic0", accessConfigs: [], ipv6AccessConfigs: [], ...(subnetwork !== undefined ? { subnetwork } : {}) },
        { name: "nic1", subnetwork: "other-nic", accessConfigs: [], ipv6AccessConfigs: [] },
      ],
    },
  });
  const error: CheckedNode["lookup"] = { kind: "error", error: new Error("googleapi: Error 503") };
  const table: Array<[string, CheckedNode[], Record<string, string>, Record<string, string>]> = [
    [
      "each found instance's first interface, sorted by <zone>/<name>",
      [
        { located: located("b", "us-central1-b"), lookup: foundIn("k8s-subnet-2", "b", "us-central1-b") },
        { located: located("a"), lookup: foundIn("k8s-subnet", "a") },
      ],
      {},
      { "us-central1-a/a": "k8s-subnet", "us-central1-b/b": "k8s-subnet-2" },
    ],
    [
      "not described this time (an error): what was known stays",
      [{ located: located("a"), lookup: error }],
      { "us-central1-a/a": "k8s-subnet" },
      { "us-central1-a/a": "k8s-subnet" },
    ],
    [
      "a Node no longer located is dropped; an interface without a subnetwork says nothing",
      [{ located: located("c"), lookup: foundIn(undefined, "c") }],
      { "us-central1-a/a": "k8s-subnet" },
      {},
    ],
    [
      "the instance moved: the new subnetwork",
      [{ located: located("a"), lookup: foundIn("k8s-subnet-2", "a") }],
      { "us-central1-a/a": "k8s-subnet" },
      { "us-central1-a/a": "k8s-subnet-2" },
    ],
  ];
  for (const [title, checked, previous, want] of table)
    it(title, () => assert.deepEqual(instanceSubnetsOf(checked, previous), want));
});
