/**
 * The daemon's settings read and checked: its flags and config-file keys (the table of them, with
 * their defaults and help, is daemon/settings.ts), and the tunables it passes on. Pure: (flags, config file, environment, machine) → settings,
 * or one list of problems in the shape of the model's (`ConfigError`), GCP keys, daemon keys and
 * node controller keys alike, each naming the flag or key as the user wrote it.
 *
 * Two stages, so that a typo costs no API call:
 * - the command line (readCommandLine): flags no config key sets. A bad value is a usage error,
 *   reported with the usage before the config file is read, like an unknown flag.
 * - the settings (daemonSettings): keys of the config file with the flags that override them.
 *   When neither sets clusterId, everything else is checked first (`needsClusterId`), then the
 *   cluster's ConfigMap kube-system/ingress-uid is read once (resolveDaemonSettings).
 */
import type { Logger } from "pino";
import type { KubeConfig } from "@kubernetes/client-node";
import { optionalDuration } from "../runtime/durations";
import { CONFIG_KEYS, ConfigError, parseConfig, type Config, type ConfigKey, type RawConfig } from "../model";
import { NODE_CONFIG_KEYS, parseNodeConfig, type NodeConfig } from "../controllers/node/config";
import type { DaemonOptions } from "./options";
import { Machine, defaultParallelism, thisMachine } from "../runtime/parallelism";
import { resolveBackendUrl } from "../stacks/backend";
import {
  DAEMON_DEFAULTS,
  DAEMON_KEY_FLAGS,
  DAEMON_KEYS,
  DEFAULT_MAX_ORPHAN_DESTROYS,
  LOG_LEVELS,
  NODE_FLAG_NAMES,
  type DaemonFlagName,
  type DaemonKey,
  type LogLevel,
  type NodeFlagName,
} from "./settings";

// Tunables: fixed for every deployment, named here so tests, benchmarks and the docs can cite them.

/** A failed stack run is retried after 5 s: GCE's transient refusals (rate limits, a resource still being created) mostly clear by then. */
export const STACK_BACKOFF_BASE_MS = 5000;
/** Doubling stops at 5 min: a stack that keeps failing costs a dozen pulumi runs an hour, and a fix is picked up within minutes. */
export const STACK_BACKOFF_MAX_MS = 300_000;
/** Drift passes and leak checks are spread ±10 % so that stacks started together do not refresh together for ever. */
export const DRIFT_JITTER = 0.1;
/** Every 10 min the desired state is recomputed from the watch cache and every stack looked at: a lost watch event costs at most that. */
export const RESYNC_MS = 10 * 60_000;
/** Watch events within 50 ms (a rollout touching many Nodes) cost one recompute of the desired state. */
export const DEBOUNCE_MS = 50;
/** The shared provider (--shared-provider) is started again 1 s after it exited: the runs in flight failed, the next ones wait for it. */
export const SHARED_PROVIDER_BACKOFF_BASE_MS = 1000;
/** A plugin that keeps failing to start is tried once a minute at most. */
export const SHARED_PROVIDER_BACKOFF_MAX_MS = 60_000;
/** A plugin that ran for a minute had worked: its exit counts as the first failure again. */
export const SHARED_PROVIDER_HEALTHY_AFTER_MS = 60_000;
// The watch restart backoff is the watcher's (one definition, shared with the node controller).
export { WATCH_RESTART_BACKOFF_BASE_MS, WATCH_RESTART_BACKOFF_MAX_MS } from "../watcher/informers";

export {
  configKeyOfFlag,
  DAEMON_DEFAULTS,
  DAEMON_FLAG_NAMES,
  DAEMON_KEY_FLAGS,
  DAEMON_KEYS,
  DEFAULT_MAX_ORPHAN_DESTROYS,
  LOG_LEVELS,
  NODE_FLAG_NAMES,
  type DaemonFlagName,
  type DaemonKey,
  type LogLevel,
  type NodeFlagName,
} from "./settings";

/** Every flag `dccm daemon` takes, as node:util parseArgs returns them (a switch is a boolean). */
export type DaemonFlagValues = { readonly [name in DaemonFlagName | NodeFlagName | ConfigKey]?: string | boolean };

/** One config file, sorted by the part of dccm that reads each key. */
export interface SharedConfig {
  /** The GCP picture: what `desired`, `render` and the daemon's model read. */
  model: RawConfig;
  daemon: Partial<Record<DaemonKey, unknown>>;
  node: Record<string, unknown>;
  /** One line per key no part of dccm knows. */
  unknown: string[];
}

