/**
 * What every dccm command shares: the config file (JSON or YAML) with flags of the same names on
 * top, the flags themselves (parseArgs options and help lines from one list), and the flags of the
 * commands that read the daemon's stacks and cluster (preview, status, gc, adopt): where the backend
 * is (stacks/backend.ts's rule, through daemon/config.ts backendSettings, as the daemon finds it),
 * the Compute endpoint, and clusterId (flag, config file, then the cluster's ConfigMap).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseArgs } from "node:util";
import * as k8s from "@kubernetes/client-node";
import {
  backendSettings,
  CLUSTER_ID_NOT_FOUND,
  clusterIdUnset,
  collectClusterConfig,
  collectModelConfig,
  DAEMON_DEFAULTS,
  splitConfig,
  withConfigFlags,
  type BackendSettings,
  type SharedConfig,
} from "../daemon/config";
import { CONFIG_KEYS, ConfigError, type Config, type RawConfig } from "../model";
import { parseNodeConfig } from "../controllers/node/config";
import { describeError } from "../runtime/errors";
import { readConfigFile, UsageError } from "../daemon/configFile";
import { BACKEND_URL_DEFAULT, COMPUTE_ENDPOINT_DEFAULT } from "../daemon/settings";
import { loadKubeConfig, readClusterId } from "../watcher/list";

export { readConfigFile, UsageError } from "../daemon/configFile";

export function configFromFlags(
  values: Record<string, string | boolean | undefined>,
  configPath: string | undefined,
): RawConfig {
  return withConfigFlags(configPath !== undefined ? readConfigFile(configPath) : {}, values);
}

/** Flags for every config key, for node:util parseArgs. */
export const CONFIG_FLAG_OPTIONS: Record<string, { type: "string" }> = Object.fromEntries(
  CONFIG_KEYS.map((key) => [key, { type: "string" as const }]),
);

/** Pulumi config values are strings; lists travel as JSON arrays. */
export function toPulumiConfig(raw: RawConfig): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (value === undefined || value === null) continue;
    out[key] = typeof value === "string" ? value : JSON.stringify(value);
  }
  return out;
}

/**
 * node:util parseArgs with its errors (unknown flag, missing value) turned into usage errors; an
 * unknown flag is named with the known one it most likely meant (`known`: the flags' names).
 */
export function parseFlags<T>(parse: () => T, known: readonly string[] = []): T {
  try {
    return parse();
  } catch (error) {
    const unknown = /^Unknown option '(-[^']*)'/.exec((error as Error).message)?.[1];
    if (unknown === undefined) throw new UsageError((error as Error).message, { cause: error });
    const meant = nearestFlag(unknown, known);
    throw new UsageError(`unknown flag ${unknown}${meant === undefined ? "" : ` (did you mean --${meant}?)`}`, {
      cause: error,
    });
  }
}

/** A flag name compared without case, dashes or underscores: `--stateDir`, `--state_dir` and `--state-dir` are one. */
function flagKey(name: string): string {
  return name.replace(/^-+/, "").toLowerCase().replace(/[-_]/g, "");
}

/** Edits (insert, delete, substitute) from `a` to `b`. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++)
      current[j] = Math.min(
        (previous[j] ?? 0) + 1,
        (current[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/**
 * The known flag an unknown one most likely meant: the same name in another spelling (case,
 * dashes), else the nearest within two edits (a typo), the first of equals in `known`'s order;
 * undefined when none is that near, or the name is too short to tell.
 */
export function nearestFlag(given: string, known: readonly string[]): string | undefined {
  const key = flagKey(given);
  const same = known.find((name) => flagKey(name) === key);
  if (same !== undefined) return same;
  if (key.length < 4) return undefined;
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = editDistance(key, flagKey(name));
    if (distance <= 2 && (best === undefined || distance < best.distance)) best = { name, distance };
  }
  return best?.name;
}

/** parseConfig of the model's keys, with the unknown keys reported first in the same error. */
export function parseModelConfig(shared: Pick<SharedConfig, "model" | "unknown">): Config {
  const problems = [...shared.unknown];
  const config = collectModelConfig(shared.model, problems);
  if (config !== undefined && problems.length === 0) return config;
  throw new ConfigError(problems);
}

