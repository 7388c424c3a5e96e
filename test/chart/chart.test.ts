// The Helm chart (charts/dccm) is deploy/manifests.ts in another form: for each value set, `helm
// template` gives the objects `dccm manifests` prints for the equivalent flags (after the
// normalisation of test/support/chart.ts: Helm's labels, the config file's formatting, ordering);
// it refuses what the install refuses, with the same words; `helm lint --strict` passes. Needs the
// helm binary of the offline environment: `npm run test:chart` builds it first.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as YAML from "yaml";
import { manifestsDeployArgs } from "../../bin/manifestsCommand";
import { DeployArgsError, deployObjects, manifestsYaml, type DeployArgs } from "../../deploy/manifests";
import {
  CHART_DIR,
  HELM_LABELS,
  helm,
  helmFailure,
  helmTemplate,
  helmTemplateRun,
  normalise,
  objectKey,
  parseObjects,
  valuesFile,
  type ChartObject,
} from "../support/chart";
import { repoRoot } from "../support/tooling/testenv-paths";

const CONFIG = {
  project: "my-project",
  region: "us-central1",
  network: "k8s-net",
  subnetwork: "k8s-subnet",
  nodeTags: ["k8s-node"],
  clusterName: "prod",
  clusterCIDR: "10.64.0.0/14",
  driftInterval: "10m",
};
const APP_VERSION = (YAML.parse(fs.readFileSync(path.join(CHART_DIR, "Chart.yaml"), "utf8")) as { appVersion: string })
  .appVersion;

/** A dccm config file holding `config`, for `dccm manifests --config`. */
function configFile(config: Record<string, unknown>): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "dccm-chart-")), "dccm.yaml");
  fs.writeFileSync(file, YAML.stringify(config));
  return file;
}

/** What `dccm manifests FLAGS` prints (with `extra` DeployArgs no flag covers), parsed. */
function manifests(
  flags: string[],
  extra: Partial<DeployArgs> = {},
  config: Record<string, unknown> = CONFIG,
): ChartObject[] {
  const args = manifestsDeployArgs(["--config", configFile(config), ...flags]);
  return parseObjects(manifestsYaml(deployObjects({ ...args, ...extra })));
}

interface Row {
  name: string;
  values: Record<string, unknown>;
  flags: string[];
  extra?: Partial<DeployArgs>;
  namespace?: string;
}

const IMAGE = { repository: "ghcr.io/acme/dccm" };
const REQUIRED = { image: IMAGE, config: CONFIG };

