// End-to-end check of the GCE emulator (emulator/gce) under the REAL Pulumi engine
// (.testenv/bin/pulumi, built by `bash scripts/testenv`): the engine picks the emulator's
// `pulumi-resource-gcp` plugin from $PATH for @pulumi/gcp 9.37.0 resources, creates a load
// balancer's resources in the emulator (after a preview full of unknowns), leaves them alone when
// nothing changed, updates a mutable field in place, corrects out-of-band drift and recreates a
// forwarding rule deleted behind its back (`up --refresh`), replaces the forwarding rule
// (delete-before-replace, same name) when an immutable field changes, and destroys everything.

import * as assert from "node:assert/strict";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";

import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";
import { LocalWorkspace, PulumiCommand, type Stack } from "@pulumi/pulumi/automation";

import { type GceEmulator, type ResourceListing, startGceEmulator } from "../../emulator/gce";
import type { JsonObject } from "../../emulator/gce/json";
import { requireTestenvBinary, testenvBinDir } from "../support/tooling/testenv-paths";

const PROJECT = "dccm-test";
const REGION = "us-central1";
const LB = "e2e-lb";
const FIREWALL = "k8s-fw-e2e-lb";
const DESCRIPTION = '{"kubernetes.io/service-name":"default/e2e-lb"}';

/** What the tests change between updates. */
const settings = { portRange: "80-80", sourceRanges: ["0.0.0.0/0"] };

/** The inline Pulumi program: what a ServiceLoadBalancer declares for one external TCP Service. */
function program(): Promise<Record<string, pulumi.Output<string>>> {
  const common = { project: PROJECT, region: REGION };
  const address = new gcp.compute.Address("address", {
    ...common,
    name: LB,
    addressType: "EXTERNAL",
    networkTier: "PREMIUM",
    description: DESCRIPTION,
  });
  const healthCheck = new gcp.compute.RegionHealthCheck("health-check", {
    ...common,
    name: LB,
    checkIntervalSec: 8,
    timeoutSec: 1,
    healthyThreshold: 1,
    unhealthyThreshold: 3,
    httpHealthCheck: { port: 10256, requestPath: "/healthz" },
  });
  const backendService = new gcp.compute.RegionBackendService("backend-service", {
    ...common,
    name: LB,
    loadBalancingScheme: "EXTERNAL",
    protocol: "TCP",
    sessionAffinity: "NONE",
    healthChecks: healthCheck.selfLink,
  });
  const forwardingRule = new gcp.compute.ForwardingRule("forwarding-rule", {
    ...common,
    name: LB,
    ipAddress: address.address,
    ipProtocol: "TCP",
    portRange: settings.portRange,
    loadBalancingScheme: "EXTERNAL",
    networkTier: "PREMIUM",
    backendService: backendService.selfLink,
    description: DESCRIPTION,
  });
  const firewall = new gcp.compute.Firewall("firewall", {
    project: PROJECT,
    name: FIREWALL,
    network: "default",
    // A secret input: the plugin must accept it and hand it back as a secret output.
    description: pulumi.secret(DESCRIPTION),
    allows: [{ protocol: "tcp", ports: ["80"] }],
    sourceRanges: settings.sourceRanges,
    targetTags: ["e2e-node"],
  });
  return Promise.resolve({
    ip: forwardingRule.ipAddress,
    firewallDescription: firewall.description.apply((d) => d ?? ""),
  });
}

const FINGERPRINT_RE = /^[A-Za-z0-9+/]{11}=$/;

/** Checks the volatile computed fields' format and replaces them with placeholders. */
function stable(r: ResourceListing): ResourceListing {
  const p: JsonObject = { ...r.properties };
  assert.match(String(p.id), /^1\d{18}$/, `${r.kind}/${r.name} id`);
  assert.ok(!Number.isNaN(Date.parse(String(p.creationTimestamp))), `${r.kind}/${r.name} creationTimestamp`);
  assert.match(String(p.fingerprint), FINGERPRINT_RE, `${r.kind}/${r.name} fingerprint`);
  p.id = "<id>";
  p.creationTimestamp = "<timestamp>";
  p.fingerprint = "<fingerprint>";
  if (p.labelFingerprint !== undefined) {
    assert.match(String(p.labelFingerprint), FINGERPRINT_RE, `${r.kind}/${r.name} labelFingerprint`);
    p.labelFingerprint = "<fingerprint>";
  }
  return { ...r, properties: p };
}

