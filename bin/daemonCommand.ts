/** `dccm daemon --kubeconfig FILE --config FILE`: the main job. */
import { parseArgs } from "node:util";
import pino from "pino";
import { Daemon, defaultIdentity } from "../daemon/daemon";
import { ConfigError, parseConfig, type RawConfig } from "../model";
import { NODE_CONFIG_KEYS, parseNodeConfig } from "../nodes";
import { loadKubeConfig, readClusterId } from "../watcher/list";
import * as k8s from "@kubernetes/client-node";
import { CONFIG_FLAG_OPTIONS, configFromFlags, parseFlags, UsageError } from "./options";

/** Keys of the config file that configure the daemon rather than the GCP picture. */
export const DAEMON_KEYS = ["stateDir", "listen", "parallelism", "driftInterval", "backendUrl", "secretsProvider", "leaderElection"] as const;
type DaemonKey = (typeof DAEMON_KEYS)[number];

export function parseDuration(text: string, flag: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text.trim());
  if (!match) throw new UsageError(`${flag}: "${text}" is not a duration like 30s, 10m or 1h`);
  const factor = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] as "ms" | "s" | "m" | "h"];
  return Math.round(Number(match[1]) * factor);
}

function splitListen(text: string): { host: string; port: number } {
  const index = text.lastIndexOf(":");
  const port = Number(text.slice(index + 1));
  if (index < 0 || !Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`--listen: "${text}" is not HOST:PORT`);
  return { host: text.slice(0, index) || "0.0.0.0", port };
}

export async function runDaemon(argv: string[]): Promise<number> {
  const { values } = parseFlags(() => parseArgs({
    args: argv,
    options: {
      kubeconfig: { type: "string" },
      config: { type: "string" },
      "state-dir": { type: "string" },
      listen: { type: "string" },
      parallelism: { type: "string" },
      "drift-interval": { type: "string" },
      "backend-url": { type: "string" },
      "secrets-provider": { type: "string" },
      "compute-endpoint": { type: "string" },
      "no-leader-election": { type: "boolean" },
      "no-node-controller": { type: "boolean" },
      identity: { type: "string" },
      "log-level": { type: "string" },
      "shutdown-timeout": { type: "string" },
      ...CONFIG_FLAG_OPTIONS,
      ...Object.fromEntries(NODE_CONFIG_KEYS.filter((key) => key !== "computeEndpoint").map((key) => [key, { type: "string" as const }])),
    },
    strict: true,
    allowPositionals: false,
  }));
  const logger = pino({
    level: typeof values["log-level"] === "string" ? values["log-level"] : "info",
    base: { component: "dccm" },
    redact: { paths: ["*.passphrase", "*.PULUMI_CONFIG_PASSPHRASE", "*.env", "*.token"], censor: "[redacted]" },
  });
  const raw = configFromFlags(values, typeof values.config === "string" ? values.config : undefined) as RawConfig & Partial<Record<DaemonKey, unknown>>;
  const daemonSettings: Partial<Record<DaemonKey, unknown>> = {};
  const nodeSettings: Record<string, unknown> = {};
  const rawRecord = raw as Record<string, unknown>;
  for (const key of NODE_CONFIG_KEYS) {
    if (key in rawRecord) nodeSettings[key] = rawRecord[key];
  }
  for (const key of [...DAEMON_KEYS, ...NODE_CONFIG_KEYS]) {
    if (key in rawRecord) {
      if ((DAEMON_KEYS as readonly string[]).includes(key)) daemonSettings[key as DaemonKey] = rawRecord[key];
      delete rawRecord[key];
    }
  }
  for (const key of NODE_CONFIG_KEYS) {
    const fromFlag = (values as Record<string, unknown>)[key];
    if (typeof fromFlag === "string") nodeSettings[key] = fromFlag;
  }
  if (typeof values["compute-endpoint"] === "string") nodeSettings.computeEndpoint = values["compute-endpoint"];
  const nodeProblems: string[] = [];
  const nodes = parseNodeConfig(nodeSettings, nodeProblems);
  if (nodeProblems.length > 0) throw new ConfigError(nodeProblems);
  const setting = (flag: string, key: DaemonKey): string | undefined => {
    const fromFlag = values[flag as keyof typeof values];
    if (typeof fromFlag === "string") return fromFlag;
    const fromFile = daemonSettings[key];
    return fromFile === undefined || fromFile === null ? undefined : String(fromFile);
  };
  const kubeConfig = loadKubeConfig(typeof values.kubeconfig === "string" ? values.kubeconfig : undefined);
  if (raw.clusterId === undefined) {
    const clusterId = await readClusterId(kubeConfig.makeApiClient(k8s.CoreV1Api));
    if (clusterId !== undefined) raw.clusterId = clusterId;
  }
  const config = parseConfig(raw);
  const secretsProvider = setting("secrets-provider", "secretsProvider");
  if (secretsProvider === undefined && process.env.PULUMI_CONFIG_PASSPHRASE === undefined && process.env.PULUMI_CONFIG_PASSPHRASE_FILE === undefined) {
    throw new UsageError("set PULUMI_CONFIG_PASSPHRASE (or PULUMI_CONFIG_PASSPHRASE_FILE) or --secrets-provider (e.g. gcpkms://…) so stacks can be encrypted");
  }
  const listen = splitListen(setting("listen", "listen") ?? "0.0.0.0:10258");
  const parallelism = Number(setting("parallelism", "parallelism") ?? "4");
  if (!Number.isInteger(parallelism) || parallelism < 1) throw new UsageError(`--parallelism: expected a whole number ≥ 1`);
  const leaderElection = values["no-leader-election"] !== true && daemonSettings.leaderElection !== false;
  const backendUrl = setting("backend-url", "backendUrl") ?? process.env.PULUMI_BACKEND_URL;

  const daemon = new Daemon({
    kubeConfig,
    config,
    logger,
    stateDir: setting("state-dir", "stateDir") ?? "/var/lib/dccm",
    ...(backendUrl !== undefined ? { backendUrl } : {}),
    ...(secretsProvider !== undefined ? { secretsProvider } : {}),
    pulumiEnv: {},
    listenHost: listen.host,
    listenPort: listen.port,
    parallelism,
    driftMs: parseDuration(setting("drift-interval", "driftInterval") ?? "10m", "--drift-interval"),
    driftJitter: 0.1,
    backoffBaseMs: 5000,
    backoffMaxMs: 300_000,
    resyncMs: 10 * 60_000,
    debounceMs: 50,
    leaderElection,
    identity: typeof values.identity === "string" ? values.identity : defaultIdentity(),
    ...(values["no-node-controller"] === true ? {} : { nodes }),
  });
  // Checked before start, so a bad value is a usage error rather than a surprise at SIGTERM.
  const shutdownTimeoutMs = parseDuration(typeof values["shutdown-timeout"] === "string" ? values["shutdown-timeout"] : "30s", "--shutdown-timeout");
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
