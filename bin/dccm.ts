#!/usr/bin/env node
/** The `dccm` command: desired, render (and daemon, the main job). */
import * as fs from "node:fs";
import { parseArgs } from "node:util";
import { ConfigError, desiredState, parseConfig, type RawConfig } from "../model";
import { renderProgram } from "../program/render";
import { RejectedServicesError, stackProgram } from "../program/stackProgram";
import { snapshotFromKubectlJson, SnapshotError, type DumpContents } from "../watcher/kubectlDump";
import { runDaemon } from "./daemonCommand";
import { CONFIG_FLAG_OPTIONS, configFromFlags, parseFlags, toPulumiConfig, UsageError } from "./options";

const USAGE = `usage:
  dccm desired --snapshot FILE [--config FILE] [--<key> VALUE ...]   print the DesiredState JSON
  dccm render  --snapshot FILE [--config FILE] [--<key> VALUE ...]   print every resource the stack program declares
  dccm daemon  --kubeconfig FILE --config FILE [--state-dir DIR] [--listen HOST:PORT] [--parallelism N]
               [--drift-interval 10m] [--backend-url URL] [--secrets-provider URL] [--compute-endpoint URL]
               [--no-leader-election] [--identity NAME] [--log-level LEVEL]   run the controller
config keys (file or flags): project region network subnetwork nodeTags clusterName clusterId clusterCIDR backendMode configureRoutes loadBalancerClasses`;

interface Input {
  snapshotPath: string;
  dump: DumpContents;
  raw: RawConfig;
}

function readInput(argv: string[]): Input {
  const { values } = parseFlags(() =>
    parseArgs({ args: argv, options: { snapshot: { type: "string" }, config: { type: "string" }, ...CONFIG_FLAG_OPTIONS }, strict: true, allowPositionals: false }),
  );
  const snapshotPath = values.snapshot;
  if (typeof snapshotPath !== "string") throw new UsageError("--snapshot FILE is required (the output of kubectl get nodes,services -A -o json)");
  let text: string;
  try {
    text = fs.readFileSync(snapshotPath, "utf8");
  } catch (error) {
    throw new UsageError(`--snapshot ${snapshotPath}: ${(error as Error).message}`, { cause: error });
  }
  const dump = snapshotFromKubectlJson(text, snapshotPath);
  const raw = configFromFlags(values, typeof values.config === "string" ? values.config : undefined);
  if (raw.clusterId === undefined && dump.clusterId !== undefined) raw.clusterId = dump.clusterId;
  return { snapshotPath, dump, raw };
}

async function run(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "desired": {
      const input = readInput(rest);
      const desired = desiredState(input.dump.snapshot, parseConfig(input.raw));
      for (const rejection of desired.rejected) process.stderr.write(`${rejection.message}\n`);
      process.stdout.write(`${JSON.stringify(desired, null, 2)}\n`);
      return 0;
    }
    case "render": {
      const input = readInput(rest);
      const desired = desiredState(input.dump.snapshot, parseConfig(input.raw));
      for (const rejection of desired.rejected) process.stderr.write(`${rejection.message}\n`);
      const config = { ...toPulumiConfig(input.raw), snapshot: input.snapshotPath, scope: "all" };
      const result = await renderProgram(stackProgram, config);
      // The program fails on purpose when Services are rejected (so `up` deletes nothing); they were reported above.
      if ("error" in result && !(result.error instanceof RejectedServicesError)) throw result.error;
      process.stdout.write(`${JSON.stringify(result.resources, null, 2)}\n`);
      return 0;
    }
    case "daemon":
      return runDaemon(rest);
    case undefined:
    case "help":
    case "--help":
      process.stdout.write(`${USAGE}\n`);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

run(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (error instanceof UsageError || error instanceof ConfigError || error instanceof SnapshotError) {
      process.stderr.write(`dccm: ${error.message}\n${error instanceof UsageError ? `${USAGE}\n` : ""}`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`dccm: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