function expectedResources(gce: GceEmulator): ResourceListing[] {
  const link = (rel: string): string => `${gce.computeEndpoint}projects/${PROJECT}/${rel}`;
  const computed = (rel: string): JsonObject => ({
    id: "<id>",
    creationTimestamp: "<timestamp>",
    fingerprint: "<fingerprint>",
    selfLink: link(rel),
  });
  return [
    {
      kind: "addresses",
      project: PROJECT,
      scope: REGION,
      name: LB,
      properties: {
        name: LB,
        project: PROJECT,
        region: REGION,
        address: "203.0.113.1",
        addressType: "EXTERNAL",
        networkTier: "PREMIUM",
        description: DESCRIPTION,
        labelFingerprint: "<fingerprint>",
        ...computed(`regions/${REGION}/addresses/${LB}`),
      },
    },
    {
      kind: "backendServices",
      project: PROJECT,
      scope: REGION,
      name: LB,
      properties: {
        name: LB,
        project: PROJECT,
        region: REGION,
        loadBalancingScheme: "EXTERNAL",
        protocol: "TCP",
        sessionAffinity: "NONE",
        healthChecks: link(`regions/${REGION}/healthChecks/${LB}`),
        ...computed(`regions/${REGION}/backendServices/${LB}`),
      },
    },
    {
      kind: "firewalls",
      project: PROJECT,
      scope: "global",
      name: FIREWALL,
      properties: {
        name: FIREWALL,
        project: PROJECT,
        network: link("global/networks/default"),
        description: DESCRIPTION,
        allows: [{ protocol: "tcp", ports: ["80"] }],
        sourceRanges: settings.sourceRanges,
        targetTags: ["e2e-node"],
        direction: "INGRESS",
        priority: 1000,
        disabled: false,
        ...computed(`global/firewalls/${FIREWALL}`),
      },
    },
    {
      kind: "forwardingRules",
      project: PROJECT,
      scope: REGION,
      name: LB,
      properties: {
        name: LB,
        project: PROJECT,
        region: REGION,
        ipAddress: "203.0.113.1",
        ipProtocol: "TCP",
        portRange: settings.portRange,
        loadBalancingScheme: "EXTERNAL",
        networkTier: "PREMIUM",
        backendService: link(`regions/${REGION}/backendServices/${LB}`),
        description: DESCRIPTION,
        labelFingerprint: "<fingerprint>",
        ...computed(`regions/${REGION}/forwardingRules/${LB}`),
      },
    },
    {
      kind: "healthChecks",
      project: PROJECT,
      scope: REGION,
      name: LB,
      properties: {
        name: LB,
        project: PROJECT,
        region: REGION,
        type: "HTTP",
        checkIntervalSec: 8,
        timeoutSec: 1,
        healthyThreshold: 1,
        unhealthyThreshold: 3,
        httpHealthCheck: { port: 10256, requestPath: "/healthz" },
        ...computed(`regions/${REGION}/healthChecks/${LB}`),
      },
    },
  ];
}

