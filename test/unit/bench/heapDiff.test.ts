/** bench/heapDiff.ts: two heap snapshots diffed by group, and who keeps an object. */
import { strict as assert } from "node:assert";
import { diffGroups, parentEdges, parseSnapshot } from "../../../bench/heapDiff";
import { slopes } from "../../../bench/runHeap";

const META = {
  node_fields: ["type", "name", "id", "self_size", "edge_count", "trace_node_id", "detachedness"],
  node_types: [["hidden", "array", "string", "object", "code", "closure", "synthetic"]],
  edge_fields: ["type", "name_or_index", "to_node"],
  edge_types: [["context", "element", "property", "internal", "hidden", "shortcut", "weak"]],
};
const STRINGS = ["", "(GC roots)", "Channel", "Store", "channel", "store", "cache"];
const WIDTH = META.node_fields.length;

/** A node: [type, name, id, self_size, edge_count, 0, 0]; an edge: [type, name, target node index]. */
function snapshotText(nodes: number[][], edges: [number, number, number][]): string {
  return JSON.stringify({
    snapshot: { meta: META },
    nodes: nodes.flatMap((node) => [...node, 0, 0]),
    edges: edges.flatMap(([type, name, to]) => [type, name, to * WIDTH]),
    strings: STRINGS,
  });
}

// The root (synthetic) → a Store (object, id 3) → a Channel (id 5); the root → a weak edge to another Channel (id 7).
const BEFORE = snapshotText(
  [
    [6, 1, 1, 0, 1],
    [3, 3, 3, 40, 0],
  ],
  [[2, 5, 1]],
);
const AFTER = snapshotText(
  [
    [6, 1, 1, 0, 2],
    [3, 3, 3, 40, 1],
    [3, 2, 5, 100, 0],
    [3, 2, 7, 60, 0],
  ],
  [
    [2, 5, 1],
    [6, 6, 3],
    [2, 4, 2],
  ],
);

describe("bench/heapDiff", () => {
  it("counts the objects the second snapshot has and the first had not, by group, largest first", () => {
    assert.deepEqual(diffGroups(parseSnapshot(BEFORE), parseSnapshot(AFTER)), [
      { group: "object:Channel", newCount: 2, newBytes: 160, countDelta: 2, bytesDelta: 160 },
      { group: "synthetic:(GC roots)", newCount: 0, newBytes: 0, countDelta: 0, bytesDelta: 0 },
      { group: "object:Store", newCount: 0, newBytes: 0, countDelta: 0, bytesDelta: 0 },
    ]);
  });

  it("reaches an object from the root through strong edges only: one kept through a weak edge has no parent", () => {
    const graph = parseSnapshot(AFTER);
    const parent = parentEdges(graph);
    assert.deepEqual(
      [...parent].map((edge) => (edge === -1 ? undefined : graph.edgeLabels[edge])),
      [undefined, "store", "channel", undefined],
    );
  });
});

describe("bench/runHeap slopes", () => {
  const MB = 1024 * 1024;
  const samples = [100, 200, 300, 400, 500].map((runs) => ({
    runs,
    // 2 MB per 1,000 runs up to run 300, flat after.
    heapUsed: 70 * MB + Math.min(runs, 300) * 2 * 1024 * 1.024,
    codeSpace: 3 * MB,
    rss: 200 * MB + runs * 5 * 1024 * 1.024,
  }));

  it("tells growth that stops (100 → 300) from growth that does not (300 → N)", () => {
    assert.deepEqual(slopes(samples, 100, 300), { heapUsed: 2, codeSpace: 0, rss: 5 });
    assert.deepEqual(slopes(samples, 300, 500), { heapUsed: 0, codeSpace: 0, rss: 5 });
  });
});