/**
 * One file serves every subcommand: each takes its part and ignores the others' keys, but a key
 * that no subcommand reads is a typo and is named.
 */
export function splitConfig(raw: Readonly<Record<string, unknown>>): SharedConfig {
  const shared: SharedConfig = { model: {}, daemon: {}, node: {}, unknown: [] };
  for (const [key, value] of Object.entries(raw)) {
    if ((CONFIG_KEYS as readonly string[]).includes(key)) shared.model[key as ConfigKey] = value;
    else if ((DAEMON_KEYS as readonly string[]).includes(key)) shared.daemon[key as DaemonKey] = value;
    else if ((NODE_CONFIG_KEYS as readonly string[]).includes(key)) shared.node[key] = value;
    else {
      shared.unknown.push(
        `${key}: unknown key (GCP keys: ${CONFIG_KEYS.join(", ")}; daemon keys: ${DAEMON_KEYS.join(", ")}; node controller keys: ${NODE_CONFIG_KEYS.join(", ")})`,
      );
    }
  }
  return shared;
}

/** parseConfig with its problems added to `problems` instead of thrown. */
export function collectModelConfig(raw: RawConfig, problems: string[]): Config | undefined {
  try {
    return parseConfig(raw);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    problems.push(...error.problems);
    return undefined;
  }
}

/** The flags no config key sets. */
export interface CommandLine {
  readonly kubeconfig: string | undefined;
  readonly configFile: string | undefined;
  readonly shutdownTimeoutMs: number;
  readonly confirmOrphanDestroys: number;
  /** `--adopt`: at start-up, adopt the stock CCM's resources (adopt/) before the first runs. */
  readonly adopt: boolean;
  /** `--allow-replace`: adoption may replace resources. */
  readonly allowReplace: boolean;
  readonly nodeController: boolean;
  /** `--shared-provider`: one provider plugin for every engine run (stacks/sharedProvider.ts). */
  readonly sharedProvider: boolean;
  /** undefined: `<hostname>_<pid>` (defaultIdentity, daemon/daemon.ts). */
  readonly identity: string | undefined;
  readonly logLevel: LogLevel;
}

export type Checked<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly problems: readonly string[] };

function stringFlag(flags: DaemonFlagValues, name: DaemonFlagName | NodeFlagName | ConfigKey): string | undefined {
  const value = flags[name];
  return typeof value === "string" ? value : undefined;
}

function isLogLevel(text: string): text is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(text);
}

/** A whole number ≥ min, from a flag or a YAML number; "" is unset. */
function wholeNumber(value: unknown, name: string, min: number, fallback: number, problems: string[]): number {
  if (value === undefined || value === null || value === "") return fallback;
  const n = typeof value === "number" ? value : typeof value === "string" ? Number(value) : NaN;
  if (Number.isInteger(n) && n >= min) return n;
  problems.push(`${name}: expected a whole number ≥ ${min}, got ${JSON.stringify(value)}`);
  return fallback;
}

export function readCommandLine(flags: DaemonFlagValues): Checked<CommandLine> {
  const problems: string[] = [];
  const level = stringFlag(flags, "log-level") ?? DAEMON_DEFAULTS.logLevel;
  const logLevel = isLogLevel(level) ? level : undefined;
  if (logLevel === undefined) problems.push(`--log-level: "${level}" is not one of ${LOG_LEVELS.join(", ")}`);
  const shutdownTimeoutMs = optionalDuration(
    stringFlag(flags, "shutdown-timeout"),
    "--shutdown-timeout",
    DAEMON_DEFAULTS.shutdownTimeoutMs,
    problems,
  );
  const confirmOrphanDestroys = wholeNumber(
    stringFlag(flags, "confirm-orphan-destroys"),
    "--confirm-orphan-destroys",
    0,
    DAEMON_DEFAULTS.confirmOrphanDestroys,
    problems,
  );
  if (flags["allow-replace"] === true && flags.adopt !== true) problems.push("--allow-replace: only with --adopt");
  if (problems.length > 0 || logLevel === undefined) return { ok: false, problems };
  return {
    ok: true,
    value: {
      kubeconfig: stringFlag(flags, "kubeconfig"),
      configFile: stringFlag(flags, "config"),
      shutdownTimeoutMs,
      confirmOrphanDestroys,
      adopt: flags.adopt === true,
      allowReplace: flags["allow-replace"] === true,
      nodeController: flags["no-node-controller"] !== true,
      sharedProvider: flags["shared-provider"] === true,
      identity: stringFlag(flags, "identity"),
      logLevel,
    },
  };
}

