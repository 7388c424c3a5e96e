#!/usr/bin/env node
/** The `dccm` command: desired, render, daemon (the main job), gc and manifests. */
import * as fs from "node:fs";
import { parseArgs } from "node:util";
import * as path from "node:path";
import { CONFIG_KEYS, ConfigError, desiredState, type Config, type RawConfig } from "../model";
import { renderProgram } from "../program/render";
import { RejectedServicesError, stackProgram } from "../program/stackProgram";
import { snapshotFromKubectlJson, SnapshotError, type DumpContents } from "../watcher/kubectlDump";
import { DAEMON_HELP, runDaemon } from "./daemonCommand";
import { DEMO_HELP, runDemo } from "./demoCommand";
import { ADOPT_HELP, runAdopt } from "./adoptCommand";
import { GC_HELP, runGc } from "./gcCommand";
import { MANIFESTS_HELP, runManifests } from "./manifestsCommand";
import { PREVIEW_HELP, runPreview } from "./previewCommand";
import { runStatus, STATUS_HELP } from "./statusCommand";
import { REFRESH_HELP, runRefresh } from "./refreshCommand";
import { DRIFT_HELP, runDrift } from "./driftCommand";
import { DeployArgsError } from "../deploy/manifests";
import { splitConfig } from "../daemon/config";
import {
  CONFIG_FLAG_OPTIONS,
  configFromFlags,
  DESIRED_HELP,
  dropWarnings,
  parseFlags,
  parseModelConfig,
  RENDER_HELP,
  toPulumiConfig,
  UsageError,
} from "./options";

const USAGE = `usage:
  dccm demo    [--listen HOST:PORT]                                  the main job with no cluster and no GCP account: apiserver, GCE emulator, daemon (dccm demo --help)
  dccm desired --snapshot FILE [--config FILE] [--<key> VALUE ...]   print the DesiredState JSON
  dccm render  --snapshot FILE [--config FILE] [--<key> VALUE ...]   print every resource the stack program declares
  dccm daemon  [--kubeconfig FILE] [--config FILE] [FLAG ...]        run the controller (its flags: dccm daemon --help)
  dccm gc      --dry-run | --yes | RESOURCE ... [FLAG ...]           list leaked GCE resources, delete proven ones (dccm gc --help)
  dccm adopt   [--dry-run] [--allow-replace] [FLAG ...]              adopt the stock GCE CCM's load balancers and routes (dccm adopt --help)
  dccm manifests --config FILE --image IMAGE [FLAG ...]            print the in-cluster install as YAML (dccm manifests --help)
  dccm preview [--snapshot FILE] [--json] [FLAG ...]                 what the daemon would change: exit 0 none, 2 some, 1 error (dccm preview --help)
  dccm status  [--url URL] [--config FILE] [--json]                  one row per stack, from the daemon or its backend (dccm status --help)
  dccm drift   [--json] [FLAG ...]                                   what differs in GCE from the stacks, changing nothing: exit 0 none, 2 some, 1 error (dccm drift --help)
  dccm refresh NAMESPACE/NAME [--timeout DURATION]                   refresh one Service's stack now, print the daemon's answer (dccm refresh --help)
  dccm help                                                          print this text
  dccm version                                                       print the version (also --version)
one config file (YAML or JSON) serves every command: desired and render ignore the daemon's and node controller's keys
config keys (file or flags): ${CONFIG_KEYS.join(" ")}`;

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

/** Each subcommand's own usage: printed with its --help and after a usage error of it. */
const SUBCOMMAND_HELP: Readonly<Record<string, string>> = {
  desired: DESIRED_HELP,
  render: RENDER_HELP,
  daemon: DAEMON_HELP,
  demo: DEMO_HELP,
  gc: GC_HELP,
  adopt: ADOPT_HELP,
  manifests: MANIFESTS_HELP,
  preview: PREVIEW_HELP,
  status: STATUS_HELP,
  refresh: REFRESH_HELP,
  drift: DRIFT_HELP,
};

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
