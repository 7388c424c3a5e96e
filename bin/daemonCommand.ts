/** `dccm daemon --kubeconfig FILE --config FILE`: flags → settings (daemon/config.ts) → Daemon → signals. */
import * as k8s from "@kubernetes/client-node";
import pino, { type Logger } from "pino";
import { Daemon, defaultIdentity } from "../daemon/daemon";
import { DaemonMetrics } from "../daemon/metrics";
import { configKeyOfFlag, DAEMON_FLAG_ROWS, NODE_FLAG_ROWS } from "../daemon/settings";
import {
  daemonOptions,
  encryptionProblem,
  readCommandLine,
  resolveDaemonSettings,
  type DaemonFlagName,
  type DaemonFlagValues,
  type LogLevel,
  type NodeFlagName,
} from "../daemon/config";
import { CONFIG_KEYS, DEFAULT_LOAD_BALANCER_CLASS, INSTANCE_GROUP_MAX_INSTANCES, type ConfigKey } from "../model";
import {
  clusterIdFromCluster,
  helpLine,
  HELP_FLAG_LINE,
  parseCommand,
  readConfigFile,
  UsageError,
  type Flag,
  kubeConfigOf,
} from "./options";

/** A flag of the daemon; its config key, if any, is configKeyOfFlag's (daemon/settings.ts). */
type DaemonFlag<Name extends string> = Flag<Name> & { readonly key?: never };

function flagOf<Name extends string>(row: { readonly flag: Name; readonly help: string }): DaemonFlag<Name> {
  return {
    name: row.flag,
    ...("value" in row && typeof row.value === "string" ? { value: row.value } : {}),
    help: row.help,
  };
}

/** Flags of the daemon itself (daemon/settings.ts DAEMON_SETTINGS): parseArgs and the help text are both made from them. */
export const DAEMON_FLAGS: readonly DaemonFlag<DaemonFlagName>[] = DAEMON_FLAG_ROWS.map(flagOf);

/** The node controller's keys other than computeEndpoint (a daemon flag above), as flags of the same names. */
export const NODE_FLAGS: readonly DaemonFlag<NodeFlagName>[] = NODE_FLAG_ROWS.map(flagOf);

export const GCP_FLAG_HELP: Record<ConfigKey, Omit<DaemonFlag<ConfigKey>, "name">> = {
  project: { value: "ID", help: "GCP project of every resource (required)" },
  region: { value: "REGION", help: "region of the load balancers (required)" },
  network: { value: "NAME", help: "VPC network of the nodes (required)" },
  subnetwork: { value: "NAME", help: "default subnetwork of internal load balancers" },
  nodeTags: { value: "TAG,…", help: "network tags of the nodes: the target of every firewall (required)" },
  clusterName: { value: "NAME", help: "routes are named <clusterName cut to 26>-<node UID> (required)" },
  clusterId: {
    value: "ID",
    help: "names the instance groups and the node health check (required unless ConfigMap kube-system/ingress-uid has it)",
  },
  clusterCIDR: { value: "CIDR", help: "pod range: a node podCIDR outside it gets no route" },
  backendMode: {
    value: "MODE",
    help: "backend-service, target-pool (external only) or neg (default backend-service)",
  },
  configureRoutes: { value: "BOOL", help: "one route per node podCIDR (default true; false with podCIDRSource cloud)" },
  podCIDRSource: {
    value: "SOURCE",
    help: "none (kube-controller-manager allocates) or cloud (each VM's alias IP range; no routes) (default none)",
  },
  podCIDRStack: { value: "STACK", help: "with podCIDRSource cloud: IPv4, IPv4_IPv6, IPv6_IPv4 or IPv6 (default IPv4)" },
  loadBalancerClasses: {
    value: "CLASS,…",
    help: `loadBalancerClass values handled besides none (default ${DEFAULT_LOAD_BALANCER_CLASS})`,
  },
  instanceGroupLimit: {
    value: "N",
    help: `instances per instance group, 1 to ${INSTANCE_GROUP_MAX_INSTANCES}; more nodes in a zone open more groups (default ${INSTANCE_GROUP_MAX_INSTANCES})`,
  },
  enableL4DenyFirewall: {
    value: "BOOL",
    help: "a deny rule k8s-fw-<lb>-deny per external load balancer, its allow rules above it at 999 (default false)",
  },
  addressReservation: {
    value: "MODE",
    help: "transient (an ephemeral IP, reserved only while a change replaces the forwarding rule, as the stock CCM) or always (<lb> reserved for the Service's life) (default transient)",
  },
  instanceGroupZones: {
    value: "ZONE,…",
    help: "zones whose instance group is declared even with no Node, listed by every backend-service load balancer: a zone's first and last Node then change the cluster stack only",
  },
  healthCheckSourceRanges: {
    value: "CIDRS",
    help: "IPv4 ranges Google's health checkers probe from, opened by the health-check firewalls (default Google's: 130.211.0.0/22, 35.191.0.0/16, 209.85.152.0/22, 209.85.204.0/22)",
  },
  healthCheckSourceRangesIPv6: {
    value: "CIDRS",
    help: "IPv6 ranges of the health checkers (default 2600:1901:8001::/48, 2600:2d00:1:b029::/64)",
  },
  nodeHealthCheckPort: {
    value: "PORT",
    help: "port of the node probe every externalTrafficPolicy Cluster load balancer checks (default 10256, kube-proxy's)",
  },
  nodeHealthCheckPath: { value: "PATH", help: "path of the node probe (default /healthz)" },
  networkProject: {
    value: "PROJECT",
    help: "Shared VPC host project: firewalls and routes live there (default: project)",
  },
  firewallManagement: {
    value: "MODE",
    help: "managed (dccm writes the firewalls) or manual (it publishes the gcloud commands instead) (default managed)",
  },
};

