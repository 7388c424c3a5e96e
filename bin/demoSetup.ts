/**
 * What `dccm demo` puts into the offline environment before its daemon starts, and what it tells
 * the user: three VMs in two zones with their Nodes registered as kubelets register them, the
 * config file every `dccm` command of the instructions reads, and a shell file that points
 * kubectl, dccm and the pulumi CLI at the environment. Pure but for registerDemoNodes and
 * writeDemoFiles.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import * as YAML from "yaml";
import { formatDuration } from "../runtime/durations";
import { kubeConfigOf } from "./options";

/** The emulator's project (emulator/gce: its default) and the e2e environment's network, subnetwork and region. */
export const DEMO_PROJECT = "dccm-test";
export const DEMO_REGION = "us-central1";
export const DEMO_CLUSTER_ID = "dccmdemo";
const DEMO_NODE_TAG = "k8s-node";
export const UNINITIALIZED_TAINT = "node.cloudprovider.kubernetes.io/uninitialized";

export interface DemoNode {
  readonly name: string;
  readonly zone: string;
  /** What kube-controller-manager's node IPAM (--allocate-node-cidrs) would give it: the environment runs none. */
  readonly podCIDR: string;
}

/** Two zones, so that the cluster stack holds an instance group per zone; a route per Node. */
export const DEMO_NODES: readonly DemoNode[] = [
  { name: "node-a1", zone: "us-central1-a", podCIDR: "10.64.1.0/24" },
  { name: "node-a2", zone: "us-central1-a", podCIDR: "10.64.2.0/24" },
  { name: "node-b1", zone: "us-central1-b", podCIDR: "10.64.3.0/24" },
];

/** What the launcher prints once its environment answers (test/support/tooling/testenv-cli.ts). */
export interface LaunchedEnvironment {
  readonly kubeconfig: string;
  readonly computeEndpoint: string;
  readonly backendUrl: string;
  readonly dir: string;
  readonly env: Readonly<Record<string, string>>;
}

/** The demo's files, under its state directory (removed with the environment). */
export interface DemoFiles {
  readonly stateDir: string;
  readonly config: string;
  readonly shellEnv: string;
  readonly log: string;
}

export function demoFiles(stateDir: string): DemoFiles {
  return {
    stateDir,
    config: path.join(stateDir, "dccm.yaml"),
    shellEnv: path.join(stateDir, "env.sh"),
    log: path.join(stateDir, "daemon.log"),
  };
}

/** The daemon's config file (daemon/config.ts reads it; so do drift, preview, gc and status). */
export function demoConfig(
  launched: Pick<LaunchedEnvironment, "computeEndpoint" | "backendUrl">,
  stateDir: string,
  driftInterval: string,
): Record<string, string | readonly string[]> {
  return {
    project: DEMO_PROJECT,
    region: DEMO_REGION,
    network: "k8s-net",
    subnetwork: "k8s-subnet",
    nodeTags: [DEMO_NODE_TAG],
    clusterName: "demo",
    clusterId: DEMO_CLUSTER_ID,
    clusterCIDR: "10.64.0.0/14",
    stateDir,
    backendUrl: launched.backendUrl,
    computeEndpoint: launched.computeEndpoint,
    driftInterval,
  };
}

export function demoConfigText(config: Readonly<Record<string, unknown>>): string {
  return YAML.stringify(config);
}

