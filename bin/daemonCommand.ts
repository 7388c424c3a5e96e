/** `dccm daemon --kubeconfig FILE --config FILE`: the main job. */
import { parseArgs } from "node:util";
import pino from "pino";
import { Daemon, DEFAULT_MAX_ORPHAN_DESTROYS, defaultIdentity } from "../daemon/daemon";
import { CONFIG_KEYS, ConfigError, DEFAULT_LOAD_BALANCER_CLASS, type ConfigKey } from "../model";
import { NODE_CONFIG_KEYS, parseNodeConfig } from "../nodes";
import { DEFAULT_COMPUTE_ENDPOINT } from "../nodes/compute";
import { NODE_CONFIG_DEFAULTS } from "../nodes/config";
import { loadKubeConfig, readClusterId } from "../watcher/list";
import * as k8s from "@kubernetes/client-node";
import { configFromFlags, parseFlags, parseModelConfig, splitConfig, UsageError, type DaemonKey } from "./options";

export { DAEMON_KEYS } from "./options";

export function parseDuration(text: string, flag: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text.trim());
  if (!match) throw new UsageError(`${flag}: "${text}" is not a duration like 30s, 10m or 1h`);
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] as "ms" | "s" | "m" | "h"];
  return Math.round(Number(match[1]) * factor);
}

/** The shortest exact spelling parseDuration reads back: 300000 → "5m". */
export function formatDuration(ms: number): string {
  for (const [unit, factor] of [["h", 3_600_000], ["m", 60_000], ["s", 1000]] as const) {
    if (ms >= factor && ms % factor === 0) return `${ms / factor}${unit}`;
  }
  return `${ms}ms`;
}

