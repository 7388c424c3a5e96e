// model/subsets.ts: the subset of nodes a `neg` Service's NEGs hold, as kubernetes/ingress-gce
// pkg/neg/syncers/subsets.go picks it. The table replays the examples of its pickSubsetsMinRemovals
// comment (with a salt whose hash order is the one the comment shows) and of getSubsetPerZone's;
// the properties hold the size limits, the stability under churn and the determinism.
import * as assert from "node:assert/strict";

import * as fc from "fast-check";

import {
  hashedName,
  pickSubsetMinRemovals,
  subsetPerZone,
  subsetSize,
  INTERNAL_BACKEND_VM_LIMIT,
} from "../../../model/subsets";

// sha256("nodeN:" + SALT) orders node1..node6 as node3, node6, node2, node5, node4, node1: the
// order the comment of subsets.go pickSubsetsMinRemovals shows for its examples.
const SALT = "5ec00872-7a1b-4c2d-8e3f-a0b1c2d3e4f5";
const nodes = (...ids: number[]): string[] => ids.map((id) => `node${id}`);

describe("model/subsets: ingress-gce's examples and sizes", () => {
  it("the salt orders the nodes as subsets.go's examples do", () => {
    assert.deepStrictEqual(
      nodes(1, 2, 3, 4, 5, 6).sort((a, b) => (hashedName(a, SALT) < hashedName(b, SALT) ? -1 : 1)),
      nodes(3, 6, 2, 5, 4, 1),
    );
    // subsets.go getHashedName: hex SHA-256 of "<node>:<salt>" (printf 'node1:<salt>' | sha256sum).
    assert.equal(hashedName("node1", SALT), "bb43629038dabea8b16a18ec69048c3d48ded75728d54545c01842ee18e62880");
  });

  const table: { name: string; nodes: string[]; current: string[]; count: number; expected: string[] }[] = [
    {
      name: "example 1, the subset grows: no removal, node4 added in hash order",
      nodes: nodes(1, 2, 3, 4, 5),
      current: nodes(3, 2, 5),
      count: 4,
      expected: nodes(3, 2, 5, 4),
    },
    {
      name: "example 2, node6 joins ahead in hash order: the subset stays as it is",
      nodes: nodes(1, 2, 3, 4, 5, 6),
      current: nodes(3, 2, 5, 4),
      count: 4,
      expected: nodes(3, 2, 5, 4),
    },
    {
      name: "example 3, node3 leaves: the others stay, node6 (first in hash order) takes its place",
      nodes: nodes(1, 2, 4, 5, 6),
      current: nodes(3, 2, 5, 4),
      count: 4,
      expected: nodes(2, 5, 4, 6),
    },
    {
      name: "no current subset: the first count in hash order",
      nodes: nodes(1, 2, 3, 4, 5, 6),
      current: [],
      count: 3,
      expected: nodes(3, 6, 2),
    },
    {
      name: "the subset shrinks: the first count of the current subset, in its order",
      nodes: nodes(1, 2, 3, 4, 5, 6),
      current: nodes(2, 4, 5),
      count: 2,
      expected: nodes(2, 4),
    },
    {
      name: "fewer nodes than the count: all of them",
      nodes: nodes(1, 2),
      current: [],
      count: 4,
      expected: nodes(1, 2),
    },
  ];
  for (const row of table) {
    it(`pickSubsetMinRemovals: ${row.name}`, () => {
      assert.deepStrictEqual(pickSubsetMinRemovals(row.nodes, SALT, row.count, row.current), row.expected);
    });
  }

  it("subsetSize: subsets.go's four sizes (internal 25 / 250, external 250 / 3000 for ETP Cluster / Local)", () => {
    assert.deepStrictEqual(
      [
        subsetSize("INTERNAL", false),
        subsetSize("INTERNAL", true),
        subsetSize("EXTERNAL", false),
        subsetSize("EXTERNAL", true),
      ],
      [25, 250, 250, 3000],
    );
  });

  it("subsetPerZone, getSubsetPerZone's example: limit 250 over 4 zones, the small zones' unused share goes to the bigger ones after them", () => {
    const zone = (name: string, count: number): [string, string[]] => [
      name,
      Array.from({ length: count }, (_, i) => `${name}-n${String(i).padStart(3, "0")}`),
    ];
    const picked = subsetPerZone(
      new Map([
        zone("us-central1-d", 200),
        zone("us-central1-a", 10),
        zone("us-central1-b", 40),
        zone("us-central1-c", 100),
      ]),
      250,
      SALT,
      new Map(),
    );
    // a: 250/4 = 62 → its 10; b: 240/3 = 80 → its 40; c: 200/2 = 100 → its 100; d: 100/1 = 100 of 200.
    assert.deepStrictEqual(
      [...picked.entries()].map(([z, list]) => [z, list.length]),
      [
        ["us-central1-a", 10],
        ["us-central1-b", 40],
        ["us-central1-c", 100],
        ["us-central1-d", 100],
      ],
    );
  });

  it("subsetPerZone: equal zones split the limit, ties by zone name (25 over 3 zones of 20: 8, 8, 9)", () => {
    const zone = (name: string): [string, string[]] => [name, Array.from({ length: 20 }, (_, i) => `${name}-${i}`)];
    const picked = subsetPerZone(new Map([zone("z-c"), zone("z-a"), zone("z-b")]), 25, SALT, new Map());
    assert.deepStrictEqual(
      [...picked.entries()].map(([z, list]) => [z, list.length]),
      [
        ["z-a", 8],
        ["z-b", 8],
        ["z-c", 9],
      ],
    );
  });
});

