/**
 * Every Kubernetes object of a dccm install, built once from typed arguments: `dccm manifests`
 * prints them as YAML, the `DccmDeployment` component (deploy/dccmDeployment.ts) declares them
 * with @pulumi/kubernetes. Pure: no I/O, no Pulumi.
 *
 * RBAC is exactly what the daemon and the node controller call (docs/reference/rbac.md, controllers/node/README.md):
 * cluster-scoped objects in two ClusterRoles, the Lease and the two ConfigMaps of kube-system in a
 * Role there. The pod runs on the host network: pod networking may depend on the routes dccm
 * creates, so dccm must not depend on it (docs/explanation/architecture.md).
 */
import type {
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1ConfigMap,
  V1Container,
  V1Deployment,
  V1EnvVar,
  V1PodDisruptionBudget,
  V1PodSpec,
  V1PolicyRule,
  V1Probe,
  V1Role,
  V1RoleBinding,
  V1ServiceAccount,
  V1Toleration,
  V1Volume,
} from "@kubernetes/client-node";
import * as crypto from "node:crypto";
import * as YAML from "yaml";
import { DAEMON_DEFAULTS, daemonSettings, readCommandLine, type DaemonFlagValues } from "../daemon/config";
import { isRecord } from "../runtime/guards";
import { DEFAULT_LEASE } from "../daemon/leader";
import { LEDGER_CONFIGMAP } from "../leaks/ledger";
import { CLUSTER_ID_CONFIGMAP } from "../watcher/clusterId";

/** A Secret's key, by name, in the install's namespace. */
export interface SecretKeyRef {
  name: string;
  key: string;
}

/**
 * Where the stacks live. Never the pod's own disk: an emptyDir loses every stack at a pod restart,
 * and the next daemon would see every load balancer as new.
 */
export type BackendArgs =
  /** gs://BUCKET/PREFIX, s3://…, azblob://…, or https://api.pulumi.com (Pulumi Cloud, with its token). */
  | { url: string; accessTokenSecret?: SecretKeyRef }
  /** A PersistentVolumeClaim the installer declares, mounted at BACKEND_MOUNT (file:// backend). */
  | { volumeClaim: string; readWriteMany?: boolean };

/** How stack secrets are encrypted: a KMS URL (gcpkms://…) or a passphrase kept in a Secret. */
export type SecretsArgs = { provider: string } | { passphraseSecret: SecretKeyRef };

export interface DeployArgs {
  /** The dccm image (see Dockerfile), e.g. `ghcr.io/acme/dccm:0.1.0`. */
  image: string;
  /** Namespace of the ServiceAccount, ConfigMap, Deployment and PodDisruptionBudget (default kube-system). */
  namespace?: string;
  /** Default 2: one leader, one standby (Lease kube-system/dccm). */
  replicas?: number;
  /** The dccm config file's keys (examples/dccm.yaml): the GCP picture, daemon and node controller keys. */
  config: Record<string, unknown>;
  backend: BackendArgs;
  secrets: SecretsArgs;
  /** A service account key in a Secret; without it, Application Default Credentials from the metadata server. */
  gcpCredentialsSecret?: SecretKeyRef;
  /** Default: requests 100m CPU and 512Mi, limit 2Gi (a pulumi run holds ~200 MB; the gcp plugin more). */
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  /** Default true; false runs the service controller only (`--no-node-controller`) and drops its ClusterRole. */
  nodeController?: boolean;
  imagePullPolicy?: "Always" | "IfNotPresent" | "Never";
  nodeSelector?: Record<string, string>;
  /** Tolerations added after the three every install has (the uninitialized, control-plane and not-ready taints). */
  tolerations?: V1Toleration[];
  logLevel?: string;
}

/** The objects of an install, told apart by kind (client-node's types leave `kind` a plain string). */
export type KubeObject =
  | (V1ServiceAccount & { kind: "ServiceAccount" })
  | (V1ClusterRole & { kind: "ClusterRole" })
  | (V1ClusterRoleBinding & { kind: "ClusterRoleBinding" })
  | (V1Role & { kind: "Role" })
  | (V1RoleBinding & { kind: "RoleBinding" })
  | (V1ConfigMap & { kind: "ConfigMap" })
  | (V1Deployment & { kind: "Deployment" })
  | (V1PodDisruptionBudget & { kind: "PodDisruptionBudget" });