const ROWS: Row[] = [
  {
    name: "defaults (only what is required: image, gs:// backend, passphrase)",
    values: {
      ...REQUIRED,
      backend: { url: "gs://acme-dccm/prod" },
      secrets: { passphraseSecret: { name: "dccm-secrets", key: "passphrase" } },
    },
    flags: [
      "--image",
      `ghcr.io/acme/dccm:${APP_VERSION}`,
      "--backend-url",
      "gs://acme-dccm/prod",
      "--passphrase-secret",
      "dccm-secrets/passphrase",
    ],
  },
  {
    name: "gs:// with a GCP key, three replicas, an image tag, pull policy Always",
    values: {
      ...REQUIRED,
      image: { ...IMAGE, tag: "0.2.0", pullPolicy: "Always" },
      replicas: 3,
      backend: { url: "gs://acme-dccm/prod" },
      secrets: { passphraseSecret: { name: "dccm-secrets", key: "passphrase" } },
      gcpCredentialsSecret: { name: "dccm-gcp", key: "key.json" },
    },
    flags: [
      "--image",
      "ghcr.io/acme/dccm:0.2.0",
      "--image-pull-policy",
      "Always",
      "--replicas",
      "3",
      "--backend-url",
      "gs://acme-dccm/prod",
      "--passphrase-secret",
      "dccm-secrets/passphrase",
      "--gcp-credentials-secret",
      "dccm-gcp/key.json",
    ],
  },
  {
    name: "Pulumi Cloud with its token",
    values: {
      ...REQUIRED,
      backend: { url: "https://api.pulumi.com", accessTokenSecret: { name: "pulumi", key: "token" } },
      secrets: { passphraseSecret: { name: "dccm-secrets", key: "passphrase" } },
    },
    flags: [
      "--image",
      `ghcr.io/acme/dccm:${APP_VERSION}`,
      "--backend-url",
      "https://api.pulumi.com",
      "--backend-token-secret",
      "pulumi/token",
      "--passphrase-secret",
      "dccm-secrets/passphrase",
    ],
  },
  {
    name: "a ReadWriteOnce claim, one replica",
    values: {
      ...REQUIRED,
      replicas: 1,
      backend: { volumeClaim: "dccm-state" },
      secrets: { passphraseSecret: { name: "dccm-secrets", key: "passphrase" } },
    },
    flags: [
      "--image",
      `ghcr.io/acme/dccm:${APP_VERSION}`,
      "--replicas",
      "1",
      "--backend-claim",
      "dccm-state",
      "--passphrase-secret",
      "dccm-secrets/passphrase",
    ],
  },
  {
    name: "a ReadWriteMany claim, two replicas",
    values: {
      ...REQUIRED,
      backend: { volumeClaim: "dccm-state", readWriteMany: true },
      secrets: { passphraseSecret: { name: "dccm-secrets", key: "passphrase" } },
    },
    flags: [
      "--image",
      `ghcr.io/acme/dccm:${APP_VERSION}`,
      "--backend-claim",
      "dccm-state",
      "--backend-claim-rwx",
      "--passphrase-secret",
      "dccm-secrets/passphrase",
    ],
  },
  {
    name: "KMS secrets provider, log level debug",
    values: {
      ...REQUIRED,
      backend: { url: "gs://acme-dccm/prod" },
      secrets: { provider: "gcpkms://projects/p/locations/global/keyRings/dccm/cryptoKeys/stacks" },
      logLevel: "debug",
    },
    flags: [
      "--image",
      `ghcr.io/acme/dccm:${APP_VERSION}`,
      "--backend-url",
      "gs://acme-dccm/prod",
      "--secrets-provider",
      "gcpkms://projects/p/locations/global/keyRings/dccm/cryptoKeys/stacks",
      "--log-level",
      "debug",
    ],
  },
  {
    name: "node controller off",
    values: {
      ...REQUIRED,
      backend: { url: "gs://acme-dccm/prod" },
      secrets: { provider: "gcpkms://projects/p/locations/global/keyRings/dccm/cryptoKeys/stacks" },
      nodeController: false,
    },
    flags: [
      "--image",
      `ghcr.io/acme/dccm:${APP_VERSION}`,
      "--backend-url",
      "gs://acme-dccm/prod",
      "--secrets-provider",
      "gcpkms://projects/p/locations/global/keyRings/dccm/cryptoKeys/stacks",
      "--no-node-controller",
    ],
  },
  {
    name: "another namespace (the release's)",
    namespace: "dccm-system",
    values: {
      ...REQUIRED,
      backend: { url: "gs://acme-dccm/prod" },
      secrets: { passphraseSecret: { name: "dccm-secrets", key: "passphrase" } },
    },
    flags: [
      "--image",
      `ghcr.io/acme/dccm:${APP_VERSION}`,
      "--namespace",
      "dccm-system",
      "--backend-url",
      "gs://acme-dccm/prod",
      "--passphrase-secret",
      "dccm-secrets/passphrase",
    ],
  },
  {
    name: "node selector, extra tolerations, resources (DeployArgs no flag sets)",
    values: {
      ...REQUIRED,
      backend: { url: "gs://acme-dccm/prod" },
      secrets: { passphraseSecret: { name: "dccm-secrets", key: "passphrase" } },
      nodeSelector: { "node-role.kubernetes.io/control-plane": "" },
      tolerations: [{ key: "dedicated", operator: "Equal", value: "infra", effect: "NoExecute" }],
      resources: { requests: { cpu: "250m", memory: "1Gi" }, limits: { memory: "3Gi" } },
    },
    flags: [
      "--image",
      `ghcr.io/acme/dccm:${APP_VERSION}`,
      "--backend-url",
      "gs://acme-dccm/prod",
      "--passphrase-secret",
      "dccm-secrets/passphrase",
    ],
    extra: {
      nodeSelector: { "node-role.kubernetes.io/control-plane": "" },
      tolerations: [{ key: "dedicated", operator: "Equal", value: "infra", effect: "NoExecute" }],
      resources: { requests: { cpu: "250m", memory: "1Gi" }, limits: { memory: "3Gi" } },
    },
  },
];

