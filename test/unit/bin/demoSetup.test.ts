// What `dccm demo` writes and registers, before anything runs: the config file (read back by the
// daemon's own parser), the shell file, the Nodes a kubelet would register, the emulator's seeding
// URL, and the instructions. The demo run against all of it: test/e2e/demo.e2e.ts.
import * as assert from "node:assert/strict";
import * as YAML from "yaml";
import {
  demoConfig,
  demoConfigText,
  demoFiles,
  demoInstructions,
  demoShellEnv,
  DEMO_NODES,
  instanceSeedUrl,
  kubeletNode,
  shellQuote,
} from "../../../bin/demoSetup";
import { splitConfig } from "../../../daemon/config";
import { parseConfig } from "../../../model";

const LAUNCHED = {
  kubeconfig: "/tmp/dccm-kube-x/admin.kubeconfig",
  computeEndpoint: "http://127.0.0.1:4000/compute/v1/",
  backendUrl: "gs://dccm-e2e-state/dccm",
  dir: "/tmp/dccm-e2e-y",
  env: {
    PATH: "/repo/emulator/gce/bin:/repo/.testenv/bin:/usr/bin:/bin",
    PULUMI_HOME: "/tmp/dccm-e2e-y/pulumi-home",
    PULUMI_CONFIG_PASSPHRASE: "dccm-e2e-passphrase",
    STORAGE_EMULATOR_HOST: "127.0.0.1:4001",
  },
};