export class DeployArgsError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid deploy arguments:\n  ${problems.join("\n  ")}`);
    this.name = "DeployArgsError";
  }
}

export const NAME = "dccm";
const CONFIG_MOUNT = "/etc/dccm";
export const CONFIG_FILE = "config.yaml";
const STATE_DIR = "/var/lib/dccm";
const BACKEND_MOUNT = "/var/lib/dccm-backend";
const SECRETS_MOUNT = "/var/run/secrets/dccm";
/** Where the Lease and the ConfigMaps dccm reads and writes live, whatever the install's namespace. */
export const SYSTEM_NAMESPACE = "kube-system";
const PORT = Number(DAEMON_DEFAULTS.listen.slice(DAEMON_DEFAULTS.listen.lastIndexOf(":") + 1));
const LABELS = { "app.kubernetes.io/name": NAME, "app.kubernetes.io/component": "cloud-controller-manager" };
const SERVICE_CONTROLLER_ROLE = "dccm:service-controller";
const NODE_CONTROLLER_ROLE = "dccm:node-controller";
const DEFAULT_RESOURCES = { requests: { cpu: "100m", memory: "512Mi" }, limits: { memory: "2Gi" } };
/** The image's user (Dockerfile): files of the PersistentVolumeClaim backend are written as it. */
export const RUN_AS = 10001;

/** Cluster-scoped calls of the service controller (daemon/). */
export const SERVICE_CONTROLLER_RULES: V1PolicyRule[] = [
  { apiGroups: [""], resources: ["services"], verbs: ["get", "list", "watch", "patch"] },
  { apiGroups: [""], resources: ["services/status"], verbs: ["patch"] },
  { apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "watch"] },
  { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
  { apiGroups: [""], resources: ["namespaces"], resourceNames: [SYSTEM_NAMESPACE], verbs: ["get"] },
];

/** Calls of the node controller (nodes/). */
export const NODE_CONTROLLER_RULES: V1PolicyRule[] = [
  { apiGroups: [""], resources: ["nodes"], verbs: ["get", "list", "watch", "patch", "delete"] },
  { apiGroups: [""], resources: ["nodes/status"], verbs: ["patch"] },
  { apiGroups: [""], resources: ["events"], verbs: ["create", "patch"] },
];

/** kube-system only: the Lease, the cluster ID and the load balancer ledger. */
export const SYSTEM_NAMESPACE_RULES: V1PolicyRule[] = [
  {
    apiGroups: ["coordination.k8s.io"],
    resources: ["leases"],
    resourceNames: [DEFAULT_LEASE.name],
    verbs: ["get", "update"],
  },
  // A create cannot be limited by resourceNames (the name is not known to the authorizer before the object exists).
  { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["create"] },
  {
    apiGroups: [""],
    resources: ["configmaps"],
    resourceNames: [CLUSTER_ID_CONFIGMAP.name, LEDGER_CONFIGMAP.name],
    verbs: ["get"],
  },
  { apiGroups: [""], resources: ["configmaps"], resourceNames: [LEDGER_CONFIGMAP.name], verbs: ["patch"] },
  { apiGroups: [""], resources: ["configmaps"], verbs: ["create"] },
];

/** Daemon keys the Deployment sets itself (flags, which win over the file) or from `backend` and `secrets`. */
const KEYS_SET_BY_DEPLOYMENT: Record<string, string> = {
  stateDir: `the pod's state directory is the emptyDir ${STATE_DIR}`,
  listen: `the probes and metrics are served on port ${PORT}`,
  backendUrl: "set `backend` instead",
  secretsProvider: "set `secrets` instead",
};

function metadata(
  name: string,
  namespace?: string,
): { name: string; namespace?: string; labels: Record<string, string> } {
  return { name, ...(namespace !== undefined ? { namespace } : {}), labels: { ...LABELS } };
}