describe("chart: charts/dccm renders what `dccm manifests` prints", () => {
  for (const row of ROWS) {
    it(`${row.name}: the same objects, and helm lint --strict passes`, () => {
      const chart = helmTemplate(row.values, row.namespace);
      assert.deepEqual(normalise(chart), normalise(manifests(row.flags, row.extra)));
      // Helm's labels are there (the normalisation drops nothing else).
      for (const object of chart)
        assert.deepEqual(
          HELM_LABELS.filter((label) => object.metadata.labels?.[label] === undefined),
          [],
          objectKey(object),
        );
      const lint = helm([
        "lint",
        "--strict",
        CHART_DIR,
        "--namespace",
        row.namespace ?? "kube-system",
        "--values",
        valuesFile(row.values),
      ]);
      assert.equal(lint.status, 0, lint.stdout + lint.stderr);
    });
  }

  it("a change of the config rolls the pods (dccm.io/config-sha256), a new image tag keeps the config hash", () => {
    const base = ROWS[0].values;
    const hash = (values: Record<string, unknown>): unknown => {
      const deployment = helmTemplate(values).find((object) => object.kind === "Deployment") as
        { spec: { template: { metadata: { annotations: Record<string, string> } } } } | undefined;
      return deployment?.spec.template.metadata.annotations["dccm.io/config-sha256"];
    };
    assert.notEqual(hash({ ...base, config: { ...CONFIG, driftInterval: "5m" } }), hash(base));
    assert.equal(hash({ ...base, image: { ...IMAGE, tag: "0.2.0" } }), hash(base));
  });

  it("monitoring.enabled adds deploy/monitoring/monitoring.yaml's PodMonitor and PrometheusRule, in the release's namespace", () => {
    const values = { ...ROWS[0].values, monitoring: { enabled: true } };
    const extra = helmTemplate(values, "dccm-system").filter(
      (object) => object.apiVersion === "monitoring.coreos.com/v1",
    );
    const expected = parseObjects(
      fs.readFileSync(path.join(repoRoot(), "deploy", "monitoring", "monitoring.yaml"), "utf8"),
    ).map((object) => ({
      ...object,
      metadata: { ...object.metadata, namespace: "dccm-system" },
    }));
    assert.deepEqual(normalise(extra), expected);
    assert.deepEqual(
      helmTemplate(ROWS[0].values).filter((object) => object.apiVersion === "monitoring.coreos.com/v1"),
      [],
    );
  });
});

interface Refusal {
  name: string;
  values: Record<string, unknown>;
  flags: string[];
  config?: Record<string, unknown>;
}

