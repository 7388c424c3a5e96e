/**
 * Every setting of `dccm daemon` in one table: its flag, the config-file key the flag overrides, how
 * its value is read, its default, its help line and which part of the daemon it configures. The flag
 * list and `--help` (bin/daemonCommand.ts), the key checks and defaults (daemon/config.ts) and
 * docs/reference/configuration.md (bin/referenceDocs.ts) are all made from it, so a setting added here
 * is added everywhere. The GCP picture's keys are the model's (model/config.ts CONFIG_KEYS, their help
 * in bin/daemonCommand.ts GCP_FLAG_HELP).
 */
import { DEFAULT_COMPUTE_ENDPOINT } from "../gce";
import { formatDuration } from "../runtime/durations";
import { NODE_CONFIG_DEFAULTS, type NodeConfigKey } from "../controllers/node/config";
import type { DaemonOptions } from "./options";

/** pino's levels. */
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Above this many stacks with an absent Service at once, destroys wait for an operator (--confirm-orphan-destroys). */
export const DEFAULT_MAX_ORPHAN_DESTROYS = 5;

/** `--backend-url`'s default, the daemon's help and that of every command reading its stacks. */
export const BACKEND_URL_DEFAULT = "(default $PULUMI_BACKEND_URL, else file://<state-dir>/backend)";
/** `--compute-endpoint`'s default, the daemon's help and that of every command reading its stacks. */
export const COMPUTE_ENDPOINT_DEFAULT = `(default ${DEFAULT_COMPUTE_ENDPOINT}, credentials from ADC)`;

/** How a setting's text or YAML value is read, as the reference names it. */
export const SETTING_TYPES = {
  file: "path of a file",
  dir: "path of a directory",
  url: "URL",
  hostPort: "HOST:PORT",
  count: "whole number",
  duration: "duration (500ms, 30s, 10m, 1h)",
  switch: "switch (no value)",
  name: "text",
  logLevel: LOG_LEVELS.join(" | "),
  zones: "list of zones (comma-separated or a YAML list)",
} as const;
export type SettingType = keyof typeof SETTING_TYPES;

/** The part of the daemon a setting configures. */
export type SettingComponent = "process" | "stack runs" | "drift" | "leader election" | "adoption" | "node controller";

export interface DaemonSetting {
  /** The flag, without its dashes. */
  readonly flag: string;
  /** The config-file key the flag overrides; none when only the flag sets it. A switch's key is its opposite (`--no-leader-election` is `leaderElection: false`). */
  readonly key?: string;
  /** Placeholder of the flag's value in `--help`; none for a switch. */
  readonly value?: string;
  readonly type: SettingType;
  /** The default as the daemon holds it (milliseconds for a duration); none when it is worked out (help says how). */
  readonly default?: string | number;
  readonly unit?: "ms";
  /** The `--help` line's text after the flag. */
  readonly help: string;
  readonly component: SettingComponent;
  /** The DaemonOptions fields it ends up in; none for what bin/daemonCommand.ts uses itself. */
  readonly options: readonly (keyof DaemonOptions)[];
}

const STATE_DIR = "/var/lib/dccm";
const LISTEN = "0.0.0.0:10258";
const DRIFT_MS = 10 * 60_000;
/** Drift found by listing is acted on every drift interval; a whole refresh, that also reads what listing cannot, once a day. */
const FULL_REFRESH_MS = 24 * 3_600_000;
const OPERATION_TIMEOUT_MS = 20 * 60_000;
const SHUTDOWN_TIMEOUT_MS = 30_000;
const LOG_LEVEL = "info";
const CONFIRM_ORPHAN_DESTROYS = 0;

