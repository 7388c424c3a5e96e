// Several instance groups per zone (docs/guides/services.md#service-semantics, "Instance groups"):
// names, the no-churn assignment (table and properties), what desiredState declares and rejects.
import * as assert from "node:assert/strict";

import * as fc from "fast-check";

import { desiredState } from "../../../model/desired";
import { assignGroups, observedReferences } from "../../../model/groups";
import { BACKEND_SERVICE_MAX_BACKENDS, INSTANCE_GROUP_MAX_INSTANCES } from "../../../model/limits";
import { instanceGroupIndex, instanceGroupKey, instanceGroupName, isValidGceName } from "../../../model/names";
import { NOTHING_OBSERVED, type ObservedCloud } from "../../../model/types";
import { CLUSTER_DESCRIPTION, CONFIG, gceNode, lbService } from "../../support/builders";

const A = "us-central1-a";
const B = "us-central1-b";
const UID = "5ec00001-7a1b-4c2d-8e3f-a0b1c2d3e4f5";

function uid(i: number): string {
  return `${String(i).padStart(8, "0")}-1111-4111-8111-111111111111`;
}

/** Nodes n1..nN (names as given) in a zone, no podCIDR. */
function nodes(zone: string, names: readonly string[]): ReturnType<typeof gceNode>[] {
  return names.map((name, i) => gceNode(name, uid(i + (zone === A ? 0 : 500)), zone, []));
}

function groupsOf(input: {
  instances: string[];
  previous?: Array<[number, string[]]>;
  limit: number;
  referenced?: number[];
}): Array<[number, readonly string[]]> {
  const result = assignGroups({
    instances: input.instances,
    previous: new Map(input.previous ?? []),
    limit: input.limit,
    referenced: new Set(input.referenced ?? []),
  });
  return [...result.groups.entries()];
}

