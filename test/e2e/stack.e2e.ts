/**
 * The real Pulumi engine runs the real stack program (through the Automation API, file://
 * backend) against the GCE emulator: up, drift put back by refresh, destroy.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import {
  CLUSTER_STACK,
  desiredState,
  forwardingRuleShape,
  parseConfig,
  serviceStackName,
  type ClusterSnapshot,
  type RawConfig,
} from "../../model";
import { snapshotFromKubectlJson } from "../../watcher/kubectlDump";
import { repoRoot } from "../support/tooling/testenv-paths";
import { PulumiCommand } from "@pulumi/pulumi/automation";
import { FileBackend } from "../../stacks/checkpoints";
import { appliedFromDeployment, appliedOf } from "../../drift/applied";
import type { AppliedResource } from "../../drift/declared";
import { StackRunner, type StackRunnerOptions } from "../../stacks/runner";
import { PROJECT_NAME } from "../../stacks/project";
import { E2E_CONFIG, E2E_NODE } from "../support/e2e/cluster";
import { startTestEnv, type TestEnv } from "../support/e2e/env";

const config = parseConfig(E2E_CONFIG);

const SERVICE_UID = "0b0e2e00-1111-4222-8333-444455556666";
const LB = "a0b0e2e0011114222833344445555666";

const snapshot: ClusterSnapshot = {
  nodes: [E2E_NODE],
  services: [
    {
      namespace: "default",
      name: "web",
      uid: SERVICE_UID,
      type: "LoadBalancer",
      annotations: {},
      ports: [{ protocol: "TCP", port: 80 }],
      loadBalancerSourceRanges: [],
      deleting: false,
    },
  ],
};

describe("stack program on the real engine and the GCE emulator", function () {
  this.timeout(600_000);
  let env: TestEnv;
  let runner: StackRunner;
  const desired = desiredState(snapshot, config);
  const serviceStack = serviceStackName("default", "web");

  before(async () => {
    env = await startTestEnv({ withKube: false });
    env.gce.putInstance("node-1", { zone: "us-central1-a" });
    runner = new StackRunner({
      backendUrl: env.backendUrl,
      env: env.pulumiEnv,
      workDir: path.join(env.dir, "workspaces"),
      pulumiCommand: env.pulumiCommand,
    });
  });

  after(async () => {
    await env?.stop();
  });

  function gceResources(): string[] {
    return env.gce
      .listResources()
      .filter((resource) => resource.kind !== "instances")
      .map((resource) => `${resource.kind} ${resource.scope} ${resource.name}`);
  }

  it("up of the cluster stack and one Service stack creates exactly their resources", async () => {
    await runner.up(CLUSTER_STACK, { kind: "cluster" }, desired, { refresh: false });
    const outcome = await runner.up(serviceStack, { kind: "service", namespace: "default", name: "web" }, desired, {
      refresh: false,
    });
    // No address: under addressReservation transient (the default) the rule's IP is ephemeral.
    assert.deepEqual(gceResources(), [
      `backendServices us-central1 ${LB}`,
      "firewalls global k8s-e2e0cafe-node-http-hc",
      `firewalls global k8s-fw-${LB}`,
      `forwardingRules us-central1 ${LB}`,
      "healthChecks us-central1 k8s-e2e0cafe-node",
      "instanceGroups us-central1-a k8s-ig--e2e0cafe",
    ]);
    const rule = env.gce.listResources().find((resource) => resource.kind === "forwardingRules");
    const ip = rule?.properties.ipAddress;
    assert.equal(typeof ip, "string");
    assert.deepEqual(outcome.outputs.loadBalancers, {
      "default/web": {
        ingress: [ip],
        resources: {
          forwardingRules: [LB],
          backendServices: [LB],
          healthCheck: "k8s-e2e0cafe-node",
          firewalls: [`k8s-fw-${LB}`],
        },
        forwardingRuleShape: forwardingRuleShape(desired.services[0]),
      },
    });
  });

  it("read from the file backend, the stacks are what the CLI says they are, and reading them runs no CLI command", async () => {
    const options = (workDir: string, extra: Partial<StackRunnerOptions> = {}): StackRunnerOptions => ({
      backendUrl: env.backendUrl,
      env: env.pulumiEnv,
      workDir: path.join(env.dir, workDir),
      pulumiCommand: env.pulumiCommand,
      ...extra,
    });
    const viaCli = new StackRunner(options("workspaces-cli", { readCheckpoints: false }));
    // A restarted daemon whose CLI records every command and can only print its version.
    const fakeRoot = path.join(env.dir, "fake-pulumi");
    const commandLog = path.join(fakeRoot, "commands");
    fs.mkdirSync(path.join(fakeRoot, "bin"), { recursive: true });
    fs.writeFileSync(
      path.join(fakeRoot, "bin", "pulumi"),
      `#!/bin/sh\necho "$1 $2" >> '${commandLog}'\n[ "$1" = version ] && { echo v3.248.0; exit 0; }\nexit 1\n`,
      { mode: 0o755 },
    );
    const restarted = new StackRunner(
      options("workspaces-restarted", {
        pulumiCommand: await PulumiCommand.get({ root: fakeRoot, skipVersionCheck: true }),
      }),
    );
    const scopes = [
      { stack: CLUSTER_STACK, scope: { kind: "cluster" as const } },
      { stack: serviceStack, scope: { kind: "service" as const, namespace: "default", name: "web" } },
    ];
    assert.deepEqual(await restarted.listStacks(), [CLUSTER_STACK, serviceStack]);
    assert.deepEqual(await viaCli.listStacks(), [CLUSTER_STACK, serviceStack]);
    for (const { stack, scope } of scopes) {
      assert.deepEqual(await restarted.inspect(stack, scope), await viaCli.inspect(stack, scope));
      // What the leak check reads of every stack, every drift interval.
      assert.deepEqual(
        (await restarted.stackReader().exportStack(stack)).deployment,
        (await viaCli.stackReader().exportStack(stack)).deployment,
      );
    }
    assert.deepEqual(await restarted.stackReader().listStacks(), [CLUSTER_STACK, serviceStack]);
    assert.deepEqual(
      fs
        .readFileSync(commandLog, "utf8")
        .split("\n")
        .filter((line) => line !== "" && !line.startsWith("version ")),
      [],
    );
    // The outputs of an up come from the checkpoint it wrote: the same as `stack output` prints.
    const fromFile = await runner.up(serviceStack, scopes[1].scope, desired, { refresh: false });
    const fromCli = await viaCli.up(serviceStack, scopes[1].scope, desired, { refresh: false });
    assert.deepEqual(fromFile.outputs, fromCli.outputs);
    assert.deepEqual(Object.keys(fromFile.outputs).sort(), ["instanceGroups", "loadBalancers", "routes"]);
  });

  it("what a run's engine events say the stack applied is what its checkpoint records (the drift pass compares GCE with it)", async () => {
    const told = new Map<string, AppliedResource[] | undefined>();
    const reporting = new StackRunner({
      backendUrl: env.backendUrl,
      env: env.pulumiEnv,
      workDir: path.join(env.dir, "workspaces-applied"),
      pulumiCommand: env.pulumiCommand,
      onApplied: (stack, states) => told.set(stack, states === undefined ? undefined : appliedOf(states)),
    });
    await reporting.up(serviceStack, { kind: "service", namespace: "default", name: "web" }, desired, {
      refresh: true,
    });
    const read = new FileBackend(env.backendUrl.slice("file://".length)).readCheckpoint(PROJECT_NAME, serviceStack);
    assert.ok(read.kind === "read" && read.deployment !== undefined);
    const byId = (resources: AppliedResource[] | undefined): AppliedResource[] =>
      [...(resources ?? [])].sort((a, b) => a.id.localeCompare(b.id));
    assert.deepEqual(byId(told.get(serviceStack)), byId(appliedFromDeployment(read.deployment)));
    assert.deepEqual(
      byId(told.get(serviceStack)).map((resource) => resource.id),
      [`backendServices/us-central1/${LB}`, `firewalls/global/k8s-fw-${LB}`, `forwardingRules/us-central1/${LB}`],
    );
  });

  it("a gzipped checkpoint (PULUMI_DIY_BACKEND_GZIP) is read as the CLI reads it", async () => {
    const gzip = new StackRunner({
      backendUrl: env.backendUrl,
      env: { ...env.pulumiEnv, PULUMI_DIY_BACKEND_GZIP: "true" },
      workDir: path.join(env.dir, "workspaces-gzip"),
      pulumiCommand: env.pulumiCommand,
    });
    const scope = { kind: "service" as const, namespace: "default", name: "web" };
    const outcome = await gzip.up(serviceStack, scope, desired, { refresh: false });
    // The CLI replaced the plain checkpoint (backups aside): one checkpoint, gzipped.
    const checkpoints = fs
      .readdirSync(path.join(env.backendUrl.slice("file://".length), ".pulumi", "stacks", PROJECT_NAME))
      .filter((file) => /^service\.default\.web\.json(\.gz|\.zst)?$/.test(file));
    assert.deepEqual(checkpoints, [`${serviceStack}.json.gz`]);
    const read = new FileBackend(env.backendUrl.slice("file://".length)).readCheckpoint(PROJECT_NAME, serviceStack);
    assert.equal(read.kind, "read");
    const viaCli = new StackRunner({
      backendUrl: env.backendUrl,
      env: env.pulumiEnv,
      workDir: path.join(env.dir, "workspaces-cli-gzip"),
      pulumiCommand: env.pulumiCommand,
      readCheckpoints: false,
    });
    assert.deepEqual(await gzip.inspect(serviceStack, scope), await viaCli.inspect(serviceStack, scope));
    assert.deepEqual(outcome.outputs, (await viaCli.up(serviceStack, scope, desired, { refresh: false })).outputs);
  });

  it("a forwarding rule deleted out of band is put back by up with refresh", async () => {
    env.gce.deleteOutOfBand("forwardingRules", LB);
    assert.equal(gceResources().includes(`forwardingRules us-central1 ${LB}`), false);
    const outcome = await runner.up(serviceStack, { kind: "service", namespace: "default", name: "web" }, desired, {
      refresh: true,
    });
    // The rule's IP was ephemeral (addressReservation transient, the default): the rule comes back
    // on a new one and the firewall follows it. The daemon never runs this repair: it holds it with
    // IPChangeHeld (test/e2e/address-reservation.e2e.ts).
    assert.deepEqual(
      outcome.changed.map((change) => `${change.type} ${change.name} ${change.op}`),
      [
        "gcp:compute/forwardingRule:ForwardingRule default/web:forwarding-rule-tcp create",
        "gcp:compute/firewall:Firewall default/web:firewall update",
      ],
    );
    const rule = env.gce
      .listResources()
      .find((resource) => resource.kind === "forwardingRules" && resource.name === LB);
    const firewall = env.gce
      .listResources()
      .find((resource) => resource.kind === "firewalls" && resource.name === `k8s-fw-${LB}`);
    assert.deepEqual(firewall?.properties.destinationRanges, [rule?.properties.ipAddress]);
  });

  it("destroy of both stacks leaves the emulator empty and removes the stacks", async () => {
    await runner.destroyAndRemove(serviceStack);
    await runner.destroyAndRemove(CLUSTER_STACK);
    assert.deepEqual(gceResources(), []);
    assert.deepEqual(await runner.listStacks(), []);
  });

  it("every Service of the issue's fixture cluster applies on the emulator with GCE's rules", async () => {
    const fixtures = path.join(repoRoot(), "test", "fixtures");
    const { snapshot: fixture } = snapshotFromKubectlJson(
      fs.readFileSync(path.join(fixtures, "cluster.json"), "utf8"),
      "cluster.json",
    );
    const fixtureDesired = desiredState(
      fixture,
      parseConfig(JSON.parse(fs.readFileSync(path.join(fixtures, "config.json"), "utf8")) as RawConfig),
    );
    for (const [name, zone] of [
      ["node-a1", "a"],
      ["node-a2", "a"],
      ["node-b1", "b"],
      ["node-b2", "b"],
      ["node-c1", "c"],
    ])
      env.gce.putInstance(name, { zone: `us-central1-${zone}` });
    await runner.up(CLUSTER_STACK, { kind: "cluster" }, fixtureDesired, { refresh: false });
    const ingress: Record<string, unknown> = {};
    for (const service of fixtureDesired.services) {
      const outcome = await runner.up(
        service.stack,
        { kind: "service", namespace: service.namespace, name: service.name },
        fixtureDesired,
        { refresh: false },
      );
      ingress[service.key] = (outcome.outputs.loadBalancers as Record<string, { ingress: string[] }>)[
        service.key
      ].ingress;
    }
    const held = env.gce.listResources().filter((resource) => resource.kind !== "instances");
    const count = (kind: string): number => held.filter((resource) => resource.kind === kind).length;
    // web, local, internal, restricted, dns (two protocols): 6 backend services and forwarding rules; one
    // address, dns's, whose two rules share its IP (the others' IPs are ephemeral: addressReservation transient).
    assert.deepEqual(
      ["addresses", "backendServices", "forwardingRules", "firewalls", "healthChecks", "instanceGroups", "routes"].map(
        (kind) => `${kind}=${count(kind)}`,
      ),
      [
        "addresses=1",
        "backendServices=6",
        "forwardingRules=6",
        "firewalls=7",
        "healthChecks=2",
        "instanceGroups=2",
        "routes=5",
      ],
    );
    const internal = held.find(
      (resource) => resource.kind === "forwardingRules" && resource.properties.loadBalancingScheme === "INTERNAL",
    );
    assert.equal(internal?.properties.allowGlobalAccess, true);
    assert.equal(String(internal?.properties.subnetwork).endsWith("/subnetworks/ilb-subnet"), true);
    const dnsRules = held.filter(
      (resource) =>
        resource.kind === "forwardingRules" && String(resource.properties.description).includes("kube-system/dns"),
    );
    assert.deepEqual(dnsRules.map((rule) => rule.properties.ipProtocol).sort(), ["TCP", "UDP"]);
    assert.equal(dnsRules[0].properties.ipAddress, dnsRules[1].properties.ipAddress);
    assert.deepEqual(ingress["kube-system/dns"], [dnsRules[0].properties.ipAddress]);
    for (const service of [...fixtureDesired.services].reverse()) await runner.destroyAndRemove(service.stack);
    await runner.destroyAndRemove(CLUSTER_STACK);
    assert.deepEqual(gceResources(), []);
  });
});