/** The daemon's settings, in the order of `dccm daemon --help`: the daemon's own, then the node controller's. */
export const DAEMON_SETTINGS = [
  {
    flag: "kubeconfig",
    value: "FILE",
    type: "file",
    help: "the cluster (default: $KUBECONFIG, else ~/.kube/config, else the in-cluster service account)",
    component: "process",
    options: ["kubeConfig"],
  },
  {
    flag: "config",
    value: "FILE",
    type: "file",
    help: "YAML or JSON file of the keys below (one file serves every dccm command)",
    component: "process",
    options: ["config", "nodes"],
  },
  {
    flag: "state-dir",
    key: "stateDir",
    value: "DIR",
    type: "dir",
    default: STATE_DIR,
    help: `stack workspaces and the default backend, mode 0700 (default ${STATE_DIR})`,
    component: "stack runs",
    options: ["stateDir", "backendUrl"],
  },
  {
    flag: "listen",
    key: "listen",
    value: "HOST:PORT",
    type: "hostPort",
    default: LISTEN,
    help: `/healthz, /readyz, /metrics and /status, GET and HEAD only (default ${LISTEN})`,
    component: "process",
    options: ["listenHost", "listenPort"],
  },
  {
    flag: "parallelism",
    key: "parallelism",
    value: "N",
    type: "count",
    help: "stacks run at once (default: one per core, at most one per 512 MiB of memory beyond 256 MiB)",
    component: "stack runs",
    options: ["parallelism"],
  },
  {
    flag: "drift-interval",
    key: "driftInterval",
    value: "DURATION",
    type: "duration",
    default: DRIFT_MS,
    unit: "ms",
    help: `list GCE this often and up --refresh the stacks that drifted, ±10 % (default ${formatDuration(DRIFT_MS)})`,
    component: "drift",
    options: ["driftMs"],
  },
  {
    flag: "full-refresh-interval",
    key: "fullRefreshInterval",
    value: "DURATION",
    type: "duration",
    default: FULL_REFRESH_MS,
    unit: "ms",
    help: `up --refresh of every stack, spread over this period, at most half the workers at once (default ${formatDuration(FULL_REFRESH_MS)})`,
    component: "drift",
    options: ["fullRefreshMs"],
  },
  {
    flag: "backend-url",
    key: "backendUrl",
    value: "URL",
    type: "url",
    help: `Pulumi backend ${BACKEND_URL_DEFAULT}`,
    component: "stack runs",
    options: ["backendUrl"],
  },
  {
    flag: "secrets-provider",
    key: "secretsProvider",
    value: "URL",
    type: "url",
    help: "stack encryption, e.g. gcpkms://… (default: the passphrase in $PULUMI_CONFIG_PASSPHRASE or $PULUMI_CONFIG_PASSPHRASE_FILE)",
    component: "stack runs",
    options: ["secretsProvider"],
  },
  {
    flag: "compute-endpoint",
    key: "computeEndpoint",
    value: "URL",
    type: "url",
    help: `Compute API of the node controller and the leak check ${COMPUTE_ENDPOINT_DEFAULT}`,
    component: "node controller",
    options: ["nodes", "leakCheck", "driftListing", "firstUpGuard", "adopt"],
  },
  {
    flag: "operation-timeout",
    key: "operationTimeout",
    value: "DURATION",
    type: "duration",
    default: OPERATION_TIMEOUT_MS,
    unit: "ms",
    help: `a pulumi run (up, refresh, destroy) still going after this is cancelled and retried (default ${formatDuration(OPERATION_TIMEOUT_MS)})`,
    component: "stack runs",
    options: ["operationTimeoutMs"],
  },
  {
    flag: "shutdown-timeout",
    value: "DURATION",
    type: "duration",
    default: SHUTDOWN_TIMEOUT_MS,
    unit: "ms",
    help: `on SIGTERM, exit 1 if stopping takes longer than this (default ${formatDuration(SHUTDOWN_TIMEOUT_MS)})`,
    component: "process",
    options: [],
  },
  {
    flag: "confirm-orphan-destroys",
    value: "N",
    type: "count",
    default: CONFIRM_ORPHAN_DESTROYS,
    help: `allow up to N held destroys of stacks whose Service is absent (held when more than ${DEFAULT_MAX_ORPHAN_DESTROYS}, or more than half, at once; default ${CONFIRM_ORPHAN_DESTROYS})`,
    component: "stack runs",
    options: ["confirmOrphanDestroys"],
  },
  {
    flag: "adopt",
    type: "switch",
    help: "at start-up, adopt the stock GCE CCM's load balancers and routes into dccm's stacks, keeping every IP (dccm adopt --help)",
    component: "adoption",
    options: ["adopt"],
  },
  {
    flag: "allow-replace",
    type: "switch",
    help: "with --adopt: adopt stacks even where the first up would replace a resource",
    component: "adoption",
    options: ["adopt"],
  },
  {
    flag: "no-leader-election",
    key: "leaderElection",
    type: "switch",
    help: "no Lease kube-system/dccm: run a single replica only",
    component: "leader election",
    options: ["leaderElection"],
  },
  {
    flag: "no-node-controller",
    type: "switch",
    help: "run the service controller only (Node initialization, addresses and lifecycle are left to another controller)",
    component: "node controller",
    options: ["nodes"],
  },
  {
    flag: "shared-provider",
    type: "switch",
    help: "start the gcp provider plugin once and attach every pulumi run to it, restarted when it exits (default: one plugin per run; see the README before using it with Google's plugin)",
    component: "stack runs",
    options: ["sharedProvider"],
  },
  {
    flag: "identity",
    value: "NAME",
    type: "name",
    help: "holder identity in the Lease (default <hostname>_<pid>)",
    component: "leader election",
    options: ["identity"],
  },
  {
    flag: "log-level",
    value: "LEVEL",
    type: "logLevel",
    default: LOG_LEVEL,
    help: `${LOG_LEVELS.slice(0, -1).join(", ")} or ${LOG_LEVELS[LOG_LEVELS.length - 1]} (default ${LOG_LEVEL})`,
    component: "process",
    options: ["logger"],
  },
  {
    flag: "nodeAddressRefreshPeriod",
    key: "nodeAddressRefreshPeriod",
    value: "DURATION",
    type: "duration",
    default: NODE_CONFIG_DEFAULTS.addressRefreshMs,
    unit: "ms",
    help: `Node addresses are refreshed this often (default ${formatDuration(NODE_CONFIG_DEFAULTS.addressRefreshMs)})`,
    component: "node controller",
    options: ["nodes"],
  },
  {
    flag: "nodeLifecyclePeriod",
    key: "nodeLifecyclePeriod",
    value: "DURATION",
    type: "duration",
    default: NODE_CONFIG_DEFAULTS.lifecycleCheckMs,
    unit: "ms",
    help: `NotReady Nodes are checked this often (default ${formatDuration(NODE_CONFIG_DEFAULTS.lifecycleCheckMs)})`,
    component: "node controller",
    options: ["nodes"],
  },
  {
    flag: "nodeWorkers",
    key: "nodeWorkers",
    value: "N",
    type: "count",
    default: NODE_CONFIG_DEFAULTS.workers,
    help: `Nodes reconciled at once, 1 to 100 (default ${NODE_CONFIG_DEFAULTS.workers})`,
    component: "node controller",
    options: ["nodes"],
  },
  {
    flag: "nodeZones",
    key: "nodeZones",
    value: "ZONE,…",
    type: "zones",
    help: "zones searched for Nodes without spec.providerID (default: the region's zones)",
    component: "node controller",
    options: ["nodes"],
  },
] as const satisfies readonly DaemonSetting[];