export interface DaemonSettings extends CommandLine {
  readonly config: Config;
  readonly nodes: NodeConfig;
  readonly stateDir: string;
  readonly listen: { readonly host: string; readonly port: number };
  readonly parallelism: number;
  readonly driftMs: number;
  readonly fullRefreshMs: number;
  readonly operationTimeoutMs: number;
  /** The flag, the key, $PULUMI_BACKEND_URL, then file://<stateDir>/backend (stacks/backend.ts). */
  readonly backendUrl: string;
  readonly secretsProvider: string | undefined;
  readonly leaderElection: boolean;
}

export interface SettingsInput {
  readonly commandLine: CommandLine;
  readonly flags: DaemonFlagValues;
  /** The config file's mapping; {} without --config. */
  readonly file: Readonly<Record<string, unknown>>;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Cores and memory the default parallelism is made from; this machine's when absent. */
  readonly machine?: Machine;
}

export type SettingsResult =
  | { readonly kind: "ok"; readonly settings: DaemonSettings }
  | { readonly kind: "invalid"; readonly problems: readonly string[] }
  /** Everything else is valid; clusterId is to be read from the cluster. */
  | { readonly kind: "needsClusterId" };

/**
 * A daemon key's value and the name to report it by: its flag's when the flag is given (the flag
 * wins), else the key's. A flag given as "" is unset, as a key is: the key is read then.
 */
function daemonValue(flags: DaemonFlagValues, shared: SharedConfig, key: DaemonKey): { value: unknown; name: string } {
  const flag = DAEMON_KEY_FLAGS[key];
  const fromFlag = flags[flag];
  if (typeof fromFlag === "string" && fromFlag !== "") return { value: fromFlag, name: `--${flag}` };
  return { value: shared.daemon[key], name: key };
}

/** A path or URL; a YAML number (a directory named 2024) is taken as written; "" is unset. */
function text(input: { value: unknown; name: string }, problems: string[]): string | undefined {
  const { value, name } = input;
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value === "string") return value;
  if (typeof value === "number") return String(value);
  problems.push(`${name}: expected a string, got ${JSON.stringify(value)}`);
  return undefined;
}

function splitListen(value: string, name: string, problems: string[]): { host: string; port: number } | undefined {
  const index = value.lastIndexOf(":");
  const port = Number(value.slice(index + 1));
  if (index < 0 || !Number.isInteger(port) || port < 0 || port > 65535) {
    problems.push(`${name}: "${value}" is not HOST:PORT`);
    return undefined;
  }
  return { host: value.slice(0, index) || "0.0.0.0", port };
}

function leaderElection(input: SettingsInput, shared: SharedConfig, problems: string[]): boolean {
  if (input.flags["no-leader-election"] === true) return false;
  const value = shared.daemon.leaderElection;
  if (value === undefined || value === null || value === "") return true;
  if (typeof value === "boolean") return value;
  if (value === "true" || value === "false") return value === "true";
  problems.push(`leaderElection: expected true or false, got ${JSON.stringify(value)}`);
  return true;
}

/** Where the daemon keeps its stacks and how they are encrypted. */
export interface BackendSettings {
  readonly stateDir: string;
  readonly backendUrl: string;
  readonly secretsProvider: string | undefined;
}

/**
 * The daemon's stateDir, backendUrl and secretsProvider, from its flags (`--state-dir`,
 * `--backend-url`, `--secrets-provider`) over the config file's keys: the daemon's, and those of
 * every command that reads its stacks (bin/options.ts), so all find the same backend. A problem
 * (a key that is no string) is added to `problems`, named as written.
 */
export function backendSettings(
  flags: DaemonFlagValues,
  shared: SharedConfig,
  env: Readonly<Record<string, string | undefined>>,
  problems: string[],
): BackendSettings {
  const stateDir = text(daemonValue(flags, shared, "stateDir"), problems) ?? DAEMON_DEFAULTS.stateDir;
  const backend = daemonValue(flags, shared, "backendUrl");
  const url = text(backend, problems);
  const backendUrl = resolveBackendUrl(
    backend.name === "backendUrl"
      ? { file: url, env: env.PULUMI_BACKEND_URL, stateDir }
      : { flag: url, env: env.PULUMI_BACKEND_URL, stateDir },
  );
  return { stateDir, backendUrl, secretsProvider: text(daemonValue(flags, shared, "secretsProvider"), problems) };
}