/** What each GCP key does, for docs/reference/configuration.md: whether it is required (and its default), and what it means. */
export const GCP_KEY_REFERENCE: Record<ConfigKey, { readonly required: string; readonly meaning: string }> = {
  project: { required: "yes", meaning: "where the resources live" },
  region: { required: "yes", meaning: "where the resources live" },
  network: { required: "yes", meaning: "VPC network of the nodes (firewalls, routes, internal LBs)" },
  subnetwork: {
    required: "for internal LBs without the subnet annotation",
    meaning:
      "default subnet of internal load balancers, and of the IPv6 addresses of external ones without `dccm.io/ipv6-subnet`: for IPv6 it must be dual-stack ([IPv6](../guides/ipv6.md))",
  },
  nodeTags: {
    required: "yes",
    meaning: "network tags of the nodes: the target of every firewall (list or comma-separated)",
  },
  clusterName: { required: "yes", meaning: "route names are `<clusterName cut to 26>-<node UID>`" },
  clusterId: {
    required: "yes, unless ConfigMap `kube-system/ingress-uid` has `provider-uid`/`uid`",
    meaning:
      "instance groups `k8s-ig--<clusterId>` (then `k8s-ig2--<clusterId>`, … beyond `instanceGroupLimit`), node health check `k8s-<clusterId>-node`",
  },
  clusterCIDR: { required: "no", meaning: "pod range; a node podCIDR outside it gets no route" },
  backendMode: {
    required: "no (`backend-service`)",
    meaning:
      "`target-pool` to adopt the stock CCM's external LBs; `neg`: GCE_VM_IP network endpoint groups holding a subset of the nodes per Service, internal and external; per Service: annotation `dccm.io/backend`",
  },
  configureRoutes: {
    required: "no (`true`; `false` with `podCIDRSource: cloud`, where `true` is refused)",
    meaning: "one route per node podCIDR",
  },
  podCIDRSource: {
    required: "no (`none`)",
    meaning:
      "where Nodes' `spec.podCIDRs` come from: `none` (today's route-based clusters: kube-controller-manager allocates them, dccm routes them), or `cloud` (VPC-native: the node controller copies each VM's alias IP range, as the stock CCM's `--cidr-allocator-type=CloudAllocator`; no routes). See [controllers/node/README.md](../../controllers/node/README.md#pod-cidrs-from-alias-ip-ranges)",
  },
  podCIDRStack: {
    required: "no (`IPv4`; only with `podCIDRSource: cloud`)",
    meaning:
      "`IPv4`, `IPv4_IPv6`, `IPv6_IPv4` or `IPv6`: the IP families of `spec.podCIDRs`, in that order (the stock CCM derives it from its service CIDRs)",
  },
  loadBalancerClasses: { required: "no (`dccm.io/gce`)", meaning: 'classes handled besides "no class"' },
  instanceGroupLimit: {
    required: "no (`1000`, GCE's limit)",
    meaning:
      "instances per instance group, a whole number from 1 to 1000; a zone with more backend Nodes gets more groups. Lower it only to try that at small scale",
  },
  instanceGroupZones: {
    required: "no (unset)",
    meaning:
      "zones (of `region`, e.g. `us-central1-a,us-central1-b,us-central1-c`) whose instance group `k8s-ig--<clusterId>` is declared even with no Node there, and which every backend-service load balancer lists. Without it, the first Node of a zone and the last one leaving change every backend-service Service's backend list: one Service-stack run each (≈1 CPU-s apiece, queued before real changes at thousands of Services). With it, they change the cluster stack only (measured in test/e2e/instance-group-zones.e2e.ts: 1 cluster-stack run, 0 Service-stack runs). Setting it runs each backend-service Service that lacked one of the zones once. A zone outside the list still joins as without the key. GCE accepts an empty unmanaged group as a backend: dccm already keeps one while a Service names it (see the daemon)",
  },
  addressReservation: {
    required:
      "no (`transient`, as the stock CCM; `always` in the CI stack program, which cannot reserve an IP before a run)",
    meaning:
      "`transient`: a Service without `spec.loadBalancerIP` keeps the ephemeral IP of its forwarding rule and holds no static address at rest; a run that replaces the rule first reserves its current IP as `<lb>` and releases it after, so the IP stays (one `STATIC_ADDRESSES` unit per Service only while its rule is replaced). `always`: `<lb>` is reserved for the Service's life, so its IP survives even a forwarding rule deleted out of band. A Service whose TCP and UDP rules share one IP, and every IPv6 address `<lb>-ipv6`, is reserved in both modes. See [Services](../guides/services.md#ip-addresses-and-gce-quotas)",
  },
  healthCheckSourceRanges: {
    required: "no (Google's: `130.211.0.0/22`, `35.191.0.0/16`, `209.85.152.0/22`, `209.85.204.0/22`)",
    meaning:
      "IPv4 CIDRs the health checkers probe from, as the stock CCM's `--cloud-provider-gce-lb-src-cidrs`: the source ranges of the node health-check firewall `k8s-<clusterId>-node-http-hc` and of each Service's own health-check firewall. Change it only if Google publishes other ranges, or to narrow them on a private test bed. See [Services](../guides/services.md#health-checks)",
  },
  healthCheckSourceRangesIPv6: {
    required: "no (Google's: `2600:1901:8001::/48`, `2600:2d00:1:b029::/64`)",
    meaning: "IPv6 CIDRs the health checkers probe from: the source ranges of each IPv6 health-check firewall",
  },
  nodeHealthCheckPort: {
    required: "no (`10256`, kube-proxy's health server)",
    meaning:
      "the node port the cluster's shared health check `k8s-<clusterId>-node` probes for every externalTrafficPolicy Cluster Service, and that the node health-check firewall opens. Set it when a kube-proxy replacement serves its health elsewhere (Cilium, Calico eBPF). Changing it updates the check and the firewall in place",
  },
  nodeHealthCheckPath: {
    required: "no (`/healthz`)",
    meaning: "the path the shared node health check asks; an absolute path of printable ASCII, at most 1024 characters",
  },
  networkProject: {
    required: "no (`project`)",
    meaning:
      "the Shared VPC host project, as the stock CCM's gce.conf `network-project-id`: firewalls and routes are created, read, repaired and collected there, and network and subnetwork references name it; everything else stays in `project`. See [Shared VPC](../guides/shared-vpc.md)",
  },
  firewallManagement: {
    required: "no (`managed`)",
    meaning:
      "`managed`: dccm writes the firewalls; `manual`: it declares none, and after each run of a Service records the Event `LoadBalancerManualChange` holding the `gcloud` commands that would make the rules that differ from the live ones in `networkProject` (the cluster's node health-check rule included). `auto` is not built yet and refused. See [Shared VPC](../guides/shared-vpc.md)",
  },
  enableL4DenyFirewall: {
    required: "no (`false`, as the stock CCM's `--enable-l4-deny-firewall`)",
    meaning:
      "per external load balancer a deny rule `k8s-fw-<lb>-deny` (and `k8s-fw-<lb>-deny-ipv6`): every protocol from anywhere towards the load balancer's IP, priority 1000, so that no broader allow rule elsewhere in the VPC opens the IP's other ports; the Service's allow rules and the cluster's node health-check firewall move to 999, above it. Turning it on, each deny rule is created after its Service's allow rules moved (the engine's `dependsOn`), so no traffic is denied on the way. Turning it off (a restart of the daemon), each Service stack still holding a deny rule first runs with its allow rules kept at 999 and no deny rule, which deletes the deny rule alone; its next run moves the allow rules back to 1000; the node health-check firewall stays at 999 until no Service stack holds one (and, after the start, until every Service stack was read). So a deny rule never ties an allow rule at 1000, as the stock CCM's `--enable-l4-deny-firewall-rollback-cleanup` deletes first. The daemon only: see [Known limits](../operations/known-limits.md)",
  },
};