describe("model: instance groups beyond the per-group limit", () => {
  it("the documented limits", () => {
    assert.equal(INSTANCE_GROUP_MAX_INSTANCES, 1000);
    assert.equal(BACKEND_SERVICE_MAX_BACKENDS, 50);
  });

  describe("names", () => {
    const cases: Array<[string, number, string]> = [
      ["c0ffee1234", 1, "k8s-ig--c0ffee1234"],
      ["c0ffee1234", 2, "k8s-ig2--c0ffee1234"],
      ["c0ffee1234", 17, "k8s-ig17--c0ffee1234"],
      ["a-2", 1, "k8s-ig--a-2"],
    ];
    for (const [clusterId, index, name] of cases) {
      it(`${clusterId} #${index} → ${name}, and back`, () => {
        assert.equal(instanceGroupName(clusterId, index), name);
        assert.equal(instanceGroupIndex(clusterId, name), index);
      });
    }
    it("a name of another cluster, or no group name, has no index", () => {
      // Cluster "a" numbered `k8s-ig--a-2` would be cluster "a-2"'s first group: the number goes before `--`.
      assert.equal(instanceGroupIndex("a", "k8s-ig--a-2"), undefined);
      assert.equal(instanceGroupIndex("a", "k8s-ig2--a-2"), undefined);
      assert.equal(instanceGroupIndex("a", "k8s-ig1--a"), undefined);
      assert.equal(instanceGroupIndex("a", "k8s-ig02--a"), undefined);
      assert.equal(instanceGroupIndex("a", "k8s-fw-a"), undefined);
    });
    it("the longest clusterId parseConfig accepts (46) gives valid names up to group 999999", () => {
      const id = "c".repeat(46);
      assert.equal(isValidGceName(instanceGroupName(id, 999_999)), true);
      assert.equal(instanceGroupName(id, 999_999).length, 60);
    });
    it("keys: the zone for the first group, <zone>/<name> for the others", () => {
      assert.equal(instanceGroupKey({ zone: A, name: "k8s-ig--c" }), A);
      assert.equal(instanceGroupKey({ zone: A, name: "k8s-ig3--c", index: 3 }), `${A}/k8s-ig3--c`);
    });
  });

  it("observedReferences: first groups as zones, numbered ones as <zone>/<name>, sorted and unique", () => {
    assert.deepStrictEqual(observedReferences([B, `${A}/k8s-ig3--c`, A, `${A}/k8s-ig2--c`, A]), {
      referencedZones: [A, B],
      referencedGroups: [`${A}/k8s-ig2--c`, `${A}/k8s-ig3--c`],
    });
    assert.deepStrictEqual(observedReferences([]), { referencedZones: [], referencedGroups: [] });
  });

  describe("assignGroups (table)", () => {
    const cases: Array<[string, Parameters<typeof groupsOf>[0], Array<[number, string[]]>]> = [
      ["nothing", { instances: [], limit: 2 }, []],
      ["under the limit: one group, sorted", { instances: ["n3", "n1", "n2"], limit: 1000 }, [[1, ["n1", "n2", "n3"]]]],
      [
        "5 at limit 2: by name into 1, 2, 3",
        { instances: ["n5", "n4", "n3", "n2", "n1"], limit: 2 },
        [
          [1, ["n1", "n2"]],
          [2, ["n3", "n4"]],
          [3, ["n5"]],
        ],
      ],
      [
        "a newcomer that sorts first takes the first room, nobody moves",
        {
          instances: ["n0", "n1", "n2", "n3", "n4", "n5"],
          previous: [
            [1, ["n1", "n2"]],
            [2, ["n3", "n4"]],
            [3, ["n5"]],
          ],
          limit: 2,
        },
        [
          [1, ["n1", "n2"]],
          [2, ["n3", "n4"]],
          [3, ["n0", "n5"]],
        ],
      ],
      [
        "a leaver frees a place the next newcomer takes",
        {
          instances: ["n1", "n2", "n4", "n5", "n9"],
          previous: [
            [1, ["n1", "n2"]],
            [2, ["n3", "n4"]],
            [3, ["n5"]],
          ],
          limit: 2,
        },
        [
          [1, ["n1", "n2"]],
          [2, ["n4", "n9"]],
          [3, ["n5"]],
        ],
      ],
      [
        "an emptied numbered group is dropped; the others stay where they are",
        {
          instances: ["n1", "n2", "n5"],
          previous: [
            [1, ["n1", "n2"]],
            [2, ["n3", "n4"]],
            [3, ["n5"]],
          ],
          limit: 2,
        },
        [
          [1, ["n1", "n2"]],
          [3, ["n5"]],
        ],
      ],
      [
        "an emptied numbered group still referenced stays, empty",
        {
          instances: ["n1", "n2", "n5"],
          previous: [
            [1, ["n1", "n2"]],
            [2, ["n3", "n4"]],
            [3, ["n5"]],
          ],
          limit: 2,
          referenced: [2],
        },
        [
          [1, ["n1", "n2"]],
          [2, []],
          [3, ["n5"]],
        ],
      ],
      [
        "an emptied first group stays while the zone has instances",
        {
          instances: ["n3"],
          previous: [
            [1, ["n1", "n2"]],
            [2, ["n3"]],
          ],
          limit: 2,
        },
        [
          [1, []],
          [2, ["n3"]],
        ],
      ],
      [
        "no instance and nothing referenced: no group",
        {
          instances: [],
          previous: [
            [1, ["n1"]],
            [2, ["n2"]],
          ],
          limit: 2,
        },
        [],
      ],
      [
        "no instance, the first group referenced: it stays, empty",
        { instances: [], previous: [[1, ["n1"]]], limit: 2, referenced: [1] },
        [[1, []]],
      ],
      [
        "a lowered limit: a group keeps its first names, the rest fill the lowest room",
        { instances: ["n1", "n2", "n3", "n4"], previous: [[1, ["n1", "n2", "n3", "n4"]]], limit: 3 },
        [
          [1, ["n1", "n2", "n3"]],
          [2, ["n4"]],
        ],
      ],
      [
        "an instance recorded in two groups stays in the lower one",
        {
          instances: ["n1", "n2"],
          previous: [
            [1, ["n1"]],
            [2, ["n1", "n2"]],
          ],
          limit: 2,
        },
        [
          [1, ["n1"]],
          [2, ["n2"]],
        ],
      ],
    ];
    for (const [what, input, want] of cases) it(what, () => assert.deepStrictEqual(groupsOf(input), want));
  });

  describe("assignGroups (properties)", () => {
    const name = fc.integer({ min: 0, max: 60 }).map((i) => `n${i}`);
    const names = fc.uniqueArray(name, { maxLength: 40 });
    const limit = fc.integer({ min: 1, max: 7 });

    it("every instance is in exactly one group; no group is over the limit; groups are sorted", () => {
      fc.assert(
        fc.property(names, names, limit, (before, now, max) => {
          const previous = assignGroups({
            instances: before,
            previous: new Map(),
            limit: max,
            referenced: new Set(),
          }).groups;
          const { groups } = assignGroups({ instances: now, previous, limit: max, referenced: new Set() });
          const all = [...groups.values()].flat();
          assert.deepStrictEqual([...all].sort(), [...now].sort());
          for (const members of groups.values()) {
            assert.ok(members.length <= max);
            assert.deepStrictEqual([...members], [...members].sort());
          }
        }),
      );
    });

    it("no churn: an instance present before and after keeps its group, whoever joins or leaves", () => {
      fc.assert(
        fc.property(names, names, names, limit, (first, second, third, max) => {
          let previous = assignGroups({
            instances: first,
            previous: new Map(),
            limit: max,
            referenced: new Set(),
          }).groups;
          for (const now of [second, third]) {
            const next = assignGroups({ instances: now, previous, limit: max, referenced: new Set() }).groups;
            const where = (groups: typeof next, instance: string): number | undefined =>
              [...groups.entries()].find(([, members]) => members.includes(instance))?.[0];
            for (const instance of now) {
              const before = where(previous, instance);
              if (before !== undefined) assert.equal(where(next, instance), before, instance);
            }
            previous = next;
          }
        }),
      );
    });

    it("with nothing observed and at most `limit` instances: one group holding them all, sorted", () => {
      fc.assert(
        fc.property(names, (now) => {
          const { groups } = assignGroups({ instances: now, previous: new Map(), limit: 40, referenced: new Set() });
          assert.deepStrictEqual([...groups.entries()], now.length === 0 ? [] : [[1, [...now].sort()]]);
        }),
      );
    });
  });

  describe("desiredState", () => {
    const LIMIT = { ...CONFIG, instanceGroupLimit: 2 };
    const FIVE = nodes(A, ["n1", "n2", "n3", "n4", "n5"]);
    const service = lbService("default", "web", UID);

    it("5 nodes at limit 2: three groups of the zone, and the Service's backends list all of them", () => {
      const state = desiredState({ nodes: FIVE, services: [service] }, LIMIT);
      assert.deepStrictEqual(state.cluster.instanceGroups, [
        { name: "k8s-ig--c0ffee1234", zone: A, description: CLUSTER_DESCRIPTION, instances: ["n1", "n2"] },
        { name: "k8s-ig2--c0ffee1234", zone: A, index: 2, description: CLUSTER_DESCRIPTION, instances: ["n3", "n4"] },
        { name: "k8s-ig3--c0ffee1234", zone: A, index: 3, description: CLUSTER_DESCRIPTION, instances: ["n5"] },
      ]);
      assert.deepStrictEqual(state.services[0].backendZones, [A]);
      assert.deepStrictEqual(state.services[0].backendGroups, [
        { zone: A, name: "k8s-ig--c0ffee1234" },
        { zone: A, name: "k8s-ig2--c0ffee1234", index: 2 },
        { zone: A, name: "k8s-ig3--c0ffee1234", index: 3 },
      ]);
    });

    it("under the limit the Service has no backendGroups (its stack's hash is as before)", () => {
      const state = desiredState({ nodes: [...FIVE, ...nodes(B, ["m1"])], services: [service] }, CONFIG);
      assert.equal("backendGroups" in state.services[0], false);
      assert.deepStrictEqual(
        state.cluster.instanceGroups.map((group) => [group.name, group.zone, group.instances]),
        [
          ["k8s-ig--c0ffee1234", A, ["n1", "n2", "n3", "n4", "n5"]],
          ["k8s-ig--c0ffee1234", B, ["m1"]],
        ],
      );
    });

    it("the applied membership is kept: a joining node that sorts first does not move the others", () => {
      const observed: ObservedCloud = {
        ...NOTHING_OBSERVED,
        groupMembers: {
          [`${A}/k8s-ig--c0ffee1234`]: ["n1", "n2"],
          [`${A}/k8s-ig2--c0ffee1234`]: ["n3", "n4"],
          [`${A}/k8s-ig3--c0ffee1234`]: ["n5"],
        },
      };
      const state = desiredState({ nodes: [...FIVE, ...nodes(A, ["a0"])], services: [service] }, LIMIT, observed);
      assert.deepStrictEqual(
        state.cluster.instanceGroups.map((group) => [group.name, group.instances]),
        [
          ["k8s-ig--c0ffee1234", ["n1", "n2"]],
          ["k8s-ig2--c0ffee1234", ["n3", "n4"]],
          ["k8s-ig3--c0ffee1234", ["a0", "n5"]],
        ],
      );
    });

    it("members of another cluster's groups, or keys of no group, are not an observation", () => {
      const observed: ObservedCloud = {
        ...NOTHING_OBSERVED,
        groupMembers: { [`${A}/k8s-ig2--other`]: ["n5"], [A]: ["n5"], [`${A}/k8s-ig3--c0ffee1234`]: ["n5"] },
      };
      const state = desiredState({ nodes: FIVE, services: [] }, LIMIT, observed);
      assert.deepStrictEqual(
        state.cluster.instanceGroups.map((group) => [group.name, group.instances]),
        [
          ["k8s-ig--c0ffee1234", ["n1", "n2"]],
          ["k8s-ig2--c0ffee1234", ["n3", "n4"]],
          ["k8s-ig3--c0ffee1234", ["n5"]],
        ],
      );
    });

    it("a numbered group emptied: dropped from the cluster and the backends, unless a Service stack still names it", () => {
      const members = {
        [`${A}/k8s-ig--c0ffee1234`]: ["n1", "n2"],
        [`${A}/k8s-ig2--c0ffee1234`]: ["n3", "n4"],
        [`${A}/k8s-ig3--c0ffee1234`]: ["n5"],
      };
      const left = nodes(A, ["n1", "n2", "n5"]);
      const dropped = desiredState({ nodes: left, services: [service] }, LIMIT, {
        ...NOTHING_OBSERVED,
        groupMembers: members,
      });
      assert.deepStrictEqual(
        dropped.cluster.instanceGroups.map((group) => [group.name, group.instances]),
        [
          ["k8s-ig--c0ffee1234", ["n1", "n2"]],
          ["k8s-ig3--c0ffee1234", ["n5"]],
        ],
      );
      assert.deepStrictEqual(dropped.services[0].backendGroups, [
        { zone: A, name: "k8s-ig--c0ffee1234" },
        { zone: A, name: "k8s-ig3--c0ffee1234", index: 3 },
      ]);
      const kept = desiredState({ nodes: left, services: [service] }, LIMIT, {
        ...NOTHING_OBSERVED,
        groupMembers: members,
        referencedGroups: [`${A}/k8s-ig2--c0ffee1234`],
      });
      assert.deepStrictEqual(
        kept.cluster.instanceGroups.map((group) => [group.name, group.instances]),
        [
          ["k8s-ig--c0ffee1234", ["n1", "n2"]],
          ["k8s-ig2--c0ffee1234", []],
          ["k8s-ig3--c0ffee1234", ["n5"]],
        ],
      );
      assert.deepStrictEqual(kept.services[0].backendGroups, dropped.services[0].backendGroups);
    });

    it("a Service whose nodes need more groups than one backend service takes is rejected, named; the groups are still declared", () => {
      const many = nodes(
        A,
        Array.from({ length: BACKEND_SERVICE_MAX_BACKENDS + 1 }, (_, i) => `n${String(i).padStart(2, "0")}`),
      );
      const state = desiredState({ nodes: many, services: [service] }, { ...CONFIG, instanceGroupLimit: 1 });
      assert.deepStrictEqual(state.services, []);
      assert.deepStrictEqual(state.rejected, [
        {
          service: "default/web",
          field: "backends",
          message:
            "Service default/web: its nodes need 51 instance groups, more than the 50 backends GCE allows in one backend service",
        },
      ]);
      assert.equal(state.cluster.instanceGroups.length, 51);
    });

    it("a target-pool Service is not limited by groups", () => {
      const pool = lbService("default", "pool", UID, { annotations: { "dccm.io/backend": "target-pool" } });
      const state = desiredState({ nodes: FIVE, services: [pool] }, LIMIT);
      assert.equal(state.rejected.length, 0);
      assert.equal("backendGroups" in state.services[0], false);
    });
  });
});
