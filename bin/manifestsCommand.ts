/**
 * `dccm manifests`: every object of an in-cluster install as YAML, for `kubectl apply -f -`. The
 * same objects the deploy/ program declares (deploy/manifests.ts).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { parseArgs } from "node:util";
import {
  deployObjects,
  manifestsYaml,
  type BackendArgs,
  type DeployArgs,
  type SecretKeyRef,
  type SecretsArgs,
} from "../deploy/manifests";
import { splitInstallConfig } from "../deploy/stackConfig";
import { parseFlags, readConfigFile, UsageError } from "./options";

export const MANIFESTS_HELP = [
  "usage: dccm manifests --config FILE --image IMAGE [FLAG ...] | kubectl apply -f -",
  "prints the objects that run dccm in the cluster: ServiceAccount, RBAC (exactly what dccm calls), ConfigMap,",
  "Deployment (leader election, host network) and PodDisruptionBudget.",
  "  --config FILE                        the dccm config file the pods read (GCP, daemon and node controller keys);",
  "                                       its backendUrl and secretsProvider are used unless the flags below are given",
  "  --image IMAGE                        the image built from the Dockerfile (required)",
  "  --namespace NS                       of the ServiceAccount, ConfigMap, Deployment (default kube-system)",
  "  --replicas N                         default 2 (one leader, one standby)",
  "  --backend-url URL                    gs://BUCKET/PREFIX or https://api.pulumi.com (never file://: the pod's disk is lost on restart)",
  "  --backend-token-secret NAME/KEY      the Secret key holding the Pulumi Cloud access token",
  "  --backend-claim NAME                 a PersistentVolumeClaim holding a file:// backend instead of --backend-url",
  "  --backend-claim-rwx                  the claim is ReadWriteMany (needed for more than one replica)",
  "  --secrets-provider URL               stack encryption, e.g. gcpkms://projects/P/locations/L/keyRings/R/cryptoKeys/K",
  "  --passphrase-secret NAME/KEY         or a passphrase in a Secret (mounted as a file, never in the environment)",
  "  --gcp-credentials-secret NAME/KEY    a service account key; default: the node's metadata server (ADC)",
  "  --image-pull-policy POLICY           Always, IfNotPresent (default) or Never",
  "  --log-level LEVEL                    the daemon's --log-level",
  "  --no-node-controller                 the service controller only (no Node RBAC)",
  "  -h, --help                           print this help",
].join("\n");

const OPTIONS = {
  config: { type: "string" },
  image: { type: "string" },
  namespace: { type: "string" },
  replicas: { type: "string" },
  "backend-url": { type: "string" },
  "backend-token-secret": { type: "string" },
  "backend-claim": { type: "string" },
  "backend-claim-rwx": { type: "boolean" },
  "secrets-provider": { type: "string" },
  "passphrase-secret": { type: "string" },
  "gcp-credentials-secret": { type: "string" },
  "image-pull-policy": { type: "string" },
  "log-level": { type: "string" },
  "no-node-controller": { type: "boolean" },
  help: { type: "boolean", short: "h" },
} as const;

type Values = ReturnType<
  typeof parseArgs<{ options: typeof OPTIONS; strict: true; allowPositionals: false }>
>["values"];

/** `NAME/KEY` of a Secret. */
function parseSecretKeyRef(text: string, flag: string): SecretKeyRef {
  const slash = text.indexOf("/");
  if (slash <= 0 || slash === text.length - 1)
    throw new UsageError(`--${flag}: expected NAME/KEY of a Secret, got "${text}"`);
  return { name: text.slice(0, slash), key: text.slice(slash + 1) };
}

function backendArgs(values: Values, fromFile: string | undefined): BackendArgs | undefined {
  const claim = values["backend-claim"];
  if (claim !== undefined) {
    if (values["backend-url"] !== undefined)
      throw new UsageError("--backend-claim and --backend-url: give one backend");
    return { volumeClaim: claim, ...(values["backend-claim-rwx"] === true ? { readWriteMany: true } : {}) };
  }
  const url = values["backend-url"] ?? fromFile;
  if (url === undefined) return undefined;
  const token = values["backend-token-secret"];
  return {
    url,
    ...(token !== undefined ? { accessTokenSecret: parseSecretKeyRef(token, "backend-token-secret") } : {}),
  };
}

function secretsArgs(values: Values, fromFile: string | undefined): SecretsArgs | undefined {
  const passphrase = values["passphrase-secret"];
  const provider = values["secrets-provider"] ?? (passphrase === undefined ? fromFile : undefined);
  if (passphrase !== undefined && provider !== undefined)
    throw new UsageError("--passphrase-secret and --secrets-provider: give one way to encrypt the stacks");
  if (passphrase !== undefined) return { passphraseSecret: parseSecretKeyRef(passphrase, "passphrase-secret") };
  return provider !== undefined ? { provider } : undefined;
}

const PULL_POLICIES = ["Always", "IfNotPresent", "Never"] as const;

