// The install files kept in the repository are the renderings of their one source
// (bin/manifestsCommand.ts installFiles): deploy/manifests/dccm.yaml is `dccm manifests` of
// examples/dccm-in-cluster.yaml, the chart's files/monitoring.yaml is deploy/monitoring's. No helm
// needed: the chart itself is compared with `dccm manifests` in test/chart.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as YAML from "yaml";
import { installFiles } from "../../../bin/manifestsCommand";
import { repoRoot } from "../../support/tooling/testenv-paths";

describe("bin/manifestsCommand: the checked-in install files", () => {
  const files = installFiles(repoRoot());

  it("are exactly deploy/manifests/dccm.yaml and the chart's copy of the monitoring objects", () => {
    assert.deepEqual([...files.keys()], ["deploy/manifests/dccm.yaml", "charts/dccm/files/monitoring.yaml"]);
  });

  for (const [file, content] of files) {
    it(`${file} is up to date (else: npm run render:install)`, () => {
      assert.equal(
        fs.readFileSync(path.join(repoRoot(), file), "utf8"),
        content,
        `${file} is stale: run \`npm run render:install\` and commit it`,
      );
    });
  }

  it("deploy/manifests/dccm.yaml holds the placeholders its header names, and every object of an install", () => {
    const text = fs.readFileSync(path.join(repoRoot(), "deploy", "manifests", "dccm.yaml"), "utf8");
    const objects = YAML.parseAllDocuments(text).map(
      (document) => document.toJSON() as { kind: string; metadata: { name: string } },
    );
    assert.deepEqual(
      objects.map((object) => `${object.kind} ${object.metadata.name}`),
      [
        "ServiceAccount dccm",
        "ClusterRole dccm:service-controller",
        "ClusterRoleBinding dccm:service-controller",
        "ClusterRole dccm:node-controller",
        "ClusterRoleBinding dccm:node-controller",
        "Role dccm",
        "RoleBinding dccm",
        "ConfigMap dccm-config",
        "Deployment dccm",
        "PodDisruptionBudget dccm",
      ],
    );
    const config = YAML.parse(
      (objects[7] as unknown as { data: Record<string, string> }).data["config.yaml"] ?? "",
    ) as Record<string, unknown>;
    assert.deepEqual(
      [config.project, config.backendUrl, config.secretsProvider],
      [
        "my-gcp-project",
        "gs://my-bucket/dccm",
        "gcpkms://projects/my-gcp-project/locations/global/keyRings/dccm/cryptoKeys/stacks",
      ],
    );
    assert.match(text, /^ {10}image: REGISTRY\/dccm:0\.1\.0$/m);
  });

  it("the chart's version and appVersion are dccm's (package.json)", () => {
    const chart = YAML.parse(fs.readFileSync(path.join(repoRoot(), "charts", "dccm", "Chart.yaml"), "utf8")) as {
      version: string;
      appVersion: string;
    };
    const version = (JSON.parse(fs.readFileSync(path.join(repoRoot(), "package.json"), "utf8")) as { version: string })
      .version;
    assert.deepEqual([chart.version, chart.appVersion], [version, version]);
  });
});