const SNAPSHOT_FLAGS = [
  "  --snapshot FILE                      the cluster as `kubectl get nodes,services -A -o json` prints it (required)",
  "  --config FILE                        the dccm config file (only its GCP keys are read)",
  "  --<key> VALUE                        a GCP key, winning over the file's (dccm daemon --help lists them)",
  "  -h, --help                           print this help",
];

export const DESIRED_HELP = [
  "usage: dccm desired --snapshot FILE [--config FILE] [--<key> VALUE ...]",
  "prints the desired state (JSON) of the cluster in FILE; rejected Services on stderr.",
  ...SNAPSHOT_FLAGS,
].join("\n");

export const RENDER_HELP = [
  "usage: dccm render --snapshot FILE [--config FILE] [--<key> VALUE ...]",
  "prints every resource the stack program declares for the cluster in FILE (under Pulumi's mocks: no cloud call).",
  ...SNAPSHOT_FLAGS,
].join("\n");

// ---- Flags: one list makes both the parser's options and the help lines, so the two cannot differ.

/** A flag of a command. */
export interface Flag<Name extends string = string> {
  /** Without the leading dashes. */
  readonly name: Name;
  /** Placeholder of the value; none for a switch. */
  readonly value?: string;
  /** The config key the flag overrides, shown `[key]` (`[key: false]` for a `--no-…` switch). */
  readonly key?: string;
  readonly help: string;
}

/** A command's help, in order: its flags, and lines as they are (headings, a help text's second line). */
export type HelpEntry = Flag | string;

/** node:util parseArgs values: a string flag's text, a switch's true. */
export type FlagValues = Readonly<Record<string, string | boolean | undefined>>;

const FLAG_COLUMN = 39;

/** One flag's help line: the flag and its placeholder, padded to one column, then `[key] ` and the help. */
export function helpLine(flag: Flag): string {
  const left = `  --${flag.name}${flag.value !== undefined ? ` ${flag.value}` : ""}`;
  const keyText = flag.key === undefined ? "" : flag.value === undefined ? `[${flag.key}: false] ` : `[${flag.key}] `;
  return `${left.padEnd(FLAG_COLUMN)}${keyText}${flag.help}`;
}

/** `-h, --help`, which every command takes (flagOptions adds it). */
export const HELP_FLAG_LINE = `${"  -h, --help".padEnd(FLAG_COLUMN)}print this help`;

/** A command's help text: `head`, its flags and lines, `-h, --help`, then `tail`. */
export function commandHelp(
  head: readonly string[],
  entries: readonly HelpEntry[],
  tail: readonly string[] = [],
): string {
  return [
    ...head,
    ...entries.map((entry) => (typeof entry === "string" ? entry : helpLine(entry))),
    HELP_FLAG_LINE,
    ...tail,
  ].join("\n");
}

/** parseArgs options of `entries`' flags, `-h, --help` included; a flag with a placeholder takes a value. */
export function flagOptions(
  entries: readonly HelpEntry[],
): Record<string, { type: "string" | "boolean"; short?: string }> {
  const options: Record<string, { type: "string" | "boolean"; short?: string }> = {
    help: { type: "boolean", short: "h" },
  };
  for (const entry of entries)
    if (typeof entry !== "string") options[entry.name] = { type: entry.value !== undefined ? "string" : "boolean" };
  return options;
}

/**
 * A command line of `entries`' flags (and, with `gcpFlags`, a flag for every GCP config key), strict:
 * an unknown flag or a missing value is a UsageError.
 */
export function parseCommand(
  argv: string[],
  entries: readonly HelpEntry[],
  options: { gcpFlags?: boolean; positionals?: boolean } = {},
): { values: FlagValues; positionals: string[] } {
  const parseOptions = { ...flagOptions(entries), ...(options.gcpFlags === true ? CONFIG_FLAG_OPTIONS : {}) };
  return parseFlags(
    () =>
      parseArgs({ args: argv, options: parseOptions, strict: true, allowPositionals: options.positionals === true }),
    Object.keys(parseOptions),
  );
}

