/** desiredState on a big cluster, and the stack program under mocks per declared resource. */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { desiredState, parseConfig } from "../model";
import { renderProgram } from "../program/render";
import { stackProgram } from "../program/stackProgram";
import { StackRecords } from "../controllers/stackRecords";
import { DesiredCache, stackHashes } from "../model/desiredCache";
import { BENCH_CONFIG_RAW, generateCluster, toKubectlList } from "./generate";
import { elapsedMs, median, round } from "./stats";

export interface CoreFigures {
  desiredNodes: number;
  desiredServices: number;
  desiredMedianMs: number;
  desiredP90Ms: number;
  desiredJsonBytes: number;
  renderServices: number;
  renderResources: number;
  renderMs: number;
  renderMsPerResource: number;
  /** 5,000 Nodes and 10,000 Services: one Service changed, through the DesiredCache (incremental), median of 21. */
  serviceChangeNodes: number;
  serviceChangeServices: number;
  serviceChangeIncrementalMs: number;
  /** The same change as the cache computed it before (desiredState from scratch and every stack hashed), median of 5. */
  serviceChangeFullMs: number;
  serviceChangeSpeedup: number;
  /** Stacks whose references are recorded one by one, as after a restart. */
  referenceStacks: number;
  /** Median time to record all of them, the cluster stack's union read after each. */
  referenceRestoreMedianMs: number;
}

/** After a restart every Service stack records what it points at once, and the union is read each time. */
function benchReferences(stacks: number): number {
  const zones = ["us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f"];
  const samples: number[] = [];
  for (let run = 0; run < 7; run++) {
    const records = new StackRecords([]);
    const start = process.hrtime.bigint();
    for (let i = 0; i < stacks; i++) {
      records.setReferences(records.get(`service.default.s${i}`), {
        zones: [zones[i % 4], zones[(i + 1) % 4]],
        legacyHealthCheck: i % 10 === 0,
      });
      records.references();
    }
    samples.push(elapsedMs(start));
  }
  return round(median(samples));
}

/** One Service's change at 5,000 Nodes + 10,000 Services: the incremental cache, and from scratch as before (both in this run). */
function benchServiceChange(nodes: number, services: number): { incremental: number; full: number } {
  const config = parseConfig(BENCH_CONFIG_RAW);
  const snapshot = generateCluster(nodes, services);
  const cache = new DesiredCache(config);
  cache.update(snapshot);
  const changed = (round: number): typeof snapshot => ({
    nodes: snapshot.nodes,
    services: snapshot.services.map((service, i) =>
      i === 0 ? { ...service, loadBalancerSourceRanges: [`10.${round % 256}.0.0/16`] } : service,
    ),
  });
  const incremental: number[] = [];
  for (let round = 0; round < 21; round++) {
    const next = changed(round);
    const start = process.hrtime.bigint();
    const changes = cache.update(next);
    cache.desired();
    incremental.push(elapsedMs(start));
    if (changes.length !== 1) throw new Error(`bench: one Service's change changed ${changes.length} stacks`);
  }
  const full: number[] = [];
  for (let round = 0; round < 5; round++) {
    const next = changed(round);
    const start = process.hrtime.bigint();
    stackHashes(desiredState(next, config));
    full.push(elapsedMs(start));
  }
  return { incremental: median(incremental), full: median(full) };
}

export async function benchCore(): Promise<CoreFigures> {
  const config = parseConfig(BENCH_CONFIG_RAW);
  const snapshot = generateCluster(5000, 1000);
  for (let i = 0; i < 3; i++) desiredState(snapshot, config);
  const samples: number[] = [];
  let bytes = 0;
  for (let i = 0; i < 21; i++) {
    const start = process.hrtime.bigint();
    const desired = desiredState(snapshot, config);
    samples.push(elapsedMs(start));
    bytes = JSON.stringify(desired).length;
  }
  const sorted = [...samples].sort((a, b) => a - b);
  const last = desiredState(snapshot, config);
  if (last.rejected.length > 0)
    throw new Error(`bench: the generated cluster has rejected Services: ${last.rejected[0].message}`);

  const renderServices = 200;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-bench-"));
  const snapshotPath = path.join(dir, "cluster.json");
  fs.writeFileSync(snapshotPath, JSON.stringify(toKubectlList(generateCluster(300, renderServices))));
  const pulumiConfig: Record<string, string> = { snapshot: snapshotPath, scope: "all" };
  for (const [key, value] of Object.entries(BENCH_CONFIG_RAW))
    pulumiConfig[key] = typeof value === "string" ? value : JSON.stringify(value);
  const start = process.hrtime.bigint();
  const rendered = await renderProgram(stackProgram, pulumiConfig);
  const renderMs = elapsedMs(start);
  fs.rmSync(dir, { recursive: true, force: true });
  if ("error" in rendered) throw new Error("bench: the stack program failed", { cause: rendered.error });

  const change = benchServiceChange(5000, 10_000);
  return {
    desiredNodes: snapshot.nodes.length,
    desiredServices: snapshot.services.length,
    desiredMedianMs: round(median(samples)),
    desiredP90Ms: round(sorted[Math.floor(sorted.length * 0.9)]),
    desiredJsonBytes: bytes,
    renderServices,
    renderResources: rendered.resources.length,
    renderMs: round(renderMs, 0),
    renderMsPerResource: round(renderMs / rendered.resources.length),
    serviceChangeNodes: 5000,
    serviceChangeServices: 10_000,
    serviceChangeIncrementalMs: round(change.incremental),
    serviceChangeFullMs: round(change.full),
    serviceChangeSpeedup: round(change.full / change.incremental, 0),
    referenceStacks: 10_000,
    referenceRestoreMedianMs: benchReferences(10_000),
  };
}
