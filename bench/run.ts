/**
 * `npm run bench`: prints figures as it goes; the last line is one JSON object of all figures.
 * `node --expose-gc dist/bench/run.js engineRuns` runs only the named part (core, watcher, daemon,
 * engineRuns, realisticIngress, peerRealistic, neg, nodes); `node dist/bench/peer.js` only dccm beside the
 * real stock CCM, `node dist/bench/peer.js realistic` the same in GCE's realistic profile.
 */
import { benchCore } from "./core";
import { benchDaemon, benchRealisticIngress } from "./daemon";
import { benchEngineRuns } from "./engineRuns";
import { benchNegChurn } from "./negScale";
import { benchNodeInit } from "./nodes";
import { benchPeer, benchPeerRealistic } from "./peer";
import { benchScale } from "./scale";
import { benchWatcherScale } from "./watcherScale";
import { benchPreview } from "./preview";
import { benchWatcher } from "./watcher";

const only = process.argv[2];

async function main(): Promise<void> {
  const figures: Record<string, number> = {};
  if (only === "engineRuns") {
    Object.assign(figures, await benchEngineRuns());
    process.stdout.write(`${JSON.stringify(figures)}\n`);
    return;
  }
  if (only === "peerRealistic") {
    Object.assign(figures, await benchPeerRealistic());
    process.stdout.write(`${JSON.stringify(figures)}\n`);
    return;
  }
  if (only === "neg") {
    Object.assign(figures, await benchNegChurn());
    process.stdout.write(`${JSON.stringify(figures)}\n`);
    return;
  }
  if (only === "realisticIngress") {
    Object.assign(figures, await benchRealisticIngress());
    process.stdout.write(`${JSON.stringify(figures)}\n`);
    return;
  }
  const core = await benchCore();
  process.stderr.write(`core: ${JSON.stringify(core)}\n`);
  Object.assign(figures, core);
  const watcher = await benchWatcher();
  process.stderr.write(`watcher: ${JSON.stringify(watcher)}\n`);
  Object.assign(figures, watcher);
  const daemon = await benchDaemon();
  process.stderr.write(`daemon: ${JSON.stringify(daemon)}\n`);
  Object.assign(figures, daemon);
  const realistic = await benchRealisticIngress();
  process.stderr.write(`realistic ingress: ${JSON.stringify(realistic)}\n`);
  Object.assign(figures, realistic);
  const engine = await benchEngineRuns();
  process.stderr.write(`engine runs: ${JSON.stringify(engine)}\n`);
  Object.assign(figures, engine);
  const preview = await benchPreview();
  process.stderr.write(`preview: ${JSON.stringify(preview)}\n`);
  Object.assign(figures, preview);
  const nodes = await benchNodeInit();
  process.stderr.write(`nodes: ${JSON.stringify(nodes)}\n`);
  for (const [key, value] of Object.entries(nodes)) if (typeof value === "number") figures[key] = value;
  Object.assign(figures, await benchWatcherScale());
  Object.assign(figures, await benchScale());
  Object.assign(figures, await benchNegChurn());
  // A repairMs of null (not put back within the bound) stays in `node dist/bench/peer.js`'s output.
  for (const [key, value] of Object.entries(await benchPeer())) if (typeof value === "number") figures[key] = value;
  // An ingress figure of null (no Service served within the bound) stays in `node dist/bench/peer.js realistic`'s output.
  for (const [key, value] of Object.entries(await benchPeerRealistic())) {
    if (typeof value === "number") figures[key] = value;
  }
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