/** A string flag's value; undefined when absent (or a switch). */
export function stringFlag(values: FlagValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === "string" ? value : undefined;
}

// ---- The flags of the commands that read the daemon's stacks and cluster (preview, status, gc, adopt).

/** `--backend-url`'s default, the daemon's help and these commands' alike. */
export { BACKEND_URL_DEFAULT, COMPUTE_ENDPOINT_DEFAULT };

/** Each shared flag as the commands reading the daemon's stacks describe it; a command may say more of one (`{ ...flag, help }`). */
export const READER_FLAGS = {
  kubeconfig: { name: "kubeconfig", value: "FILE", help: "the cluster (default: $KUBECONFIG, else ~/.kube/config)" },
  stateDir: {
    name: "state-dir",
    value: "DIR",
    key: "stateDir",
    help: `where the daemon's default backend is (default ${DAEMON_DEFAULTS.stateDir})`,
  },
  backendUrl: {
    name: "backend-url",
    value: "URL",
    key: "backendUrl",
    help: `the daemon's Pulumi backend ${BACKEND_URL_DEFAULT}`,
  },
  secretsProvider: {
    name: "secrets-provider",
    value: "URL",
    key: "secretsProvider",
    help: "as dccm daemon (default: the passphrase in $PULUMI_CONFIG_PASSPHRASE[_FILE])",
  },
  computeEndpoint: {
    name: "compute-endpoint",
    value: "URL",
    key: "computeEndpoint",
    help: `Compute API ${COMPUTE_ENDPOINT_DEFAULT}`,
  },
  clusterId: { name: "clusterId", value: "ID", key: "clusterId", help: "instead of the config file's" },
} as const satisfies Record<string, Flag>;

/** `--config FILE`, naming the keys of the daemon's config file this command reads. */
export function configFlag(keys: readonly string[]): Flag {
  return { name: "config", value: "FILE", help: `the config file of dccm daemon (${keys.join(", ")})` };
}

/** The flags of a command that reads the cluster, the daemon's stacks and Compute (gc, drift), in help order. */
export const CLUSTER_STACKS_COMPUTE_FLAGS: readonly Flag[] = [
  READER_FLAGS.kubeconfig,
  configFlag(["GCP keys", "stateDir", "backendUrl", "computeEndpoint"]),
  READER_FLAGS.stateDir,
  READER_FLAGS.backendUrl,
  READER_FLAGS.computeEndpoint,
];

/** The last help line of a command that takes the GCP flags. */
export const GCP_FLAGS_NOTE = "and the GCP flags of dccm daemon --help (--project, --clusterId, ...).";

/** What the shared flags and the config file say. */
export interface ReaderInput {
  /** `--kubeconfig`; undefined: $KUBECONFIG, else ~/.kube/config. */
  readonly kubeconfig: string | undefined;
  /** The config file by part, the GCP flags on top. */
  readonly shared: SharedConfig;
  /** stateDir, backendUrl (resolved) and secretsProvider, as the daemon reads them. */
  readonly backend: BackendSettings;
}

/**
 * The config file (`--config`) with the GCP flags on top, and where the daemon's stacks are: its
 * flags over its keys, then $PULUMI_BACKEND_URL, then file://<stateDir>/backend ("" is unset
 * everywhere). A key of the wrong type is a ConfigError.
 */
export function readReaderFlags(values: FlagValues, env: Readonly<Record<string, string | undefined>>): ReaderInput {
  const shared = splitConfig(configFromFlags(values, stringFlag(values, "config")));
  const problems: string[] = [];
  const backend = backendSettings(values, shared, env, problems);
  if (problems.length > 0) throw new ConfigError(problems);
  return { kubeconfig: stringFlag(values, "kubeconfig"), shared, backend };
}

/** `--compute-endpoint` over the config file's computeEndpoint, checked as the node controller checks it. */
export function computeEndpointOf(values: FlagValues, shared: SharedConfig): string | undefined {
  const raw: Record<string, unknown> = { ...shared.node };
  const flag = stringFlag(values, "compute-endpoint");
  if (flag !== undefined) raw.computeEndpoint = flag;
  const problems: string[] = [];
  const computeEndpoint = parseNodeConfig(raw, problems).computeEndpoint;
  if (problems.length > 0) throw new ConfigError(problems);
  return computeEndpoint;
}

