/**
 * Two V8 heap snapshots of one process (v8.writeHeapSnapshot, bench/runHeap.ts), diffed: the
 * objects of the second that the first did not have (V8 keeps an object's id across snapshots of
 * one isolate), grouped by node type and constructor or function name, with their count and
 * self size; and, for each group named in `--path`, the shortest path from the GC root to a few of
 * them (the largest), weak edges left out: who keeps them.
 * Usage: node dist/bench/heapDiff.js A.heapsnapshot B.heapsnapshot [--top 40] [--path Name,...]
 */
import * as fs from "node:fs";

interface RawSnapshot {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

export interface HeapGraph {
  /** Per node: its id, its group (`type:name`), its self size, and the index of its first edge. */
  ids: Float64Array;
  groups: string[];
  selfSizes: Float64Array;
  firstEdge: Uint32Array;
  edgeCount: Uint32Array;
  /** Per edge: its type, its label, the index of the node it points to. */
  edgeTypes: string[];
  edgeLabels: string[];
  edgeTargets: Uint32Array;
}

/** The group an object is counted in: closures by function name, objects by constructor, strings as one. */
export function groupOf(type: string, name: string): string {
  if (type === "string" || type === "concatenated string" || type === "sliced string") return "string";
  if (type === "number" || type === "hidden" || type === "array") return `${type}:${name.slice(0, 60)}`;
  return `${type}:${name.slice(0, 80)}`;
}

export function parseSnapshot(text: string): HeapGraph {
  const raw = JSON.parse(text) as RawSnapshot;
  const {
    node_fields: nodeFields,
    node_types: nodeTypes,
    edge_fields: edgeFields,
    edge_types: edgeTypes,
  } = raw.snapshot.meta;
  const nodeWidth = nodeFields.length;
  const edgeWidth = edgeFields.length;
  const [typeAt, nameAt, idAt, sizeAt, edgesAt] = ["type", "name", "id", "self_size", "edge_count"].map((field) =>
    nodeFields.indexOf(field),
  );
  const [edgeTypeAt, edgeNameAt, toAt] = ["type", "name_or_index", "to_node"].map((field) => edgeFields.indexOf(field));
  const count = raw.nodes.length / nodeWidth;
  const graph: HeapGraph = {
    ids: new Float64Array(count),
    groups: new Array<string>(count),
    selfSizes: new Float64Array(count),
    firstEdge: new Uint32Array(count),
    edgeCount: new Uint32Array(count),
    edgeTypes: [],
    edgeLabels: [],
    edgeTargets: new Uint32Array(raw.edges.length / edgeWidth),
  };
  let edge = 0;
  for (let node = 0; node < count; node++) {
    const base = node * nodeWidth;
    graph.ids[node] = raw.nodes[base + idAt];
    graph.groups[node] = groupOf(nodeTypes[0][raw.nodes[base + typeAt]], raw.strings[raw.nodes[base + nameAt]]);
    graph.selfSizes[node] = raw.nodes[base + sizeAt];
    graph.firstEdge[node] = edge;
    graph.edgeCount[node] = raw.nodes[base + edgesAt];
    edge += raw.nodes[base + edgesAt];
  }
  for (let index = 0; index < graph.edgeTargets.length; index++) {
    const base = index * edgeWidth;
    const type = edgeTypes[0][raw.edges[base + edgeTypeAt]];
    const label = raw.edges[base + edgeNameAt];
    graph.edgeTypes.push(type);
    graph.edgeLabels.push(type === "element" || type === "hidden" ? `[${label}]` : raw.strings[label]);
    graph.edgeTargets[index] = raw.edges[base + toAt] / nodeWidth;
  }
  return graph;
}

export interface GroupGrowth {
  group: string;
  /** Objects of the second snapshot that the first did not have. */
  newCount: number;
  newBytes: number;
  /** The group's count in the second minus in the first. */
  countDelta: number;
  bytesDelta: number;
}

/** Pure: per group, what the second snapshot has that the first had not, largest first. */
export function diffGroups(before: HeapGraph, after: HeapGraph): GroupGrowth[] {
  const known = new Set<number>(before.ids);
  const growth = new Map<string, GroupGrowth>();
  const entry = (group: string): GroupGrowth => {
    let found = growth.get(group);
    if (found === undefined) {
      found = { group, newCount: 0, newBytes: 0, countDelta: 0, bytesDelta: 0 };
      growth.set(group, found);
    }
    return found;
  };
  for (let node = 0; node < before.ids.length; node++) {
    const found = entry(before.groups[node]);
    found.countDelta--;
    found.bytesDelta -= before.selfSizes[node];
  }
  for (let node = 0; node < after.ids.length; node++) {
    const found = entry(after.groups[node]);
    found.countDelta++;
    found.bytesDelta += after.selfSizes[node];
    if (known.has(after.ids[node])) continue;
    found.newCount++;
    found.newBytes += after.selfSizes[node];
  }
  return [...growth.values()].sort((a, b) => b.newBytes - a.newBytes);
}

/** The shortest path from the GC root (node 0) to every node, weak edges left out: each node's parent edge. */
export function parentEdges(graph: HeapGraph): Int32Array {
  const parent = new Int32Array(graph.ids.length).fill(-1);
  const seen = new Uint8Array(graph.ids.length);
  seen[0] = 1;
  let frontier = [0];
  while (frontier.length > 0) {
    const next: number[] = [];
    for (const node of frontier) {
      const first = graph.firstEdge[node];
      for (let edge = first; edge < first + graph.edgeCount[node]; edge++) {
        if (graph.edgeTypes[edge] === "weak") continue;
        const target = graph.edgeTargets[edge];
        if (seen[target] === 1) continue;
        seen[target] = 1;
        parent[target] = edge;
        next.push(target);
      }
    }
    frontier = next;
  }
  return parent;
}

function pathTo(graph: HeapGraph, parent: Int32Array, edgeSources: Uint32Array, node: number): string {
  const steps: string[] = [];
  let at = node;
  while (at !== 0 && parent[at] !== -1 && steps.length < 40) {
    const edge = parent[at];
    steps.push(`${graph.groups[at]} (via ${graph.edgeTypes[edge]} "${graph.edgeLabels[edge]}")`);
    at = edgeSources[edge];
  }
  if (at !== 0) steps.push(parent[at] === -1 ? "(unreachable from the root but through weak edges)" : "…");
  return steps.reverse().join("\n    → ");
}

function edgeSourcesOf(graph: HeapGraph): Uint32Array {
  const sources = new Uint32Array(graph.edgeTargets.length);
  for (let node = 0; node < graph.ids.length; node++) {
    const first = graph.firstEdge[node];
    sources.fill(node, first, first + graph.edgeCount[node]);
  }
  return sources;
}

function main(argv: readonly string[]): void {
  const [beforeFile, afterFile] = argv;
  if (beforeFile === undefined || afterFile === undefined)
    throw new Error("usage: heapDiff.js A.heapsnapshot B.heapsnapshot [--top N] [--path Group,...]");
  const option = (name: string): string | undefined => {
    const at = argv.indexOf(name);
    return at === -1 ? undefined : argv[at + 1];
  };
  const top = Number(option("--top") ?? "40");
  const before = parseSnapshot(fs.readFileSync(beforeFile, "utf8"));
  const after = parseSnapshot(fs.readFileSync(afterFile, "utf8"));
  const growth = diffGroups(before, after);
  const total = growth.reduce((sum, group) => sum + group.newBytes, 0);
  const delta = growth.reduce((sum, group) => sum + group.bytesDelta, 0);
  process.stdout.write(`new objects: ${total} bytes; self size, second − first: ${delta} bytes\n`);
  const byType = new Map<string, number>();
  for (const group of growth) {
    const type = group.group.split(":")[0];
    byType.set(type, (byType.get(type) ?? 0) + group.bytesDelta);
  }
  process.stdout.write(
    `self size, second − first, by node type: ${[...byType]
      .sort((a, b) => b[1] - a[1])
      .map(([type, bytes]) => `${type} ${bytes}`)
      .join(", ")}\n`,
  );
  process.stdout.write("new bytes\tnew count\tΔ bytes\tΔ count\tgroup\n");
  for (const group of growth.slice(0, top))
    process.stdout.write(
      `${group.newBytes}\t${group.newCount}\t${group.bytesDelta}\t${group.countDelta}\t${group.group}\n`,
    );
  process.stdout.write("\nlargest growth in count:\n");
  for (const group of [...growth].sort((a, b) => b.countDelta - a.countDelta).slice(0, top))
    process.stdout.write(
      `${group.newBytes}\t${group.newCount}\t${group.bytesDelta}\t${group.countDelta}\t${group.group}\n`,
    );
  const wanted = (option("--path") ?? "").split(",").filter((name) => name !== "");
  if (wanted.length === 0) return;
  const known = new Set<number>(before.ids);
  const parent = parentEdges(after);
  const sources = edgeSourcesOf(after);
  for (const name of wanted) {
    // The largest three: a list that grows with every run is larger than its peers.
    const fresh: number[] = [];
    for (let node = 0; node < after.ids.length; node++)
      if (after.groups[node] === name && !known.has(after.ids[node])) fresh.push(node);
    fresh.sort((a, b) => after.selfSizes[b] - after.selfSizes[a]).splice(3);
    process.stdout.write(`\n${name}: ${fresh.length === 0 ? "no new object" : ""}\n`);
    for (const node of fresh)
      process.stdout.write(`  ${after.selfSizes[node]} bytes: root\n    → ${pathTo(after, parent, sources, node)}\n`);
  }
}

if (require.main === module) main(process.argv.slice(2));