function checkSecretRef(ref: SecretKeyRef | undefined, field: string, problems: string[]): void {
  if (ref === undefined) return;
  if (typeof ref !== "object" || ref === null) {
    problems.push(`${field}: expected { name, key } of a Secret, got ${JSON.stringify(ref)}`);
    return;
  }
  if (typeof ref.name !== "string" || ref.name === "") problems.push(`${field}.name: the Secret's name is required`);
  if (typeof ref.key !== "string" || ref.key === "")
    problems.push(`${field}.key: the key in Secret ${ref.name} is required`);
}

function checkBackend(backend: BackendArgs | undefined, replicas: number, problems: string[]): void {
  if (backend === undefined) {
    problems.push(
      "backend: required: gs://BUCKET/PREFIX, https://api.pulumi.com (with accessTokenSecret), or volumeClaim (a PersistentVolumeClaim for a file:// backend)",
    );
    return;
  }
  if (typeof backend !== "object" || backend === null) {
    problems.push(`backend: expected { url } or { volumeClaim }, got ${JSON.stringify(backend)}`);
    return;
  }
  if ("volumeClaim" in backend) {
    if (typeof backend.volumeClaim !== "string" || backend.volumeClaim === "")
      problems.push("backend.volumeClaim: the PersistentVolumeClaim's name is required");
    if (replicas > 1 && backend.readWriteMany !== true) {
      problems.push(
        `backend.volumeClaim: a ReadWriteOnce claim is mounted by one pod at a time: set replicas to 1, or readWriteMany: true for a ReadWriteMany claim`,
      );
    }
    return;
  }
  const url = backend.url;
  if (typeof url !== "string" || url === "") problems.push("backend.url: required");
  else if (url.startsWith("file://")) {
    problems.push(
      `backend.url: ${url} is on the pod's own disk and every stack is lost when the pod restarts; use gs://BUCKET/PREFIX, https://api.pulumi.com, or backend.volumeClaim`,
    );
  } else if (!/^[a-z][a-z0-9+.-]*:\/\/./.test(url))
    problems.push(`backend.url: ${url} is not a URL (gs://BUCKET/PREFIX, https://api.pulumi.com, …)`);
  checkSecretRef(backend.accessTokenSecret, "backend.accessTokenSecret", problems);
  if (typeof url === "string" && url.startsWith("https://") && backend.accessTokenSecret === undefined) {
    problems.push(
      `backend.accessTokenSecret: ${url} needs a Pulumi access token (a Secret's key, given to the CLI as PULUMI_ACCESS_TOKEN)`,
    );
  }
}

function checkSecrets(secrets: SecretsArgs | undefined, problems: string[]): void {
  if (secrets === undefined) {
    problems.push(
      "secrets: required: provider (e.g. gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K) or passphraseSecret",
    );
    return;
  }
  if (typeof secrets !== "object" || secrets === null) {
    problems.push(`secrets: expected { provider } or { passphraseSecret }, got ${JSON.stringify(secrets)}`);
    return;
  }
  if ("provider" in secrets) {
    if (typeof secrets.provider !== "string" || secrets.provider === "")
      problems.push("secrets.provider: required (e.g. gcpkms://…)");
    else if (secrets.provider === "passphrase")
      problems.push(
        "secrets.provider: for a passphrase, give passphraseSecret (the passphrase never goes into the ConfigMap)",
      );
  } else checkSecretRef(secrets.passphraseSecret, "secrets.passphraseSecret", problems);
}

/** The container's variable holding its Pod's name (downward API), the replica's Lease identity. */
const POD_NAME_ENV = "POD_NAME";

/** The daemon's flags as the container passes them (they win over the config file's keys). */
function daemonFlags(args: DeployArgs): DaemonFlagValues {
  return {
    config: `${CONFIG_MOUNT}/${CONFIG_FILE}`,
    "state-dir": STATE_DIR,
    listen: `0.0.0.0:${PORT}`,
    // Stable per replica, distinct between replicas: a restarted container takes its Lease back at
    // once instead of waiting the lease out, as the default <hostname>_<pid> would (the kubelet
    // expands $(POD_NAME) in args).
    identity: `$(${POD_NAME_ENV})`,
    ...(args.nodeController === false ? { "no-node-controller": true } : {}),
    ...(args.logLevel !== undefined ? { "log-level": args.logLevel } : {}),
  };
}