const ZONES = ["us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f"];

/** A cluster's nodes by zone, in the shape subsetPerZone reads. */
function perZone(cluster: ReadonlyMap<string, string>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [node, zone] of [...cluster].sort(([a], [b]) => (a < b ? -1 : 1)))
    out.set(zone, [...(out.get(zone) ?? []), node]);
  return out;
}

function sortedLists(subset: ReadonlyMap<string, readonly string[]>): Map<string, string[]> {
  return new Map([...subset].map(([zone, list]) => [zone, [...list].sort()]));
}

type Step = { kind: "add"; zone: number } | { kind: "remove"; pick: number };
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.integer({ min: 0, max: ZONES.length - 1 }).map((zone): Step => ({ kind: "add", zone })),
  fc.nat().map((pick): Step => ({ kind: "remove", pick })),
);

describe("model/subsets: properties", () => {
  it("(a) the subset never holds more than the limit, nor more than an internal Service's 250 VMs, and takes min(limit, nodes)", () => {
    fc.assert(
      fc.property(
        fc.constantFrom<"INTERNAL" | "EXTERNAL">("INTERNAL", "EXTERNAL"),
        fc.boolean(),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 400 })), { maxLength: 4 }),
        fc.string(),
        (scheme, local, zoneSizes, salt) => {
          const cluster = new Map<string, string[]>();
          zoneSizes.forEach(([zone, count]) =>
            cluster.set(
              ZONES[zone],
              Array.from({ length: count }, (_, i) => `${ZONES[zone]}-${i}`),
            ),
          );
          const limit = subsetSize(scheme, local);
          const picked = [...subsetPerZone(cluster, limit, salt, new Map()).values()].flat();
          const total = [...cluster.values()].flat().length;
          assert.equal(picked.length, Math.min(limit, total));
          assert.equal(new Set(picked).size, picked.length);
          if (scheme === "INTERNAL") assert.ok(picked.length <= INTERNAL_BACKEND_VM_LIMIT);
        },
      ),
      { numRuns: 200 },
    );
  });

  it("(b) under random churn, a member stays unless removed or its zone's share shrank; per node added or removed, at most 1 node that stays in the cluster leaves the subset and at most 1 node already in the cluster joins it", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(1, 3, 5, 8, 25),
        fc.string(),
        fc.array(stepArb, { minLength: 1, maxLength: 80 }),
        (limit, salt, steps) => {
          const cluster = new Map<string, string>();
          let subset = new Map<string, string[]>();
          let next = 0;
          for (const step of steps) {
            const before = new Set(cluster.keys());
            if (step.kind === "add") cluster.set(`n${next++}`, ZONES[step.zone]);
            else if (cluster.size > 0) cluster.delete([...cluster.keys()].sort()[step.pick % cluster.size]);
            const after = subsetPerZone(perZone(cluster), limit, salt, sortedLists(subset));
            const was = new Set([...subset.values()].flat());
            const now = new Set([...after.values()].flat());
            const left = [...was].filter((node) => cluster.has(node) && !now.has(node));
            const joined = [...now].filter((node) => before.has(node) && !was.has(node));
            assert.ok(left.length <= 1, `left: ${left.join(",")}`);
            assert.ok(joined.length <= 1, `joined: ${joined.join(",")}`);
            for (const node of left) {
              const zone = cluster.get(node) ?? "";
              assert.ok(
                (after.get(zone) ?? []).length < (subset.get(zone) ?? []).length,
                `${node} left ${zone} whose share did not shrink`,
              );
            }
            subset = after;
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it("(c) deterministic: the same nodes in any order and the same current subset give the same subset", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.stringMatching(/^[a-z][a-z0-9]{0,6}$/), { maxLength: 30 }),
        fc.integer({ min: 0, max: 12 }),
        fc.string(),
        fc.integer({ min: 0, max: 1000 }),
        (names, limit, salt, seed) => {
          const cluster = new Map(names.map((name, i) => [name, ZONES[(i + seed) % ZONES.length]]));
          const shuffled = new Map([...cluster].reverse());
          const current = sortedLists(subsetPerZone(perZone(cluster), limit, salt, new Map()));
          assert.deepStrictEqual(
            sortedLists(subsetPerZone(perZone(cluster), limit, salt, current)),
            sortedLists(subsetPerZone(perZone(shuffled), limit, salt, current)),
          );
          assert.deepStrictEqual(sortedLists(subsetPerZone(perZone(cluster), limit, salt, new Map())), current);
        },
      ),
      { numRuns: 200 },
    );
  });
});
