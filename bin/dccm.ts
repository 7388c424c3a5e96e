#!/usr/bin/env node
/** The `dccm` command: desired, render, daemon (the main job), gc and manifests. */
import * as fs from "node:fs";
import { parseArgs } from "node:util";
import * as path from "node:path";
import { ConfigError, desiredState, type Config, type RawConfig } from "../model";
import { renderProgram } from "../program/render";
import { RejectedServicesError, stackProgram } from "../program/stackProgram";
import { snapshotFromKubectlJson, SnapshotError, type DumpContents } from "../watcher/kubectlDump";
import { runDaemon } from "./daemonCommand";
import { runDemo } from "./demoCommand";
import { runAdopt } from "./adoptCommand";
import { runGc } from "./gcCommand";
import { runManifests } from "./manifestsCommand";
import { runPreview } from "./previewCommand";
import { runStatus } from "./statusCommand";
import { runRefresh } from "./refreshCommand";
import { runDrift } from "./driftCommand";
import { DeployArgsError } from "../deploy/manifests";
import { splitConfig } from "../daemon/config";
import { SUBCOMMAND_HELP, USAGE } from "./commands";
import { DESIRED_HELP, RENDER_HELP } from "./options";
import {
  CONFIG_FLAG_OPTIONS,
  configFromFlags,
  dropWarnings,
  parseFlags,
  parseModelConfig,
  toPulumiConfig,
  UsageError,
} from "./options";

interface Input {
  snapshotPath: string;
  dump: DumpContents;
  /** The GCP keys only: the daemon's and node controller's keys of a shared file are left out. */
  raw: RawConfig;
  config: Config;
}

function readInput(argv: string[]): Input | "help" {
  const options = {
    snapshot: { type: "string" },
    config: { type: "string" },
    help: { type: "boolean", short: "h" },
    ...CONFIG_FLAG_OPTIONS,
  } as const;
  const { values } = parseFlags(
    () => parseArgs({ args: argv, options, strict: true, allowPositionals: false }),
    Object.keys(options),
  );
  if (values.help === true) return "help";
  const snapshotPath = values.snapshot;
  if (typeof snapshotPath !== "string")
    throw new UsageError("--snapshot FILE is required (the output of kubectl get nodes,services -A -o json)");
  let text: string;
  try {
    text = fs.readFileSync(snapshotPath, "utf8");
  } catch (error) {
    throw new UsageError(`--snapshot ${snapshotPath}: ${(error as Error).message}`, { cause: error });
  }
  const dump = snapshotFromKubectlJson(text, snapshotPath);
  const shared = splitConfig(configFromFlags(values, typeof values.config === "string" ? values.config : undefined));
  const raw = shared.model;
  if (raw.clusterId === undefined && dump.clusterId !== undefined) raw.clusterId = dump.clusterId;
  return { snapshotPath, dump, raw, config: parseModelConfig(shared) };
}

async function run(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case "desired": {
      const input = readInput(rest);
      if (input === "help") return help(DESIRED_HELP);
      const desired = desiredState(input.dump.snapshot, input.config);
      for (const rejection of desired.rejected) process.stderr.write(`${rejection.message}\n`);
      process.stdout.write(`${JSON.stringify(desired, null, 2)}\n`);
      return 0;
    }
    case "render": {
      const input = readInput(rest);
      if (input === "help") return help(RENDER_HELP);
      const desired = desiredState(input.dump.snapshot, input.config);
      for (const rejection of desired.rejected) process.stderr.write(`${rejection.message}\n`);
      // Absolute: the program resolves a relative dccm:snapshot against a Pulumi project directory, not our cwd.
      const config = { ...toPulumiConfig(input.raw), snapshot: path.resolve(input.snapshotPath), scope: "all" };
      const result = await renderProgram(stackProgram, config);
      // The program fails on purpose when Services are rejected (so `up` deletes nothing); they were reported above.
      if ("error" in result && !(result.error instanceof RejectedServicesError)) throw result.error;
      process.stdout.write(`${JSON.stringify(result.resources, null, 2)}\n`);
      return 0;
    }
    case "daemon":
      return runDaemon(rest);
    case "demo":
      return runDemo(rest);
    case "gc":
      return runGc(rest);
    case "adopt":
      return runAdopt(rest);
    case "manifests":
      return runManifests(rest);
    case "preview":
      return runPreview(rest);
    case "status":
      return runStatus(rest);
    case "refresh":
      return runRefresh(rest);
    case "drift":
      return runDrift(rest);
    case undefined:
      process.stdout.write(`${USAGE}\n`);
      return 2;
    case "version":
    case "--version":
    case "-v":
      process.stdout.write(`dccm ${dccmVersion()}\n`);
      return 0;
    case "help":
    case "--help":
    case "-h":
      return help();
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

/** The version of the package this dccm was built from (dist/bin/dccm.js → package.json). */
function dccmVersion(): string {
  const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8")) as {
    version?: unknown;
  };
  return typeof manifest.version === "string" ? manifest.version : "unknown";
}

function help(text = USAGE): number {
  process.stdout.write(`${text}\n`);
  return 0;
}

dropWarnings("MetadataLookupWarning");
const argv = process.argv.slice(2);
run(argv).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    if (
      error instanceof UsageError ||
      error instanceof ConfigError ||
      error instanceof SnapshotError ||
      error instanceof DeployArgsError
    ) {
      // One line naming the problem, then where the usage is: the whole help would bury the line.
      const helpCommand = SUBCOMMAND_HELP[argv[0] ?? ""] !== undefined ? `dccm ${argv[0] ?? ""} --help` : "dccm help";
      process.stderr.write(`dccm: ${error.message}\n${error instanceof UsageError ? `see ${helpCommand}\n` : ""}`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`dccm: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  },
);