describe("GCE emulator under the real Pulumi engine", function () {
  let gce: GceEmulator | undefined;
  let tmp: string | undefined;
  let stack: Stack | undefined;

  before(async function () {
    this.timeout(120_000);
    const pulumiBin = requireTestenvBinary("pulumi");
    gce = await startGceEmulator({ project: PROJECT, region: REGION });
    tmp = await fs.mkdtemp(path.join(os.tmpdir(), "dccm-gce-e2e-"));
    const home = path.join(tmp, "pulumi-home");
    const backend = path.join(tmp, "state");
    const workDir = path.join(tmp, "work");
    await Promise.all([fs.mkdir(home), fs.mkdir(backend), fs.mkdir(workDir)]);
    const pulumiCommand = await PulumiCommand.get({
      root: path.dirname(path.dirname(pulumiBin)),
      skipVersionCheck: true,
    });
    stack = await LocalWorkspace.createOrSelectStack(
      { projectName: "gce-emulator-e2e", stackName: "e2e", program },
      {
        pulumiCommand,
        pulumiHome: home,
        workDir,
        projectSettings: { name: "gce-emulator-e2e", runtime: "nodejs", backend: { url: `file://${backend}` } },
        envVars: {
          ...gce.env,
          PATH: [testenvBinDir(), gce.env.PATH ?? ""].join(path.delimiter),
          PULUMI_CONFIG_PASSPHRASE: "e2e-passphrase",
          PULUMI_HOME: home,
        },
      },
    );
  });

  after(async function () {
    this.timeout(60_000);
    await gce?.stop();
    if (tmp !== undefined) {
      await fs.rm(tmp, { recursive: true, force: true });
    }
  });

  it("previews the creation while every computed reference is still unknown", async function () {
    this.timeout(240_000);
    assert.ok(stack !== undefined && gce !== undefined);
    const preview = await stack.preview();
    assert.deepEqual(preview.changeSummary, { create: 6 });
    assert.deepEqual(gce.listResources(), []);
    // The provider answers SupportsPreview as @pulumi/gcp does: the engine asks Create for a plan
    // (preview: true), which creates nothing.
    assert.deepEqual(gce.calls(), { "POST /emulator/provider/check": 5, "POST /emulator/provider/create": 5 });
  });

  it("creates exactly the declared resources, with GCE's computed values", async function () {
    this.timeout(240_000);
    assert.ok(stack !== undefined && gce !== undefined);
    const up = await stack.up();
    assert.deepEqual(up.summary.resourceChanges, { create: 6 });
    assert.equal(up.outputs.ip?.value, "203.0.113.1");
    assert.equal(up.outputs.firewallDescription?.secret, true);
    assert.equal(up.outputs.firewallDescription?.value, DESCRIPTION);
    assert.deepEqual(gce.listResources().map(stable), expectedResources(gce));
  });

  it("changes nothing when nothing changed", async function () {
    this.timeout(240_000);
    assert.ok(stack !== undefined && gce !== undefined);
    const before = gce.listResources();
    const up = await stack.up();
    assert.deepEqual(up.summary.resourceChanges, { same: 6 });
    assert.deepEqual(gce.listResources(), before);
  });

  it("updates a mutable field in place", async function () {
    this.timeout(240_000);
    assert.ok(stack !== undefined && gce !== undefined);
    const firewallId = gce.listResources().find((r) => r.kind === "firewalls")?.properties.id;
    settings.sourceRanges = ["10.0.0.0/8", "192.168.0.0/16"];
    const up = await stack.up();
    assert.deepEqual(up.summary.resourceChanges, { update: 1, same: 5 });
    assert.deepEqual(gce.listResources().map(stable), expectedResources(gce));
    assert.equal(gce.listResources().find((r) => r.kind === "firewalls")?.properties.id, firewallId);
  });

  it("corrects a change made out of band on `up --refresh`", async function () {
    this.timeout(240_000);
    assert.ok(stack !== undefined && gce !== undefined);
    gce.patchOutOfBand("firewalls", FIREWALL, { sourceRanges: ["0.0.0.0/0"], priority: 10 });
    const up = await stack.up({ refresh: true });
    assert.deepEqual(up.summary.resourceChanges, { update: 1, same: 5 });
    assert.deepEqual(gce.listResources().map(stable), expectedResources(gce));
  });

  it("recreates a forwarding rule deleted out of band on `up --refresh`", async function () {
    this.timeout(240_000);
    assert.ok(stack !== undefined && gce !== undefined);
    const original = gce.listResources().find((r) => r.kind === "forwardingRules");
    assert.ok(original !== undefined);
    const res = await fetch(`${gce.endpoint}/emulator/resources/forwardingRules/${PROJECT}/${REGION}/${LB}`, {
      method: "DELETE",
    });
    assert.equal(res.status, 200);
    assert.deepEqual(
      gce.listResources().map((r) => r.kind),
      ["addresses", "backendServices", "firewalls", "healthChecks"],
    );

    const up = await stack.up({ refresh: true });
    assert.deepEqual(up.summary.resourceChanges, { create: 1, same: 5 });
    const recreated = gce.listResources().find((r) => r.kind === "forwardingRules");
    assert.ok(recreated !== undefined);
    assert.notEqual(recreated.properties.id, original.properties.id);
    assert.deepEqual(gce.listResources().map(stable), expectedResources(gce));
  });

  it("replaces the forwarding rule, deleting it first, when an immutable field changes", async function () {
    this.timeout(240_000);
    assert.ok(stack !== undefined && gce !== undefined);
    const before = gce.listResources().find((r) => r.kind === "forwardingRules");
    assert.ok(before !== undefined);
    settings.portRange = "8080-8080";
    const preview = await stack.preview();
    assert.deepEqual(preview.changeSummary, { replace: 1, same: 5 });
    const ops: string[] = [];
    const up = await stack.up({
      onEvent: (e) => {
        const meta = e.resourcePreEvent?.metadata;
        if (meta !== undefined && meta.type === "gcp:compute/forwardingRule:ForwardingRule") {
          ops.push(meta.op);
        }
      },
    });
    assert.deepEqual(up.summary.resourceChanges, { replace: 1, same: 5 });
    // deleteBeforeReplace: the old rule goes first, or the new one's name would collide (409).
    assert.deepEqual(ops, ["delete-replaced", "replace", "create-replacement"]);
    const after = gce.listResources().find((r) => r.kind === "forwardingRules");
    assert.ok(after !== undefined);
    assert.notEqual(after.properties.id, before.properties.id);
    assert.deepEqual(gce.listResources().map(stable), expectedResources(gce));
  });

  it("destroy leaves the emulator empty", async function () {
    this.timeout(240_000);
    assert.ok(stack !== undefined && gce !== undefined);
    const destroy = await stack.destroy();
    assert.deepEqual(destroy.summary.resourceChanges, { delete: 6 });
    assert.deepEqual(gce.listResources(), []);
  });
});