/** ConfigMap kube-system/ingress-uid's clusterId, read from the cluster of `kubeConfig`. */
export function clusterIdFromCluster(kubeConfig: k8s.KubeConfig): Promise<string | undefined> {
  return readClusterId(kubeConfig.makeApiClient(k8s.CoreV1Api));
}

/**
 * The GCP config, clusterId from --clusterId or the config file, else from the cluster
 * (`fromCluster`, asked only then), as the daemon finds it (daemon/config.ts collectClusterConfig).
 * Every problem in one ConfigError; no clusterId anywhere is CLUSTER_ID_NOT_FOUND.
 */
export async function clusterConfig(
  shared: Pick<SharedConfig, "model" | "unknown">,
  fromCluster: () => Promise<string | undefined>,
): Promise<Config> {
  const found = clusterIdUnset(shared.model) ? { clusterId: await fromCluster() } : undefined;
  const problems = [...shared.unknown];
  const { config } = collectClusterConfig(shared.model, found, problems);
  if (config !== undefined && problems.length === 0) return config;
  throw new ConfigError(problems);
}

/** clusterId alone (dccm status needs no other GCP key), looked for as clusterConfig looks for it. */
export async function clusterIdOf(model: RawConfig, fromCluster: () => Promise<string | undefined>): Promise<string> {
  if (clusterIdUnset(model)) {
    const found = await fromCluster();
    if (found === undefined) throw new ConfigError([CLUSTER_ID_NOT_FOUND]);
    return found;
  }
  // As parseConfig reads the key.
  if (typeof model.clusterId !== "string")
    throw new ConfigError([`clusterId: expected a string, got ${JSON.stringify(model.clusterId)}`]);
  return model.clusterId.trim();
}

/**
 * A failure as one line after `dccm <command>: `: a ConfigError with every problem (describeError
 * keeps only the lines of a message that say "error" or "invalid", which would drop them).
 */
export function describeFailure(error: unknown): string {
  return error instanceof ConfigError ? `invalid configuration: ${error.problems.join("; ")}` : describeError(error);
}

/**
 * The cluster of `--kubeconfig FILE`, else $KUBECONFIG, ~/.kube/config or the in-cluster service
 * account (the client's order); a file that cannot be read, or none of them, is a usage error
 * naming it (the client would fall back to http://localhost:8080 and fail later, less clearly).
 */
export function kubeConfigOf(
  file: string | undefined,
  env: Readonly<Record<string, string | undefined>> = process.env,
): k8s.KubeConfig {
  const named =
    file ??
    (env.KUBECONFIG !== undefined && env.KUBECONFIG !== "" ? env.KUBECONFIG.split(path.delimiter)[0] : undefined);
  if (
    named === undefined &&
    env.KUBERNETES_SERVICE_HOST === undefined &&
    !fs.existsSync(path.join(os.homedir(), ".kube", "config"))
  ) {
    throw new UsageError(
      "no cluster: pass --kubeconfig FILE or set $KUBECONFIG (there is no ~/.kube/config, and this is not a pod) — or try dccm demo",
    );
  }
  try {
    return loadKubeConfig(file);
  } catch (error) {
    const where = file !== undefined ? `--kubeconfig ${file}` : `$KUBECONFIG ${env.KUBECONFIG ?? ""}`.trim();
    throw new UsageError(`${named !== undefined ? where : "~/.kube/config"}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/**
 * Process warnings of type `name` are dropped; every other warning reaches the listeners there were
 * (Node's own, which prints it). For gcp-metadata's `MetadataLookupWarning`: off GCE, looking for
 * the metadata server fails in ways it does not expect (no DNS), and the warning says nothing that
 * the credentials error which follows does not say better.
 */
export function dropWarnings(name: string): void {
  const listeners = process.listeners("warning");
  process.removeAllListeners("warning");
  process.on("warning", (warning) => {
    if (warning.name !== name) for (const listener of listeners) listener(warning);
  });
}