type Row = (typeof DAEMON_SETTINGS)[number];
/** The node controller's rows whose flag is its key's name (computeEndpoint's flag is the daemon's --compute-endpoint). */
type NodeRow = Extract<Row, { readonly flag: `node${string}` }>;
type DaemonRow = Exclude<Row, NodeRow>;

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Holds<T extends true> = T;
/** Compile-time: the node rows are the node controller's keys, computeEndpoint (the daemon's --compute-endpoint) aside. */
export type NodeRowsAreNodeKeys = Holds<Same<NodeRow["flag"], Exclude<NodeConfigKey, "computeEndpoint">>>;

export type DaemonFlagName = DaemonRow["flag"];
export type NodeFlagName = NodeRow["flag"];
/** Keys of the config file that configure the daemon rather than the GCP picture or the node controller. */
export type DaemonKey = Exclude<Extract<DaemonRow, { readonly key: string }>["key"], "computeEndpoint">;

function isNodeRow(row: Row): row is NodeRow {
  return row.flag.startsWith("node");
}

function isDaemonKeyRow(row: Row): row is Extract<DaemonRow, { readonly key: DaemonKey }> {
  return !isNodeRow(row) && "key" in row && row.key !== "computeEndpoint";
}

/** The daemon's own rows, then the node controller's: the two lists of `--help`. */
export const DAEMON_FLAG_ROWS: readonly Extract<Row, { readonly flag: DaemonFlagName }>[] = DAEMON_SETTINGS.filter(
  (row): row is DaemonRow => !isNodeRow(row),
);
export const NODE_FLAG_ROWS: readonly NodeRow[] = DAEMON_SETTINGS.filter(isNodeRow);

export const DAEMON_FLAG_NAMES: readonly DaemonFlagName[] = DAEMON_FLAG_ROWS.map((row) => row.flag);
export const NODE_FLAG_NAMES: readonly NodeFlagName[] = NODE_FLAG_ROWS.map((row) => row.flag);
export const DAEMON_KEYS: readonly DaemonKey[] = DAEMON_SETTINGS.filter(isDaemonKeyRow).map((row) => row.key);

/** The flag of each daemon key; the flag wins. `--no-leader-election` is `leaderElection: false`. */
export const DAEMON_KEY_FLAGS = Object.fromEntries(
  DAEMON_SETTINGS.filter(isDaemonKeyRow).map((row) => [row.key, row.flag]),
) as { readonly [key in DaemonKey]: Extract<Row, { readonly key: key }>["flag"] };

/** The config key a daemon flag overrides, if any (for the help text). */
export function configKeyOfFlag(flag: DaemonFlagName): string | undefined {
  const row: DaemonSetting | undefined = DAEMON_FLAG_ROWS.find((candidate) => candidate.flag === flag);
  return row?.key;
}

/** The defaults the daemon falls back on, by the setting they are the default of. */
export const DAEMON_DEFAULTS = {
  stateDir: STATE_DIR,
  listen: LISTEN,
  driftMs: DRIFT_MS,
  fullRefreshMs: FULL_REFRESH_MS,
  operationTimeoutMs: OPERATION_TIMEOUT_MS,
  shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS,
  confirmOrphanDestroys: CONFIRM_ORPHAN_DESTROYS,
  logLevel: LOG_LEVEL,
} as const satisfies Record<string, string | number>;