function splitListen(text: string): { host: string; port: number } {
  const index = text.lastIndexOf(":");
  const port = Number(text.slice(index + 1));
  if (index < 0 || !Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--listen: "${text}" is not HOST:PORT`);
  return { host: text.slice(0, index) || "0.0.0.0", port };
}

export const DAEMON_DEFAULTS = { stateDir: "/var/lib/dccm", listen: "0.0.0.0:10258", parallelism: "4", driftInterval: "10m", operationTimeout: "20m", shutdownTimeout: "30s", logLevel: "info" } as const;
export const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;

interface DaemonFlag {
  /** Without the leading dashes. */
  readonly name: string;
  /** Placeholder of the value; none for a switch. */
  readonly value?: string;
  /** The config file key the flag overrides, when it is not spelled like the flag. */
  readonly key?: string;
  readonly help: string;
}

/** Flags of the daemon itself. parseArgs and the help text are both made from these lists, so they cannot differ. */
export const DAEMON_FLAGS: readonly DaemonFlag[] = [
  { name: "kubeconfig", value: "FILE", help: "the cluster (default: $KUBECONFIG, else ~/.kube/config, else the in-cluster service account)" },
  { name: "config", value: "FILE", help: "YAML or JSON file of the keys below (one file serves every dccm command)" },
  { name: "state-dir", value: "DIR", key: "stateDir", help: `stack workspaces and the default backend, mode 0700 (default ${DAEMON_DEFAULTS.stateDir})` },
  { name: "listen", value: "HOST:PORT", key: "listen", help: `/healthz, /readyz and /metrics, GET and HEAD only (default ${DAEMON_DEFAULTS.listen})` },
  { name: "parallelism", value: "N", key: "parallelism", help: `stacks run at once (default ${DAEMON_DEFAULTS.parallelism})` },
  { name: "drift-interval", value: "DURATION", key: "driftInterval", help: `up --refresh of every stack this often, ±10 % (default ${DAEMON_DEFAULTS.driftInterval})` },
  { name: "backend-url", value: "URL", key: "backendUrl", help: "Pulumi backend (default $PULUMI_BACKEND_URL, else file://<state-dir>/backend)" },
  {
    name: "secrets-provider",
    value: "URL",
    key: "secretsProvider",
    help: "stack encryption, e.g. gcpkms://… (default: the passphrase in $PULUMI_CONFIG_PASSPHRASE or $PULUMI_CONFIG_PASSPHRASE_FILE)",
  },
  { name: "compute-endpoint", value: "URL", key: "computeEndpoint", help: `Compute API of the node controller and the leak check (default ${DEFAULT_COMPUTE_ENDPOINT}, credentials from ADC)` },
  { name: "operation-timeout", value: "DURATION", key: "operationTimeout", help: `a pulumi run (up, refresh, destroy) still going after this is cancelled and retried (default ${DAEMON_DEFAULTS.operationTimeout})` },
  { name: "shutdown-timeout", value: "DURATION", help: `on SIGTERM, exit 1 if stopping takes longer than this (default ${DAEMON_DEFAULTS.shutdownTimeout})` },
  {
    name: "confirm-orphan-destroys",
    value: "N",
    help: `allow up to N held destroys of stacks whose Service is absent (held when more than ${DEFAULT_MAX_ORPHAN_DESTROYS}, or more than half, at once; default 0)`,
  },
  { name: "no-leader-election", key: "leaderElection: false", help: "no Lease kube-system/dccm: run a single replica only" },
  { name: "no-node-controller", help: "run the service controller only (Node initialization, addresses and lifecycle are left to another controller)" },
  { name: "identity", value: "NAME", help: "holder identity in the Lease (default <hostname>_<pid>)" },
  { name: "log-level", value: "LEVEL", help: `${LOG_LEVELS.slice(0, -1).join(", ")} or ${LOG_LEVELS[LOG_LEVELS.length - 1]} (default ${DAEMON_DEFAULTS.logLevel})` },
];

/** The node controller's keys other than computeEndpoint (a daemon flag above), as flags of the same names. */
export const NODE_FLAGS: readonly DaemonFlag[] = [
  { name: "nodeAddressRefreshPeriod", value: "DURATION", help: `Node addresses are refreshed this often (default ${formatDuration(NODE_CONFIG_DEFAULTS.addressRefreshMs)})` },
  { name: "nodeLifecyclePeriod", value: "DURATION", help: `NotReady Nodes are checked this often (default ${formatDuration(NODE_CONFIG_DEFAULTS.lifecycleCheckMs)})` },
  { name: "nodeWorkers", value: "N", help: `Nodes reconciled at once, 1 to 100 (default ${NODE_CONFIG_DEFAULTS.workers})` },
  { name: "nodeZones", value: "ZONE,…", help: "zones searched for Nodes without spec.providerID (default: the region's zones)" },
];

const GCP_FLAG_HELP: Record<ConfigKey, Omit<DaemonFlag, "name" | "key">> = {
  project: { value: "ID", help: "GCP project of every resource (required)" },
  region: { value: "REGION", help: "region of the load balancers (required)" },
  network: { value: "NAME", help: "VPC network of the nodes (required)" },
  subnetwork: { value: "NAME", help: "default subnetwork of internal load balancers" },
  nodeTags: { value: "TAG,…", help: "network tags of the nodes: the target of every firewall (required)" },
  clusterName: { value: "NAME", help: "routes are named <clusterName cut to 26>-<node UID> (required)" },
  clusterId: { value: "ID", help: "names the instance groups and the node health check (required unless ConfigMap kube-system/ingress-uid has it)" },
  clusterCIDR: { value: "CIDR", help: "pod range: a node podCIDR outside it gets no route" },
  backendMode: { value: "MODE", help: "backend-service or target-pool, for external load balancers (default backend-service)" },
  configureRoutes: { value: "BOOL", help: "one route per node podCIDR (default true)" },
  loadBalancerClasses: { value: "CLASS,…", help: `loadBalancerClass values handled besides none (default ${DEFAULT_LOAD_BALANCER_CLASS})` },
};

/** The GCP picture's keys (the same for dccm desired and dccm render), as flags of the same names. */
export const GCP_FLAGS: readonly DaemonFlag[] = CONFIG_KEYS.map((key) => ({ name: key, ...GCP_FLAG_HELP[key] }));

const FLAG_COLUMN = 39;

function helpLine(flag: DaemonFlag): string {
  const left = `  --${flag.name}${flag.value !== undefined ? ` ${flag.value}` : ""}`;
  return `${left.padEnd(FLAG_COLUMN)}${flag.key !== undefined ? `[${flag.key}] ` : ""}${flag.help}`;
}

export const DAEMON_HELP = [
  "usage: dccm daemon [--kubeconfig FILE] [--config FILE] [FLAG ...]",
  "runs the service controller and the node controller. Durations: 500ms, 30s, 10m, 1h.",
  "daemon flags (a flag wins over the config file key in brackets):",
  ...DAEMON_FLAGS.map(helpLine),
  `${"  -h, --help".padEnd(FLAG_COLUMN)}print this help`,
  "node controller flags (each wins over the config file key of the same name):",
  ...NODE_FLAGS.map(helpLine),
  "GCP flags (each wins over the config file key of the same name; dccm desired and dccm render read them too):",
  ...GCP_FLAGS.map(helpLine),
].join("\n");

function daemonFlagOptions(): Record<string, { type: "string" | "boolean"; short?: string }> {
  const options: Record<string, { type: "string" | "boolean"; short?: string }> = { help: { type: "boolean", short: "h" } };
  for (const flag of [...DAEMON_FLAGS, ...NODE_FLAGS, ...GCP_FLAGS]) options[flag.name] = { type: flag.value !== undefined ? "string" : "boolean" };
  return options;
}

export async function runDaemon(argv: string[]): Promise<number> {
  const { values } = parseFlags(() => parseArgs({ args: argv, options: daemonFlagOptions(), strict: true, allowPositionals: false }));
  if (values.help === true) {
    process.stdout.write(`${DAEMON_HELP}\n`);
    return 0;
  }
  // Before anything is written: state, backend and the pulumi CLI's files (it inherits the umask) stay the owner's.
  process.umask(0o077);
  const flag = (name: string): string | undefined => {
    const value = values[name];
    return typeof value === "string" ? value : undefined;
  };
  const logLevel = flag("log-level") ?? DAEMON_DEFAULTS.logLevel;
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) throw new UsageError(`--log-level: "${logLevel}" is not one of ${LOG_LEVELS.join(", ")}`);
  const logger = pino({
    level: logLevel,
    base: { component: "dccm" },
    redact: { paths: ["*.passphrase", "*.PULUMI_CONFIG_PASSPHRASE", "*.env", "*.token"], censor: "[redacted]" },
  });
  const shared = splitConfig(configFromFlags(values, flag("config")));
  const raw = shared.model;
  const daemonSettings = shared.daemon;
  const nodeSettings: Record<string, unknown> = { ...shared.node };
  for (const key of NODE_CONFIG_KEYS) {
    const fromFlag = flag(key === "computeEndpoint" ? "compute-endpoint" : key);
    if (fromFlag !== undefined) nodeSettings[key] = fromFlag;
  }
  const nodeProblems: string[] = [];
  const nodes = parseNodeConfig(nodeSettings, nodeProblems);
  if (nodeProblems.length > 0) throw new ConfigError(nodeProblems);
  const setting = (name: string, key: DaemonKey): string | undefined => {
    const fromFlag = flag(name);
    if (fromFlag !== undefined) return fromFlag;
    const fromFile = daemonSettings[key];
    return fromFile === undefined || fromFile === null ? undefined : String(fromFile);
  };
  const kubeConfig = loadKubeConfig(flag("kubeconfig"));
  if (raw.clusterId === undefined) {
    const clusterId = await readClusterId(kubeConfig.makeApiClient(k8s.CoreV1Api));
    if (clusterId !== undefined) raw.clusterId = clusterId;
  }
  const config = parseModelConfig(shared);
  const secretsProvider = setting("secrets-provider", "secretsProvider");
  if (secretsProvider === undefined && process.env.PULUMI_CONFIG_PASSPHRASE === undefined && process.env.PULUMI_CONFIG_PASSPHRASE_FILE === undefined) {
    throw new UsageError("set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) or --secrets-provider (e.g. gcpkms://…) so stacks can be encrypted");
  }
  const listen = splitListen(setting("listen", "listen") ?? DAEMON_DEFAULTS.listen);
  const parallelism = Number(setting("parallelism", "parallelism") ?? DAEMON_DEFAULTS.parallelism);
  if (!Number.isInteger(parallelism) || parallelism < 1) throw new UsageError(`--parallelism: expected a whole number ≥ 1`);
  const leaderElection = values["no-leader-election"] !== true && daemonSettings.leaderElection !== false;
  const backendUrl = setting("backend-url", "backendUrl") ?? process.env.PULUMI_BACKEND_URL;
  const confirmOrphanDestroys = Number(flag("confirm-orphan-destroys") ?? "0");
  if (!Number.isInteger(confirmOrphanDestroys) || confirmOrphanDestroys < 0) throw new UsageError(`--confirm-orphan-destroys: expected a whole number ≥ 0`);

  const daemon = new Daemon({
    kubeConfig,
    config,
    logger,
    stateDir: setting("state-dir", "stateDir") ?? DAEMON_DEFAULTS.stateDir,
    ...(backendUrl !== undefined ? { backendUrl } : {}),
    ...(secretsProvider !== undefined ? { secretsProvider } : {}),
    pulumiEnv: {},
    listenHost: listen.host,
    listenPort: listen.port,
    parallelism,
    driftMs: parseDuration(setting("drift-interval", "driftInterval") ?? DAEMON_DEFAULTS.driftInterval, "--drift-interval"),
    operationTimeoutMs: parseDuration(setting("operation-timeout", "operationTimeout") ?? DAEMON_DEFAULTS.operationTimeout, "--operation-timeout"),
    maxOrphanDestroys: DEFAULT_MAX_ORPHAN_DESTROYS,
    confirmOrphanDestroys,
    driftJitter: 0.1,
    backoffBaseMs: 5000,
    backoffMaxMs: 300_000,
    resyncMs: 10 * 60_000,
    debounceMs: 50,
    leaderElection,
    identity: flag("identity") ?? defaultIdentity(),
    ...(values["no-node-controller"] === true ? {} : { nodes }),
    // Through the node controller's Compute endpoint, with or without the node controller.
    leakCheck: nodes.computeEndpoint !== undefined ? { computeEndpoint: nodes.computeEndpoint } : {},
  });
  // Checked before start, so a bad value is a usage error rather than a surprise at SIGTERM.
  const shutdownTimeoutMs = parseDuration(flag("shutdown-timeout") ?? DAEMON_DEFAULTS.shutdownTimeout, "--shutdown-timeout");
  let lost = false;
  const stopped = new Promise<void>((resolve) => {
    let stopping = false;
    const shutdown = (signal: string): void => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal, shutdownTimeoutMs }, "stopping");
      // A hard bound on the whole shutdown, including anything that would keep the process alive
      // after stop() (a connection, a timer): past it we exit anyway and say so. Unref'd, so a
      // clean shutdown exits at once.
      setTimeout(() => {
        logger.error({ signal, shutdownTimeoutMs }, "shutdown did not finish within the deadline; exiting");
        process.exit(1);
      }, shutdownTimeoutMs).unref();
      daemon.stop().then(resolve, (error: unknown) => {
        logger.error({ err: error }, "stop failed");
        resolve();
      });
    };
    // `on`, not `once`: execa's signal-exit re-raises a signal once it is the only listener left.
    process.on("SIGTERM", () => shutdown("SIGTERM"));
    process.on("SIGINT", () => shutdown("SIGINT"));
    daemon
      .start(() => {
        lost = true;
        shutdown("lost leadership");
      })
      .catch((error: unknown) => {
        logger.error({ err: error }, "daemon failed to start");
        lost = true;
        shutdown("start failure");
      });
  });
  await stopped;
  logger.info("stopped");
  return lost ? 1 : 0;
}
