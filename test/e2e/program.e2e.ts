/**
 * index.ts as CI runs it: `pulumi up` of the project through the CLI and its Node.js language host
 * (not an inline program), with config dccm:* and a kubectl-style snapshot file.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { execFile } from "node:child_process";
import * as YAML from "yaml";
import { LocalWorkspace, type Stack } from "@pulumi/pulumi/automation";
import { loadBalancerName } from "../../model";
import { startTestEnv, type TestEnv } from "../support/e2e/env";
import { repoRoot } from "../support/tooling/testenv-paths";

const WEB_UID = "c1000001-7a1b-4c2d-8e3f-a0b1c2d3e4f5";
const API_UID = "c1000002-7a1b-4c2d-8e3f-a0b1c2d3e4f5";
const WEB_LB = loadBalancerName(WEB_UID);
const API_LB = loadBalancerName(API_UID);

function dump(apiProtocol: string): unknown {
  const service = (name: string, uid: string, protocol: string): unknown => ({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "default", uid },
    spec: { type: "LoadBalancer", ports: [{ protocol, port: 443 }] },
  });
  return {
    apiVersion: "v1",
    kind: "List",
    items: [
      {
        apiVersion: "v1",
        kind: "Node",
        metadata: { name: "node-1", uid: "c0000001-0000-4000-8000-000000000001" },
        spec: { providerID: "gce://dccm-test/us-central1-a/node-1" },
      },
      service("web", WEB_UID, "TCP"),
      service("api", API_UID, apiProtocol),
    ],
  };
}

describe("index.ts through the pulumi CLI and language host", function () {
  this.timeout(600_000);
  let env: TestEnv;
  let stack: Stack;
  let snapshotPath: string;

  before(async () => {
    env = await startTestEnv({ withKube: false });
    env.gce.putInstance("node-1", { zone: "us-central1-a" });
    const project = path.join(env.dir, "project");
    fs.mkdirSync(project);
    // The project points at the built program; the language host finds @pulumi/pulumi through node_modules.
    fs.writeFileSync(
      path.join(project, "Pulumi.yaml"),
      `name: dccm\nruntime: nodejs\nmain: ${path.join(repoRoot(), "dist", "index.js")}\n`,
    );
    fs.symlinkSync(path.join(repoRoot(), "node_modules"), path.join(project, "node_modules"));
    // Next to Pulumi.yaml and named relatively, as CI does: the language host's cwd is elsewhere (the program's directory).
    snapshotPath = path.join(project, "cluster.json");
    stack = await LocalWorkspace.createOrSelectStack(
      { stackName: "ci", workDir: project },
      { envVars: env.pulumiEnv, pulumiCommand: env.pulumiCommand },
    );
    await stack.setAllConfig({
      "dccm:snapshot": { value: "cluster.json" },
      "dccm:project": { value: "dccm-test" },
      "dccm:region": { value: "us-central1" },
      "dccm:network": { value: "k8s-net" },
      "dccm:nodeTags": { value: '["k8s-node"]' },
      "dccm:clusterName": { value: "ci" },
      "dccm:clusterId": { value: "c1c1" },
    });
  });

  after(async () => {
    await env?.stop();
  });

  function names(): string[] {
    return env.gce
      .listResources()
      .filter((resource) => resource.kind !== "instances")
      .map((resource) => `${resource.kind} ${resource.name}`);
  }

  // Sorted by kind then name, as the emulator lists them (web's UID sorts before api's). The
  // program's default is addressReservation always (program/stackProgram.ts withProgramDefaults):
  // each Service holds its address <lb>.
  const everything = [
    `addresses ${WEB_LB}`,
    `addresses ${API_LB}`,
    `backendServices ${WEB_LB}`,
    `backendServices ${API_LB}`,
    "firewalls k8s-c1c1-node-http-hc",
    `firewalls k8s-fw-${WEB_LB}`,
    `firewalls k8s-fw-${API_LB}`,
    `forwardingRules ${WEB_LB}`,
    `forwardingRules ${API_LB}`,
    "healthChecks k8s-c1c1-node",
    "instanceGroups k8s-ig--c1c1",
  ];

  it("up of scope all creates the cluster's and both Services' resources and exports their IPs", async () => {
    fs.writeFileSync(snapshotPath, JSON.stringify(dump("TCP")));
    const result = await stack.up();
    assert.deepEqual(names(), everything);
    const loadBalancers = result.outputs.loadBalancers.value as Record<string, { ingress: string[] }>;
    assert.deepEqual(Object.keys(loadBalancers), ["default/api", "default/web"]);
    const webAddress = env.gce
      .listResources()
      .find((resource) => resource.kind === "addresses" && resource.name === WEB_LB);
    assert.deepEqual(loadBalancers["default/web"].ingress, [webAddress?.properties.address]);
  });

  it("a Service turned invalid fails the run with its message and keeps its load balancer", async () => {
    fs.writeFileSync(snapshotPath, JSON.stringify(dump("SCTP")));
    await assert.rejects(stack.up(), (error: Error) => {
      assert.match(
        error.message,
        /Service default\/api: spec\.ports\[0\]\.protocol: SCTP is not supported by GCE load balancers \(TCP or UDP\)/,
      );
      return true;
    });
    assert.deepEqual(names(), everything);
  });

  it("docs/guides/ci.md's stack program block as pasted, in a plain non-interactive bash: its own file backend and stack, the preview of both Services, nothing created", async () => {
    const readme = fs.readFileSync(path.join(repoRoot(), "docs", "guides", "ci.md"), "utf8");
    const start = readme.indexOf("    unset PULUMI_BACKEND_URL ");
    const end = readme.indexOf("\n\n", start);
    assert.ok(start > 0 && end > start, "the stack program block is in docs/guides/ci.md");
    const pasted = readme
      .slice(start, end)
      .split("\n")
      .map((line) => line.replace(/^ {4}/, ""));
    assert.equal(pasted.at(-1), "pulumi preview");
    // What its comment asks for: the other keys as dccm:<key>, and the project the emulator holds.
    const otherKeys = [
      "pulumi config set dccm:region us-central1",
      "pulumi config set dccm:network k8s-net",
      "pulumi config set -- dccm:nodeTags '[\"k8s-node\"]'",
      "pulumi config set dccm:clusterName ci",
      "pulumi config set dccm:clusterId c1c2",
    ];
    const script = [
      "set -e",
      ...pasted.slice(0, -1).map((line) => line.replace(" my-project ", " dccm-test ")),
      ...otherKeys,
      pasted.at(-1) ?? "",
    ].join("\n");
    const checkout = path.join(env.dir, "checkout");
    fs.mkdirSync(checkout);
    fs.writeFileSync(
      path.join(checkout, "Pulumi.yaml"),
      `name: dccm\nruntime: nodejs\nmain: ${path.join(repoRoot(), "dist", "index.js")}\n`,
    );
    fs.symlinkSync(path.join(repoRoot(), "node_modules"), path.join(checkout, "node_modules"));
    fs.writeFileSync(path.join(checkout, "cluster.json"), JSON.stringify(dump("TCP")));
    const before = names();
    // Not blocking this process: the emulator the preview talks to answers from it.
    const run = await new Promise<{ status: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        "bash",
        ["-c", script],
        { cwd: checkout, env: { ...process.env, ...env.pulumiEnv }, timeout: 540_000 },
        (error, stdout, stderr) =>
          resolve({ status: error === null ? 0 : typeof error.code === "number" ? error.code : -1, stdout, stderr }),
      );
    });
    assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
    // Its own backend in the checkout (PULUMI_BACKEND_URL unset first, as it says), not the environment's.
    assert.deepEqual(
      fs
        .readdirSync(path.join(checkout, ".pulumi-state", ".pulumi", "stacks", "dccm"))
        .filter((file) => file.endsWith(".json")),
      ["ci.json"],
    );
    assert.deepEqual(
      (YAML.parse(fs.readFileSync(path.join(checkout, "Pulumi.ci.yaml"), "utf8")) as { config: unknown }).config,
      {
        "dccm:snapshot": "cluster.json",
        "dccm:scope": "all",
        "dccm:project": "dccm-test",
        "dccm:region": "us-central1",
        "dccm:network": "k8s-net",
        "dccm:nodeTags": '["k8s-node"]',
        "dccm:clusterName": "ci",
        "dccm:clusterId": "c1c2",
      },
    );
    const previewed = run.stdout.slice(run.stdout.indexOf("Previewing update (ci)"));
    for (const service of ["default/web", "default/api"]) assert.ok(previewed.includes(` ${service} `), previewed);
    assert.match(previewed, /\nResources:\n {4}\+ \d+ to create\n/);
    // A preview: GCE as it was.
    assert.deepEqual(names(), before);
  });

  it("destroy leaves the emulator empty", async () => {
    await stack.destroy();
    assert.deepEqual(names(), []);
  });
});