/** GCP keys (of a config file) with the GCP flags on top: a flag wins. Every subcommand reads them so. */
export function withConfigFlags(
  raw: RawConfig,
  flags: Readonly<Record<string, string | boolean | undefined>>,
): RawConfig {
  const merged: RawConfig = { ...raw };
  for (const key of CONFIG_KEYS) {
    const value = flags[key];
    if (typeof value === "string") merged[key] = value;
  }
  return merged;
}

/** The node controller's keys of the file with their flags on top. */
function nodeRaw(input: SettingsInput, shared: SharedConfig): Record<string, unknown> {
  const raw: Record<string, unknown> = { ...shared.node };
  for (const key of NODE_FLAG_NAMES) {
    const value = stringFlag(input.flags, key);
    if (value !== undefined) raw[key] = value;
  }
  const endpoint = stringFlag(input.flags, "compute-endpoint");
  if (endpoint !== undefined) raw.computeEndpoint = endpoint;
  return raw;
}

// Stands in for a clusterId the cluster has yet to supply (or lacks), so every other key is checked all the same.
const PENDING_CLUSTER_ID = "pending";

/** The one text of a clusterId found nowhere, for the daemon and every command that looks for it so. */
export const CLUSTER_ID_NOT_FOUND =
  "clusterId: in neither --clusterId, the config file nor the cluster's ConfigMap kube-system/ingress-uid";

/** Whether clusterId is to be read from the cluster: neither a flag nor the config file sets it ("" and null are unset). */
export function clusterIdUnset(raw: RawConfig): boolean {
  return raw.clusterId === undefined || raw.clusterId === null || raw.clusterId === "";
}

/**
 * parseConfig of the GCP keys (flags on top) with clusterId found where every command looks for it:
 * the flag or the config file (`raw`), else `fromCluster`, what ConfigMap kube-system/ingress-uid said
 * once asked. Not asked yet: `pending`, the other keys checked against a stand-in. Asked and found
 * nothing: CLUSTER_ID_NOT_FOUND after the other problems. Problems go to `problems`.
 */
export function collectClusterConfig(
  raw: RawConfig,
  fromCluster: { readonly clusterId: string | undefined } | undefined,
  problems: string[],
): { config: Config | undefined; pending: boolean } {
  if (!clusterIdUnset(raw)) return { config: collectModelConfig(raw, problems), pending: false };
  if (fromCluster?.clusterId !== undefined)
    return { config: collectModelConfig({ ...raw, clusterId: fromCluster.clusterId }, problems), pending: false };
  const config = collectModelConfig({ ...raw, clusterId: PENDING_CLUSTER_ID }, problems);
  if (fromCluster === undefined) return { config, pending: true };
  problems.push(CLUSTER_ID_NOT_FOUND);
  return { config: undefined, pending: false };
}

/**
 * Every setting of the daemon, or every problem: unknown keys, then the GCP keys, the daemon's
 * keys and the node controller's, in that order. `fromCluster` is what ConfigMap
 * kube-system/ingress-uid said, once asked (asked only when neither the file nor a flag sets clusterId).
 */
export function daemonSettings(
  input: SettingsInput,
  fromCluster?: { readonly clusterId: string | undefined },
): SettingsResult {
  const shared = splitConfig(input.file);
  const problems = [...shared.unknown];
  const { config, pending } = collectClusterConfig(withConfigFlags(shared.model, input.flags), fromCluster, problems);

  const { stateDir, backendUrl, secretsProvider } = backendSettings(input.flags, shared, input.env, problems);
  const listenSetting = daemonValue(input.flags, shared, "listen");
  const listen = splitListen(text(listenSetting, problems) ?? DAEMON_DEFAULTS.listen, listenSetting.name, problems);
  const parallelismSetting = daemonValue(input.flags, shared, "parallelism");
  const parallelism = wholeNumber(
    parallelismSetting.value,
    parallelismSetting.name,
    1,
    defaultParallelism(input.machine ?? thisMachine()),
    problems,
  );
  const driftSetting = daemonValue(input.flags, shared, "driftInterval");
  const driftMs = optionalDuration(driftSetting.value, driftSetting.name, DAEMON_DEFAULTS.driftMs, problems);
  const fullRefreshSetting = daemonValue(input.flags, shared, "fullRefreshInterval");
  const fullRefreshMs = optionalDuration(
    fullRefreshSetting.value,
    fullRefreshSetting.name,
    DAEMON_DEFAULTS.fullRefreshMs,
    problems,
  );
  const leader = leaderElection(input, shared, problems);
  const timeoutSetting = daemonValue(input.flags, shared, "operationTimeout");
  const operationTimeoutMs = optionalDuration(
    timeoutSetting.value,
    timeoutSetting.name,
    DAEMON_DEFAULTS.operationTimeoutMs,
    problems,
  );

  const nodes = parseNodeConfig(nodeRaw(input, shared), problems);

  if (problems.length > 0 || config === undefined || listen === undefined) return { kind: "invalid", problems };
  if (pending) return { kind: "needsClusterId" };
  return {
    kind: "ok",
    settings: {
      ...input.commandLine,
      config,
      nodes,
      stateDir,
      listen,
      parallelism,
      driftMs,
      fullRefreshMs,
      operationTimeoutMs,
      backendUrl,
      secretsProvider,
      leaderElection: leader,
    },
  };
}