/** `'…'` for sh, any byte but NUL. */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * The shell file of the instructions: KUBECONFIG, and what the launcher gives the pulumi CLI (the
 * bucket, PULUMI_HOME, the emulator's plugin), with the passphrase of this demo. PATH gets only the
 * directories the launcher put in front of the PATH it was given (`ownPath`).
 */
export function demoShellEnv(
  launched: Pick<LaunchedEnvironment, "kubeconfig" | "env">,
  passphrase: string,
  ownPath: string,
): string {
  const own = new Set(ownPath.split(path.delimiter));
  const added = (launched.env.PATH ?? "").split(path.delimiter).filter((dir) => dir !== "" && !own.has(dir));
  const variables: [string, string][] = [
    ["KUBECONFIG", launched.kubeconfig],
    ...Object.entries(launched.env).filter(([name]) => name !== "PATH" && name !== "PULUMI_CONFIG_PASSPHRASE"),
    ["PULUMI_CONFIG_PASSPHRASE", passphrase],
  ];
  return [
    "# dccm demo: points kubectl, dccm and the pulumi CLI at the demo's environment (gone when the demo stops).",
    ...variables.map(([name, value]) => `export ${name}=${shellQuote(value)}`),
    ...(added.length > 0 ? [`export PATH=${shellQuote(added.join(path.delimiter))}:"$PATH"`] : []),
    "",
  ].join("\n");
}

/** The config and the shell file, the owner's only (the shell file holds the passphrase). */
export function writeDemoFiles(files: DemoFiles, configText: string, shellEnv: string): void {
  fs.mkdirSync(files.stateDir, { recursive: true, mode: 0o700 });
  fs.writeFileSync(files.config, configText, { mode: 0o600 });
  fs.writeFileSync(files.shellEnv, shellEnv, { mode: 0o600 });
}

/** A Node as a kubelet with --cloud-provider=external registers it: no providerID, tainted until a CCM initializes it. */
export function kubeletNode(node: DemoNode): k8s.V1Node {
  return {
    metadata: {
      name: node.name,
      labels: { "kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64" },
    },
    spec: {
      podCIDR: node.podCIDR,
      podCIDRs: [node.podCIDR],
      taints: [{ key: UNINITIALIZED_TAINT, value: "true", effect: "NoSchedule" }],
    },
  };
}

/** The emulator's seeding route of one VM (emulator/gce/README.md), on the Compute endpoint's host. */
export function instanceSeedUrl(computeEndpoint: string, node: DemoNode): string {
  return new URL(`/emulator/instances/${DEMO_PROJECT}/${node.zone}/${node.name}`, computeEndpoint).toString();
}

/** Each Node's VM in the emulator, then the Node: the daemon finds them as it finds a new cluster's. */
export async function registerDemoNodes(
  launched: Pick<LaunchedEnvironment, "kubeconfig" | "computeEndpoint">,
): Promise<void> {
  const core = kubeConfigOf(launched.kubeconfig).makeApiClient(k8s.CoreV1Api);
  for (const node of DEMO_NODES) {
    const answer = await fetch(instanceSeedUrl(launched.computeEndpoint, node), {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ tags: [DEMO_NODE_TAG] }),
    });
    if (!answer.ok)
      throw new Error(
        `the GCE emulator refused VM ${node.zone}/${node.name}: HTTP ${answer.status} ${await answer.text()}`,
      );
    try {
      await core.createNode({ body: kubeletNode(node) });
    } catch (error) {
      throw new Error(`registering Node ${node.name}: ${(error as Error).message}`, { cause: error });
    }
  }
}

/** What the instructions show: where everything is. */
export interface DemoShown {
  readonly kubeconfig: string;
  readonly computeEndpoint: string;
  readonly backendUrl: string;
  readonly files: DemoFiles;
  readonly configText: string;
  readonly statusUrl: string;
}

function nodesLine(): string {
  const zones = [...new Set(DEMO_NODES.map((node) => node.zone))];
  const inZone = (zone: string): string =>
    `${DEMO_NODES.filter((node) => node.zone === zone)
      .map((node) => node.name)
      .join(", ")} in ${zone}`;
  return `${zones.map(inZone).join("; ")}: VMs in the emulator, registered as kubelets with --cloud-provider=external register`;
}

/** What to try, printed once the daemon runs. */
export function demoInstructions(shown: DemoShown, driftMs: number): string {
  const api = shown.computeEndpoint;
  const emulator = new URL("/emulator/resources", api).toString();
  const firewall = `${api}projects/${DEMO_PROJECT}/global/firewalls/k8s-fw-a$(kubectl get service hello -o jsonpath='{.metadata.uid}' | tr -d - | cut -c1-31)`;
  const config = shown.files.config;
  return [
    "dccm demo: dccm daemon runs against a kube-apiserver, the GCE emulator (project dccm-test) and a gs:// bucket; Ctrl-C stops everything.",
    `  kubeconfig   ${shown.kubeconfig}`,
    `  Compute API  ${api} (the GCE emulator: emulator/gce/README.md)`,
    `  stacks       ${shown.backendUrl} (fake-gcs-server, a GCS bucket as in production)`,
    `  Nodes        ${nodesLine()}`,
    `  config       ${config}`,
    `  environment  ${shown.files.shellEnv} (KUBECONFIG, the bucket, the passphrase, the pulumi CLI)`,
    `  daemon log   ${shown.files.log}`,
    "The config, as every dccm command below reads it:",
    ...shown.configText
      .trimEnd()
      .split("\n")
      .map((line) => `    ${line}`),
    "In another shell, in this checkout:",
    `  source ${shown.files.shellEnv}`,
    "  kubectl get nodes -o custom-columns=NAME:.metadata.name,PROVIDER-ID:.spec.providerID,TAINTS:.spec.taints[*].key",
    `  curl -s '${emulator}?kind=routes'           # a route per Node: its pod range to its VM`,
    `  curl -s '${emulator}?kind=instanceGroups'   # an instance group per zone`,
    `  npx dccm status --url ${shown.statusUrl}`,
    "  kubectl create service loadbalancer hello --tcp=80:8080",
    "  kubectl get service hello --watch                 # EXTERNAL-IP: the emulator's address, in seconds",
    `  npx dccm preview --config ${config}     # exit 0: nothing to change; 2: what the daemon is about to do`,
    `  curl -s -X DELETE ${firewall}`,
    `  npx dccm drift --config ${config}       # exit 0: GCE is as applied; 2: the firewall is missing`,
    `  npx dccm refresh default/hello          # back now; else within ${formatDuration(Math.round(driftMs * 1.1))} (the next drift pass)`,
    `  npx dccm gc --config ${config} --dry-run   # what dccm made that no stack holds: nothing`,
    "",
  ].join("\n");
}