const REFUSALS: Refusal[] = [
  {
    name: "a file:// backend",
    values: { ...REQUIRED, backend: { url: "file:///var/lib/dccm" }, secrets: { provider: "gcpkms://k" } },
    flags: [
      "--image",
      "ghcr.io/acme/dccm:0.1.0",
      "--backend-url",
      "file:///var/lib/dccm",
      "--secrets-provider",
      "gcpkms://k",
    ],
  },
  {
    name: "two replicas on a ReadWriteOnce claim",
    values: { ...REQUIRED, backend: { volumeClaim: "dccm-state" }, secrets: { provider: "gcpkms://k" } },
    flags: ["--image", "ghcr.io/acme/dccm:0.1.0", "--backend-claim", "dccm-state", "--secrets-provider", "gcpkms://k"],
  },
  {
    name: "no secrets",
    values: { ...REQUIRED, backend: { url: "gs://acme-dccm/prod" } },
    flags: ["--image", "ghcr.io/acme/dccm:0.1.0", "--backend-url", "gs://acme-dccm/prod"],
  },
  {
    name: "no image, no backend",
    values: { config: CONFIG, secrets: { passphraseSecret: { name: "dccm-secrets", key: "passphrase" } } },
    flags: ["--passphrase-secret", "dccm-secrets/passphrase"],
  },
  {
    name: "Pulumi Cloud without a token, the passphrase as a provider",
    values: { ...REQUIRED, backend: { url: "https://api.pulumi.com" }, secrets: { provider: "passphrase" } },
    flags: [
      "--image",
      "ghcr.io/acme/dccm:0.1.0",
      "--backend-url",
      "https://api.pulumi.com",
      "--secrets-provider",
      "passphrase",
    ],
  },
  {
    name: "config keys the Deployment sets, leader election off with two replicas",
    values: {
      image: IMAGE,
      config: { ...CONFIG, stateDir: "/data", listen: ":9000", leaderElection: false },
      backend: { url: "gs://acme-dccm/prod" },
      secrets: { provider: "gcpkms://k" },
    },
    flags: [
      "--image",
      "ghcr.io/acme/dccm:0.1.0",
      "--backend-url",
      "gs://acme-dccm/prod",
      "--secrets-provider",
      "gcpkms://k",
    ],
    config: { ...CONFIG, stateDir: "/data", listen: ":9000", leaderElection: false },
  },
];

/** The refusal of `dccm manifests` (deployObjects' DeployArgsError message). */
function refusalOfManifests(refusal: Refusal): string {
  try {
    manifests(refusal.flags, {}, refusal.config);
  } catch (error) {
    if (error instanceof DeployArgsError) return error.message;
    throw error;
  }
  throw new Error(`dccm manifests accepted ${refusal.name}`);
}

describe("chart: charts/dccm refuses what the install refuses, with the same words", () => {
  for (const refusal of REFUSALS) {
    it(`${refusal.name}: helm's error is deployObjects' message`, () => {
      const run = helmTemplateRun(refusal.values);
      assert.equal(run.status, 1);
      assert.equal(helmFailure(run), refusalOfManifests(refusal));
    });
  }

  it("the exact message of a file:// backend (what the user reads)", () => {
    assert.equal(
      helmFailure(helmTemplateRun(REFUSALS[0].values)),
      "invalid deploy arguments:\n  backend.url: file:///var/lib/dccm is on the pod's own disk and every stack is lost when the pod restarts; use gs://BUCKET/PREFIX, https://api.pulumi.com, or backend.volumeClaim",
    );
  });

  it("both backends, both ways to encrypt: refused (the flags refuse them as a usage error)", () => {
    const run = helmTemplateRun({
      ...REQUIRED,
      backend: { url: "gs://acme-dccm/prod", volumeClaim: "dccm-state" },
      secrets: { provider: "gcpkms://k", passphraseSecret: { name: "dccm-secrets", key: "passphrase" } },
    });
    assert.equal(
      helmFailure(run),
      "invalid deploy arguments:\n  backend.url and backend.volumeClaim: give one backend\n  secrets.provider and secrets.passphraseSecret: give one way to encrypt the stacks",
    );
  });

  it("values.schema.json: a wrong type or an unknown key fails before any template runs", () => {
    const base = ROWS[0].values;
    const schemaErrors = (values: Record<string, unknown>): string[] =>
      helmTemplateRun(values)
        .stderr.split("\n")
        .filter((line) => line.startsWith("- "));
    assert.deepEqual(schemaErrors({ ...base, replicas: "two" }), ["- at '/replicas': got string, want integer"]);
    assert.deepEqual(schemaErrors({ ...base, nodeController: "disabled" }), [
      "- at '/nodeController': got string, want boolean",
    ]);
    assert.deepEqual(schemaErrors({ ...base, replica: 1 }), ["- at '': additional properties 'replica' not allowed"]);
    assert.deepEqual(schemaErrors({ ...base, image: { ...IMAGE, pullPolicy: "always" } }), [
      "- at '/image/pullPolicy': value must be one of 'Always', 'IfNotPresent', 'Never'",
    ]);
  });
});