/** The GCP picture's keys (the same for dccm desired and dccm render), as flags of the same names. */
export const GCP_FLAGS: readonly DaemonFlag<ConfigKey>[] = CONFIG_KEYS.map((key) => ({
  name: key,
  ...GCP_FLAG_HELP[key],
}));

export const DAEMON_HELP = [
  "usage: dccm daemon [--kubeconfig FILE] [--config FILE] [FLAG ...]",
  "runs the service controller and the node controller. Durations: 500ms, 30s, 10m, 1h.",
  "daemon flags (a flag wins over the config file key in brackets):",
  ...DAEMON_FLAGS.map((flag) => helpLine({ ...flag, key: configKeyOfFlag(flag.name) })),
  HELP_FLAG_LINE,
  "node controller flags (each wins over the config file key of the same name):",
  ...NODE_FLAGS.map(helpLine),
  "GCP flags (each wins over the config file key of the same name; dccm desired and dccm render read them too):",
  ...GCP_FLAGS.map(helpLine),
].join("\n");

/** How a caller other than the command line (`dccm demo`) runs the daemon. */
export interface DaemonRun {
  /** The log goes to this file instead of stdout. */
  readonly logFile?: string;
  /** Stops the daemon when it settles, as a signal would (its value names the reason in the log). */
  readonly stopWhen?: Promise<string>;
  /** Told once the daemon has started (its initial lists synced). */
  readonly onStarted?: (daemon: Daemon) => void;
}