/** The daemon's own validation of the config file and flags, as the pod will read them. */
function checkConfig(args: DeployArgs, replicas: number, problems: string[]): void {
  if (args.config === null || typeof args.config !== "object" || Array.isArray(args.config)) {
    problems.push("config: expected the dccm config file's mapping (examples/dccm.yaml)");
    return;
  }
  for (const [key, reason] of Object.entries(KEYS_SET_BY_DEPLOYMENT)) {
    if (args.config[key] !== undefined) problems.push(`config.${key}: set by the deployment (${reason})`);
  }
  if (replicas > 1 && (args.config.leaderElection === false || args.config.leaderElection === "false")) {
    problems.push(`config.leaderElection: ${replicas} replicas need leader election (only the Lease holder acts)`);
  }
  const flags = daemonFlags(args);
  const commandLine = readCommandLine(flags);
  if (!commandLine.ok) {
    problems.push(...commandLine.problems.map((problem) => `logLevel: ${problem}`));
    return;
  }
  const result = daemonSettings({ commandLine: commandLine.value, flags, file: configFile(args), env: {} });
  if (result.kind === "invalid") problems.push(...result.problems.map((problem) => `config.${problem}`));
}

/** Every problem of `args`, each naming its field; empty when they are valid. */
export function deployArgsProblems(args: DeployArgs): string[] {
  const problems: string[] = [];
  if (typeof args.image !== "string" || args.image.trim() === "")
    problems.push("image: required (the dccm image built from the Dockerfile, e.g. ghcr.io/acme/dccm:0.1.0)");
  const replicas = args.replicas ?? 2;
  if (!Number.isInteger(replicas) || replicas < 1)
    problems.push(`replicas: expected a whole number of at least 1, got ${JSON.stringify(args.replicas)}`);
  const namespace = args.namespace ?? SYSTEM_NAMESPACE;
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(namespace))
    problems.push(`namespace: "${namespace}" is not a namespace name`);
  checkBackend(args.backend, replicas, problems);
  checkSecrets(args.secrets, problems);
  checkSecretRef(args.gcpCredentialsSecret, "gcpCredentialsSecret", problems);
  if (args.tolerations !== undefined && !Array.isArray(args.tolerations))
    problems.push(`tolerations: expected a list of tolerations, got ${JSON.stringify(args.tolerations)}`);
  checkConfig(args, replicas, problems);
  return problems;
}

function backendUrl(backend: BackendArgs): string {
  return "volumeClaim" in backend ? `file://${BACKEND_MOUNT}` : backend.url;
}

const CONFIG_HASH_ANNOTATION = "dccm.io/config-sha256";

/** The ConfigMap's config file, as it is written. */
function sha256(text: string): string {
  return crypto.createHash("sha256").update(text).digest("hex");
}

/** The config file the pod reads: the installer's keys with the backend and the secrets provider. */
export function configFile(args: DeployArgs): Record<string, unknown> {
  const file: Record<string, unknown> = { ...args.config };
  // Bad shapes are reported by deployArgsProblems; the file then just lacks the key.
  if (isRecord(args.backend)) file.backendUrl = backendUrl(args.backend);
  if (isRecord(args.secrets) && "provider" in args.secrets) file.secretsProvider = args.secrets.provider;
  return file;
}

function roleObjects(namespace: string, nodeController: boolean): KubeObject[] {
  const subject = { kind: "ServiceAccount", name: NAME, namespace };
  const clusterRoles: [string, V1PolicyRule[]][] = [
    [SERVICE_CONTROLLER_ROLE, SERVICE_CONTROLLER_RULES],
    ...(nodeController ? [[NODE_CONTROLLER_ROLE, NODE_CONTROLLER_RULES] as [string, V1PolicyRule[]]] : []),
  ];
  const objects: KubeObject[] = [];
  for (const [name, rules] of clusterRoles) {
    objects.push({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRole",
      metadata: metadata(name),
      rules,
    } satisfies KubeObject);
    objects.push({
      apiVersion: "rbac.authorization.k8s.io/v1",
      kind: "ClusterRoleBinding",
      metadata: metadata(name),
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
      subjects: [subject],
    } satisfies KubeObject);
  }
  objects.push({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "Role",
    metadata: metadata(NAME, SYSTEM_NAMESPACE),
    rules: SYSTEM_NAMESPACE_RULES,
  } satisfies KubeObject);
  objects.push({
    apiVersion: "rbac.authorization.k8s.io/v1",
    kind: "RoleBinding",
    metadata: metadata(NAME, SYSTEM_NAMESPACE),
    roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: NAME },
    subjects: [subject],
  } satisfies KubeObject);
  return objects;
}

