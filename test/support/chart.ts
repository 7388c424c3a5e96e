// The Helm chart (charts/dccm) through the helm CLI of .testenv/bin, and the normalisation under
// which its objects are compared with what `dccm manifests` prints (deploy/manifests.ts):
//   1. Helm's labels (HELM_LABELS) are dropped from every object's metadata.labels;
//   2. the ConfigMap's config.yaml is compared parsed (Helm's toYaml sorts the keys and quotes
//      otherwise), and the pod template's dccm.io/config-sha256 must be the hash of its own
//      rendering's config.yaml before it is replaced by CONFIG_HASH;
//   3. the objects are ordered by `Kind namespace/name` (Helm orders them by kind, for install).
// Nothing else: every other field must be equal.
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as YAML from "yaml";
import { requireTestenvBinary, repoRoot } from "./tooling/testenv-paths";

export const CHART_DIR = path.join(repoRoot(), "charts", "dccm");
/** The labels the chart adds beside dccm's own (Helm's conventions). */
export const HELM_LABELS = [
  "app.kubernetes.io/instance",
  "app.kubernetes.io/version",
  "app.kubernetes.io/managed-by",
  "helm.sh/chart",
];
/** What the config hash annotation becomes once checked (normalisation 2). */
export const CONFIG_HASH = "<sha256 of the ConfigMap's config.yaml>";
const CONFIG_HASH_ANNOTATION = "dccm.io/config-sha256";

export interface ChartObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

export interface HelmRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the helm CLI of .testenv/bin with its own empty home (no repositories, no plugins). */
export function helm(args: readonly string[], kubeconfig?: string): HelmRun {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-helm-"));
  try {
    const run = spawnSync(requireTestenvBinary("helm"), [...args], {
      encoding: "utf8",
      env: {
        PATH: process.env.PATH ?? "",
        HOME: home,
        HELM_CACHE_HOME: path.join(home, "cache"),
        HELM_CONFIG_HOME: path.join(home, "config"),
        HELM_DATA_HOME: path.join(home, "data"),
        ...(kubeconfig !== undefined ? { KUBECONFIG: kubeconfig } : {}),
      },
    });
    if (run.error !== undefined) throw new Error(`helm ${args.join(" ")}: ${run.error.message}`, { cause: run.error });
    return { status: run.status, stdout: run.stdout, stderr: run.stderr };
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}

/** A values file holding `values`, in a fresh temporary directory. */
export function valuesFile(values: unknown): string {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "dccm-values-")), "values.yaml");
  fs.writeFileSync(file, YAML.stringify(values));
  return file;
}

/** `helm template dccm charts/dccm` with `values`; the run as it ended (status, output). */
export function helmTemplateRun(values: unknown, namespace = "kube-system"): HelmRun {
  return helm(["template", "dccm", CHART_DIR, "--namespace", namespace, "--values", valuesFile(values)]);
}

/** The objects of a YAML stream (empty documents, e.g. a template that rendered nothing, left out). */
export function parseObjects(text: string): ChartObject[] {
  return YAML.parseAllDocuments(text)
    .map((document) => document.toJSON() as unknown)
    .filter((object): object is ChartObject => object !== null && typeof object === "object");
}

/** The chart's objects for `values`; fails the test with helm's error when it refuses them. */
export function helmTemplate(values: unknown, namespace = "kube-system"): ChartObject[] {
  const run = helmTemplateRun(values, namespace);
  assert.equal(run.status, 0, `helm template failed:\n${run.stderr}`);
  return parseObjects(run.stdout);
}

/** The message of a `fail` in a template: helm's error line less its location prefix and trailer. */
export function helmFailure(run: HelmRun): string {
  const match =
    /^Error: execution error at \([^)]*\): ([\s\S]*?)\n*(?:Use --debug flag to render out invalid YAML\n*)?$/.exec(
      run.stderr,
    );
  return match?.[1] ?? run.stderr;
}

export function objectKey(object: ChartObject): string {
  return `${object.kind} ${object.metadata.namespace ?? ""}/${object.metadata.name}`;
}

function sha256(text: string): string {
  return crypto.createHash("sha256").update(text).digest("hex");
}

/** The normalisation of this file's header, on a deep copy. */
export function normalise(objects: readonly ChartObject[]): ChartObject[] {
  const copies = structuredClone(objects) as ChartObject[];
  const configMap = copies.find((object) => object.kind === "ConfigMap" && object.metadata.name === "dccm-config");
  const configText = (configMap?.data as Record<string, string> | undefined)?.["config.yaml"] ?? "";
  for (const object of copies) {
    const labels = object.metadata.labels;
    if (labels !== undefined) for (const label of HELM_LABELS) delete labels[label];
    if (object.kind === "ConfigMap" && object.metadata.name === "dccm-config") {
      const data = object.data as Record<string, string>;
      data["config.yaml"] = YAML.parse(data["config.yaml"] ?? "") as string;
    }
    if (object.kind === "Deployment") {
      const annotations = (object.spec as { template: { metadata: { annotations: Record<string, string> } } }).template
        .metadata.annotations;
      assert.equal(
        annotations[CONFIG_HASH_ANNOTATION],
        sha256(configText),
        "the config hash is the one of this rendering's config.yaml",
      );
      annotations[CONFIG_HASH_ANNOTATION] = CONFIG_HASH;
    }
  }
  return copies.sort((a, b) => objectKey(a).localeCompare(objectKey(b)));
}