/** The deploy arguments of the command line; the config file's backendUrl and secretsProvider become `backend` and `secrets`. */
function manifestsArgs(values: Values, file: Record<string, unknown>): DeployArgs {
  const { config, backendUrl, secretsProvider } = splitInstallConfig(file);
  const replicas = values.replicas !== undefined ? Number(values.replicas) : undefined;
  if (replicas !== undefined && !Number.isInteger(replicas))
    throw new UsageError(`--replicas: expected a whole number, got "${values.replicas}"`);
  const pullPolicy = values["image-pull-policy"];
  if (pullPolicy !== undefined && !(PULL_POLICIES as readonly string[]).includes(pullPolicy))
    throw new UsageError(`--image-pull-policy: "${pullPolicy}" is not one of ${PULL_POLICIES.join(", ")}`);
  const credentials = values["gcp-credentials-secret"];
  return {
    image: values.image ?? "",
    config,
    // Undefined when neither is given: deployObjects names what is missing.
    backend: backendArgs(values, backendUrl) as BackendArgs,
    secrets: secretsArgs(values, secretsProvider) as SecretsArgs,
    ...(values.namespace !== undefined ? { namespace: values.namespace } : {}),
    ...(replicas !== undefined ? { replicas } : {}),
    ...(credentials !== undefined
      ? { gcpCredentialsSecret: parseSecretKeyRef(credentials, "gcp-credentials-secret") }
      : {}),
    ...(pullPolicy !== undefined ? { imagePullPolicy: pullPolicy as DeployArgs["imagePullPolicy"] } : {}),
    ...(values["log-level"] !== undefined ? { logLevel: values["log-level"] } : {}),
    ...(values["no-node-controller"] === true ? { nodeController: false } : {}),
  };
}

function parseManifestsFlags(argv: readonly string[]): Values {
  return parseFlags(
    () => parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: false }),
    Object.keys(OPTIONS),
  ).values;
}

/** The deploy arguments `dccm manifests ARGV` installs (ARGV without `--help`); throws UsageError. */
export function manifestsDeployArgs(argv: readonly string[]): DeployArgs {
  const values = parseManifestsFlags(argv);
  if (values.config === undefined)
    throw new UsageError("--config FILE is required (the dccm config file the pods read)");
  return manifestsArgs(values, readConfigFile(values.config));
}

export function runManifests(argv: string[]): number {
  if (parseManifestsFlags(argv).help === true) {
    process.stdout.write(`${MANIFESTS_HELP}\n`);
    return 0;
  }
  process.stdout.write(manifestsYaml(deployObjects(manifestsDeployArgs(argv))));
  return 0;
}

/**
 * The install files kept in the repository, each rendered from its one source: `npm run
 * render:install` writes them, test/unit/bin/manifestsCommand.test.ts fails when one is stale.
 */
export const CHECKED_IN_MANIFESTS_ARGV = [
  "--config",
  "examples/dccm-in-cluster.yaml",
  "--image",
  "REGISTRY/dccm:0.1.0",
] as const;

const CHECKED_IN_HEADER = [
  "# dccm for `kubectl apply -f deploy/manifests/dccm.yaml` (or a GitOps repository): every object of the install.",
  `# Generated by \`npm run render:install\` (\`dccm manifests ${CHECKED_IN_MANIFESTS_ARGV.join(" ")}\`); do not edit here.`,
  "# In your copy, replace the placeholders first:",
  "#   - the image REGISTRY/dccm:0.1.0: the image built from the Dockerfile;",
  "#   - in ConfigMap dccm-config: project, region, network, subnetwork, nodeTags, clusterName, clusterCIDR,",
  "#     backendUrl (gs://my-bucket/dccm: your bucket) and secretsProvider (your Cloud KMS key).",
  "# A config.yaml edited after rendering does not change dccm.io/config-sha256: after applying it, run",
  "# `kubectl -n kube-system rollout restart deployment dccm`. GCP access is the node's service account; for a",
  "# key or a passphrase in a Secret, render with `dccm manifests` (--gcp-credentials-secret, --passphrase-secret)",
  "# or install the chart (charts/dccm).",
].join("\n");

/** Path (from the repository root) → content of every checked-in install file. */
export function installFiles(root: string): Map<string, string> {
  const argv = CHECKED_IN_MANIFESTS_ARGV.map((arg) => (arg.startsWith("examples/") ? path.join(root, arg) : arg));
  return new Map([
    ["deploy/manifests/dccm.yaml", `${CHECKED_IN_HEADER}\n${manifestsYaml(deployObjects(manifestsDeployArgs(argv)))}`],
    // The chart's copy of the monitoring objects (Helm reads files inside the chart only).
    [
      "charts/dccm/files/monitoring.yaml",
      fs.readFileSync(path.join(root, "deploy", "monitoring", "monitoring.yaml"), "utf8"),
    ],
  ]);
}

/** `npm run render:install`: writes installFiles under `root`. */
export function writeInstallFiles(root: string): void {
  for (const [file, content] of installFiles(root)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), content);
  }
}