/** Secret files, each in a volume of its own (a Secret volume mounts the whole Secret otherwise). */
interface SecretFile {
  volume: string;
  ref: SecretKeyRef;
  env: string;
}

function secretFiles(args: DeployArgs): SecretFile[] {
  const files: SecretFile[] = [];
  if ("passphraseSecret" in args.secrets)
    files.push({ volume: "passphrase", ref: args.secrets.passphraseSecret, env: "PULUMI_CONFIG_PASSPHRASE_FILE" });
  if (args.gcpCredentialsSecret !== undefined)
    files.push({ volume: "gcp-credentials", ref: args.gcpCredentialsSecret, env: "GOOGLE_APPLICATION_CREDENTIALS" });
  return files;
}

function containerArgs(args: DeployArgs): string[] {
  const argv = ["daemon"];
  for (const [flag, value] of Object.entries(daemonFlags(args)))
    argv.push(...(value === true ? [`--${flag}`] : typeof value === "string" ? [`--${flag}`, value] : []));
  return argv;
}

function containerEnv(args: DeployArgs, files: SecretFile[]): V1EnvVar[] {
  const accessToken = "url" in args.backend ? args.backend.accessTokenSecret : undefined;
  return [
    { name: POD_NAME_ENV, valueFrom: { fieldRef: { apiVersion: "v1", fieldPath: "metadata.name" } } },
    // The CLI writes its workspace files under PULUMI_HOME; the root filesystem is read-only.
    { name: "PULUMI_HOME", value: `${STATE_DIR}/pulumi-home` },
    { name: "PULUMI_SKIP_UPDATE_CHECK", value: "true" },
    ...files.map((file) => ({ name: file.env, value: `${SECRETS_MOUNT}/${file.volume}/${file.ref.key}` })),
    // The CLI reads a Pulumi Cloud token from its environment only.
    ...(accessToken !== undefined
      ? [{ name: "PULUMI_ACCESS_TOKEN", valueFrom: { secretKeyRef: { name: accessToken.name, key: accessToken.key } } }]
      : []),
  ];
}

function probe(path: string, periodSeconds: number): V1Probe {
  return { httpGet: { path, port: "metrics" }, periodSeconds, failureThreshold: 3, timeoutSeconds: 5 };
}

function container(args: DeployArgs, files: SecretFile[]): V1Container {
  return {
    name: NAME,
    image: args.image,
    imagePullPolicy: args.imagePullPolicy ?? "IfNotPresent",
    args: containerArgs(args),
    env: containerEnv(args, files),
    ports: [{ name: "metrics", containerPort: PORT, protocol: "TCP" }],
    livenessProbe: probe("/healthz", 10),
    readinessProbe: probe("/readyz", 5),
    resources: args.resources ?? DEFAULT_RESOURCES,
    securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ["ALL"] } },
    volumeMounts: [
      { name: "config", mountPath: CONFIG_MOUNT, readOnly: true },
      { name: "state", mountPath: STATE_DIR },
      { name: "tmp", mountPath: "/tmp" },
      ...("volumeClaim" in args.backend ? [{ name: "backend", mountPath: BACKEND_MOUNT }] : []),
      ...files.map((file) => ({ name: file.volume, mountPath: `${SECRETS_MOUNT}/${file.volume}`, readOnly: true })),
    ],
  };
}

function volumes(args: DeployArgs, files: SecretFile[]): V1Volume[] {
  const backend = args.backend;
  return [
    { name: "config", configMap: { name: `${NAME}-config` } },
    { name: "state", emptyDir: {} },
    { name: "tmp", emptyDir: {} },
    ...("volumeClaim" in backend
      ? [{ name: "backend", persistentVolumeClaim: { claimName: backend.volumeClaim } }]
      : []),
    ...files.map((file) => ({
      name: file.volume,
      secret: { secretName: file.ref.name, items: [{ key: file.ref.key, path: file.ref.key }], defaultMode: 0o400 },
    })),
  ];
}