export async function runDaemon(argv: string[], run: DaemonRun = {}): Promise<number> {
  // The daemon's settings are read by daemon/config.ts (readCommandLine, resolveDaemonSettings), not by readReaderFlags.
  const { values } = parseCommand(argv, [...DAEMON_FLAGS, ...NODE_FLAGS, ...GCP_FLAGS]);
  if (values.help === true) {
    process.stdout.write(`${DAEMON_HELP}\n`);
    return 0;
  }
  const flags: DaemonFlagValues = values;
  const commandLine = readCommandLine(flags);
  if (!commandLine.ok) throw new UsageError(commandLine.problems.join("; "));
  // Before anything is written: state, backend and the pulumi CLI's files (it inherits the umask) stay the owner's.
  process.umask(0o077);
  const file = commandLine.value.configFile !== undefined ? readConfigFile(commandLine.value.configFile) : {};
  // Loaded only when needed, so configuration problems come first.
  let kubeConfig: k8s.KubeConfig | undefined;
  const kube = (): k8s.KubeConfig => (kubeConfig ??= kubeConfigOf(commandLine.value.kubeconfig));
  const settings = await resolveDaemonSettings({ commandLine: commandLine.value, flags, file, env: process.env }, () =>
    clusterIdFromCluster(kube()),
  );
  const noEncryption = encryptionProblem(settings, process.env);
  if (noEncryption !== undefined) throw new UsageError(noEncryption);
  const logger = daemonLogger(settings.logLevel, run.logFile);
  const daemon = new Daemon({
    ...daemonOptions(settings, { kubeConfig: kube(), logger, identity: settings.identity ?? defaultIdentity() }),
    metrics: DaemonMetrics.forProcess(),
  });
  return runUntilStopped(daemon, logger, settings.shutdownTimeoutMs, run);
}

function daemonLogger(level: LogLevel, file: string | undefined): Logger {
  const options = {
    level,
    base: { component: "dccm" },
    redact: { paths: ["*.passphrase", "*.PULUMI_CONFIG_PASSPHRASE", "*.env", "*.token"], censor: "[redacted]" },
  };
  return file === undefined ? pino(options) : pino(options, pino.destination({ dest: file, sync: true }));
}

/** Starts the daemon and stops it on SIGTERM, SIGINT or a lost Lease; 1 when it stopped for any reason but a signal. */
async function runUntilStopped(
  daemon: Daemon,
  logger: Logger,
  shutdownTimeoutMs: number,
  run: DaemonRun,
): Promise<number> {
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
    run.stopWhen?.then(shutdown, () => undefined);
    daemon
      .start(() => {
        lost = true;
        shutdown("lost leadership");
      })
      .then(() => {
        if (!stopping) run.onStarted?.(daemon);
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