describe("bin/demoSetup", () => {
  it("the config file: every key a part of dccm knows, the GCP picture valid, the environment's endpoint and bucket", () => {
    const text = demoConfigText(demoConfig(LAUNCHED, "/tmp/dccm-e2e-y/demo", "30s"));
    assert.equal(
      text,
      [
        "project: dccm-test",
        "region: us-central1",
        "network: k8s-net",
        "subnetwork: k8s-subnet",
        "nodeTags:",
        "  - k8s-node",
        "clusterName: demo",
        "clusterId: dccmdemo",
        "clusterCIDR: 10.64.0.0/14",
        "stateDir: /tmp/dccm-e2e-y/demo",
        "backendUrl: gs://dccm-e2e-state/dccm",
        "computeEndpoint: http://127.0.0.1:4000/compute/v1/",
        "driftInterval: 30s",
        "",
      ].join("\n"),
    );
    const shared = splitConfig(YAML.parse(text) as Record<string, unknown>);
    assert.deepEqual(shared.unknown, []);
    assert.deepEqual(shared.node, { computeEndpoint: "http://127.0.0.1:4000/compute/v1/" });
    assert.equal(parseConfig(shared.model).clusterId, "dccmdemo");
  });

  it("the shell file: KUBECONFIG, the launcher's variables with this demo's passphrase, and only the directories it put on PATH", () => {
    assert.equal(
      demoShellEnv(LAUNCHED, "s3cr'et", "/usr/bin:/bin"),
      [
        "# dccm demo: points kubectl, dccm and the pulumi CLI at the demo's environment (gone when the demo stops).",
        "export KUBECONFIG='/tmp/dccm-kube-x/admin.kubeconfig'",
        "export PULUMI_HOME='/tmp/dccm-e2e-y/pulumi-home'",
        "export STORAGE_EMULATOR_HOST='127.0.0.1:4001'",
        "export PULUMI_CONFIG_PASSPHRASE='s3cr'\\''et'",
        "export PATH='/repo/emulator/gce/bin:/repo/.testenv/bin':\"$PATH\"",
        "",
      ].join("\n"),
    );
  });

  for (const [text, quoted] of [
    ["plain", "'plain'"],
    ["", "''"],
    ["it's $HOME", "'it'\\''s $HOME'"],
  ] as const) {
    it(`shellQuote(${JSON.stringify(text)}) is ${quoted}`, () => assert.equal(shellQuote(text), quoted));
  }

  it("three Nodes in two zones, each registered as a kubelet with --cloud-provider=external registers it", () => {
    assert.deepEqual(
      DEMO_NODES.map((node) => [node.zone, node.name, node.podCIDR]),
      [
        ["us-central1-a", "node-a1", "10.64.1.0/24"],
        ["us-central1-a", "node-a2", "10.64.2.0/24"],
        ["us-central1-b", "node-b1", "10.64.3.0/24"],
      ],
    );
    assert.deepEqual(kubeletNode(DEMO_NODES[2] ?? assert.fail("three Nodes")), {
      metadata: {
        name: "node-b1",
        labels: { "kubernetes.io/hostname": "node-b1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64" },
      },
      spec: {
        podCIDR: "10.64.3.0/24",
        podCIDRs: ["10.64.3.0/24"],
        taints: [{ key: "node.cloudprovider.kubernetes.io/uninitialized", value: "true", effect: "NoSchedule" }],
      },
    });
  });

  it("a VM is seeded on the emulator's host, beside its Compute API", () => {
    assert.equal(
      instanceSeedUrl(LAUNCHED.computeEndpoint, DEMO_NODES[0] ?? assert.fail("three Nodes")),
      "http://127.0.0.1:4000/emulator/instances/dccm-test/us-central1-a/node-a1",
    );
  });

  it("the instructions: where everything is, the config, and each command with the config file", () => {
    const files = demoFiles("/tmp/dccm-e2e-y/demo");
    const configText = "project: dccm-test\nregion: us-central1\n";
    const shown = { ...LAUNCHED, files, configText, statusUrl: "http://127.0.0.1:4002" };
    const firewall =
      "http://127.0.0.1:4000/compute/v1/projects/dccm-test/global/firewalls/k8s-fw-a$(kubectl get service hello -o jsonpath='{.metadata.uid}' | tr -d - | cut -c1-31)";
    assert.equal(
      demoInstructions(shown, 30_000),
      [
        "dccm demo: dccm daemon runs against a kube-apiserver, the GCE emulator (project dccm-test) and a gs:// bucket; Ctrl-C stops everything.",
        "  kubeconfig   /tmp/dccm-kube-x/admin.kubeconfig",
        "  Compute API  http://127.0.0.1:4000/compute/v1/ (the GCE emulator: emulator/gce/README.md)",
        "  stacks       gs://dccm-e2e-state/dccm (fake-gcs-server, a GCS bucket as in production)",
        "  Nodes        node-a1, node-a2 in us-central1-a; node-b1 in us-central1-b: VMs in the emulator, registered as kubelets with --cloud-provider=external register",
        "  config       /tmp/dccm-e2e-y/demo/dccm.yaml",
        "  environment  /tmp/dccm-e2e-y/demo/env.sh (KUBECONFIG, the bucket, the passphrase, the pulumi CLI)",
        "  daemon log   /tmp/dccm-e2e-y/demo/daemon.log",
        "The config, as every dccm command below reads it:",
        "    project: dccm-test",
        "    region: us-central1",
        "In another shell, in this checkout:",
        "  source /tmp/dccm-e2e-y/demo/env.sh",
        "  kubectl get nodes -o custom-columns=NAME:.metadata.name,PROVIDER-ID:.spec.providerID,TAINTS:.spec.taints[*].key",
        "  curl -s 'http://127.0.0.1:4000/emulator/resources?kind=routes'           # a route per Node: its pod range to its VM",
        "  curl -s 'http://127.0.0.1:4000/emulator/resources?kind=instanceGroups'   # an instance group per zone",
        "  npx dccm status --url http://127.0.0.1:4002",
        "  kubectl create service loadbalancer hello --tcp=80:8080",
        "  kubectl get service hello --watch                 # EXTERNAL-IP: the emulator's address, in seconds",
        "  npx dccm preview --config /tmp/dccm-e2e-y/demo/dccm.yaml     # exit 0: nothing to change; 2: what the daemon is about to do",
        `  curl -s -X DELETE ${firewall}`,
        "  npx dccm drift --config /tmp/dccm-e2e-y/demo/dccm.yaml       # exit 0: GCE is as applied; 2: the firewall is missing",
        "  npx dccm refresh default/hello          # back now; else within 33s (the next drift pass)",
        "  npx dccm gc --config /tmp/dccm-e2e-y/demo/dccm.yaml --dry-run   # what dccm made that no stack holds: nothing",
        "",
      ].join("\n"),
    );
  });
});