function podSpec(args: DeployArgs): V1PodSpec {
  const files = secretFiles(args);
  return {
    serviceAccountName: NAME,
    hostNetwork: true,
    // Cluster DNS may need the routes dccm makes: the node's resolver reaches Google's APIs.
    dnsPolicy: "Default",
    priorityClassName: "system-cluster-critical",
    // Long enough for a cancelled pulumi run to end and unlock (DAEMON_DEFAULTS.shutdownTimeoutMs).
    terminationGracePeriodSeconds: DAEMON_DEFAULTS.shutdownTimeoutMs / 1000 + 15,
    ...(args.nodeSelector !== undefined ? { nodeSelector: args.nodeSelector } : {}),
    tolerations: [
      // Nodes are created tainted until dccm initializes them: without this it could never start on a new cluster.
      { key: "node.cloudprovider.kubernetes.io/uninitialized", operator: "Exists", effect: "NoSchedule" },
      { key: "node-role.kubernetes.io/control-plane", operator: "Exists", effect: "NoSchedule" },
      // A new node is NotReady until its pod network works, which may need dccm's routes.
      { key: "node.kubernetes.io/not-ready", operator: "Exists", effect: "NoSchedule" },
      ...(args.tolerations ?? []),
    ],
    affinity: {
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          { labelSelector: { matchLabels: { "app.kubernetes.io/name": NAME } }, topologyKey: "kubernetes.io/hostname" },
        ],
      },
    },
    securityContext: {
      runAsNonRoot: true,
      runAsUser: RUN_AS,
      runAsGroup: RUN_AS,
      fsGroup: RUN_AS,
      seccompProfile: { type: "RuntimeDefault" },
    },
    containers: [container(args, files)],
    volumes: volumes(args, files),
  };
}

/** `configText`: the ConfigMap's config file, whose hash rolls the pods when it changes. */
function deployment(
  args: DeployArgs,
  namespace: string,
  replicas: number,
  configText: string,
): V1Deployment & { kind: "Deployment" } {
  return {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: metadata(NAME, namespace),
    spec: {
      replicas,
      selector: { matchLabels: { "app.kubernetes.io/name": NAME } },
      // The host network gives each pod the node's port: a surge pod could not start next to its predecessor.
      strategy: { type: "RollingUpdate", rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } },
      // A ConfigMap change alone restarts no pod: its hash in the template rolls them.
      template: {
        metadata: { labels: { ...LABELS }, annotations: { [CONFIG_HASH_ANNOTATION]: sha256(configText) } },
        spec: podSpec(args),
      },
    },
  };
}

/** Every object of the install, in apply order; throws DeployArgsError naming every bad field. */
export function deployObjects(args: DeployArgs): KubeObject[] {
  const problems = deployArgsProblems(args);
  if (problems.length > 0) throw new DeployArgsError(problems);
  const namespace = args.namespace ?? SYSTEM_NAMESPACE;
  const replicas = args.replicas ?? 2;
  const configText = YAML.stringify(configFile(args));
  return [
    { apiVersion: "v1", kind: "ServiceAccount", metadata: metadata(NAME, namespace) } satisfies KubeObject,
    ...roleObjects(namespace, args.nodeController !== false),
    {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: metadata(`${NAME}-config`, namespace),
      data: { [CONFIG_FILE]: configText },
    } satisfies KubeObject,
    deployment(args, namespace, replicas, configText),
    {
      apiVersion: "policy/v1",
      kind: "PodDisruptionBudget",
      metadata: metadata(NAME, namespace),
      // One pod at a time: a drain never takes the leader and its standby together.
      spec: { maxUnavailable: 1, selector: { matchLabels: { "app.kubernetes.io/name": NAME } } },
    } satisfies KubeObject,
  ];
}

/** The objects as one YAML stream, for `kubectl apply -f -`. */
export function manifestsYaml(objects: readonly KubeObject[]): string {
  return objects.map((object) => YAML.stringify(object)).join("---\n");
}