/** daemonSettings, asking the cluster for clusterId only when needed and everything else is valid; throws ConfigError listing every problem. */
export async function resolveDaemonSettings(
  input: SettingsInput,
  readClusterId: () => Promise<string | undefined>,
): Promise<DaemonSettings> {
  let result = daemonSettings(input);
  if (result.kind === "needsClusterId") result = daemonSettings(input, { clusterId: await readClusterId() });
  if (result.kind === "ok") return result.settings;
  // needsClusterId cannot come back once the cluster was asked: clusterId is then set or missing.
  throw new ConfigError(result.kind === "invalid" ? [...result.problems] : [CLUSTER_ID_NOT_FOUND]);
}

/** Why stacks could not be encrypted, or undefined when they can. */
export function encryptionProblem(
  settings: Pick<DaemonSettings, "secretsProvider">,
  env: Readonly<Record<string, string | undefined>>,
): string | undefined {
  if (
    settings.secretsProvider !== undefined ||
    env.PULUMI_CONFIG_PASSPHRASE !== undefined ||
    env.PULUMI_CONFIG_PASSPHRASE_FILE !== undefined
  )
    return undefined;
  return "set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) or --secrets-provider (e.g. gcpkms://…) so stacks can be encrypted";
}

/** The Daemon's options: the settings, the tunables above, and what the caller built (cluster access, logger, identity). */
export function daemonOptions(
  settings: DaemonSettings,
  runtime: { readonly kubeConfig: KubeConfig; readonly logger: Logger; readonly identity: string },
): DaemonOptions {
  return {
    kubeConfig: runtime.kubeConfig,
    config: settings.config,
    logger: runtime.logger,
    stateDir: settings.stateDir,
    backendUrl: settings.backendUrl,
    secretsProvider: settings.secretsProvider,
    pulumiEnv: {},
    listenHost: settings.listen.host,
    listenPort: settings.listen.port,
    parallelism: settings.parallelism,
    driftMs: settings.driftMs,
    fullRefreshMs: settings.fullRefreshMs,
    operationTimeoutMs: settings.operationTimeoutMs,
    maxOrphanDestroys: DEFAULT_MAX_ORPHAN_DESTROYS,
    confirmOrphanDestroys: settings.confirmOrphanDestroys,
    driftJitter: DRIFT_JITTER,
    backoffBaseMs: STACK_BACKOFF_BASE_MS,
    backoffMaxMs: STACK_BACKOFF_MAX_MS,
    resyncMs: RESYNC_MS,
    debounceMs: DEBOUNCE_MS,
    leaderElection: settings.leaderElection,
    identity: runtime.identity,
    nodes: settings.nodeController ? settings.nodes : undefined,
    // Through the node controller's Compute endpoint, with or without the node controller.
    leakCheck: settings.nodes.computeEndpoint !== undefined ? { computeEndpoint: settings.nodes.computeEndpoint } : {},
    driftListing:
      settings.nodes.computeEndpoint !== undefined ? { computeEndpoint: settings.nodes.computeEndpoint } : {},
    firstUpGuard:
      settings.nodes.computeEndpoint !== undefined ? { computeEndpoint: settings.nodes.computeEndpoint } : {},
    negEndpoints:
      settings.nodes.computeEndpoint !== undefined ? { computeEndpoint: settings.nodes.computeEndpoint } : {},
    ...(settings.sharedProvider ? { sharedProvider: true } : {}),
    ...(settings.adopt
      ? {
          adopt: {
            allowReplace: settings.allowReplace,
            ...(settings.nodes.computeEndpoint !== undefined
              ? { computeEndpoint: settings.nodes.computeEndpoint }
              : {}),
          },
        }
      : {}),
  };
}
