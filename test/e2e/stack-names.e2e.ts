/**
 * Service stack names beyond Pulumi's 100 characters (real apiserver, engine and GCE emulator): a
 * Service in a 63-character namespace with a 40-character name is served under a shortened stack
 * name that records its key; a restarted daemon recognises the stack (no second stack, nothing
 * destroyed), removes the workspace folders of stacks the backend lacks, destroys the stack of a
 * deleted Service, and of one deleted while it was down, from the key the stack records.
 */
import * as assert from "node:assert/strict";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";
import { StackRunner } from "../../stacks/runner";
import { stackOutputs } from "../../stacks/deployment";
import { loadBalancerName, parseConfig } from "../../model";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { createNode, E2E_CONFIG, lbService } from "../support/e2e/cluster";
import { eventually } from "../support/wait";

const NS = `long-${"n".repeat(57)}x`;
const NAME_A = `service-a-${"a".repeat(30)}`;
const NAME_B = `service-b-${"b".repeat(30)}`;

/** The shortened form, written out independently of model/names.ts: 75 readable characters, `_`, 24 hex digits of SHA-256 over the key. */
function shortened(namespace: string, name: string): string {
  return (
    `service.${namespace}.${name}`.slice(0, 75) +
    "_" +
    crypto.createHash("sha256").update(`${namespace}/${name}`).digest("hex").slice(0, 24)
  );
}

describe("Service stack names beyond Pulumi's 100 characters", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon | undefined;
  let backend: StackRunner;
  const lb: Record<string, string> = {};
  const ip: Record<string, string> = {};
  const stackA = shortened(NS, NAME_A);
  const stackB = shortened(NS, NAME_B);

  const start = async (): Promise<void> => {
    daemon = new Daemon(daemonOptions(env, parseConfig(E2E_CONFIG), { leaderElection: false }));
    await daemon.start(() => assert.fail("leadership lost"));
    await daemon.idle();
  };
  const resourcesOf = (name: string): string[] =>
    env.gce
      .listResources()
      .filter((resource) => resource.name.includes(lb[name]))
      .map((resource) => `${resource.kind} ${resource.name}`);
  const gone = async (namespace: string, name: string): Promise<true | undefined> => {
    try {
      await core.readNamespacedService({ name, namespace });
      return undefined;
    } catch (error) {
      return error instanceof k8s.ApiException && error.code === 404 ? true : undefined;
    }
  };

  before(async () => {
    env = await startTestEnv();
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    backend = new StackRunner({
      backendUrl: env.backendUrl,
      env: env.pulumiEnv,
      workDir: path.join(env.dir, "inspect"),
      pulumiCommand: env.pulumiCommand,
      projectName: "dccm-e2e0cafe",
    });
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    await createNode(core, "node-a1", "us-central1-a");
    await core.createNamespace({ body: { metadata: { name: NS } } });
    await start();
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("a Service in a 63-character namespace with a 40-character name gets its IP, under a 100-character stack that records its key", async () => {
    assert.equal(NS.length, 63);
    for (const [namespace, name] of [
      [NS, NAME_A],
      [NS, NAME_B],
      ["default", "web"],
    ]) {
      const created = await core.createNamespacedService({
        namespace,
        body: { ...lbService(name), metadata: { name, namespace } },
      });
      lb[name] = loadBalancerName(created.metadata?.uid ?? "");
    }
    for (const [namespace, name] of [
      [NS, NAME_A],
      [NS, NAME_B],
      ["default", "web"],
    ]) {
      ip[name] = await eventually(
        `${namespace}/${name}'s ingress`,
        async () => (await core.readNamespacedService({ name, namespace })).status?.loadBalancer?.ingress?.[0]?.ip,
      );
    }
    await daemon?.idle();
    assert.equal(stackA.length, 100);
    assert.deepEqual(await backend.listStacks(), ["cluster", "service.default.web", stackA, stackB].sort());
    const deployment = (await backend.stackReader().exportStack(stackA)).deployment as Record<string, unknown>;
    assert.equal(stackOutputs(deployment).dccmServiceKey, `${NS}/${NAME_A}`);
    assert.equal(
      stackOutputs(
        (await backend.stackReader().exportStack("service.default.web")).deployment as Record<string, unknown>,
      ).dccmServiceKey,
      undefined,
    );
    assert.deepEqual(resourcesOf(NAME_A), [
      `backendServices ${lb[NAME_A]}`,
      `firewalls k8s-fw-${lb[NAME_A]}`,
      `forwardingRules ${lb[NAME_A]}`,
    ]);
  });

  it("after a restart the stacks are recognised: no second stack, nothing created or destroyed; a stray workspace folder is removed, the stacks' kept", async () => {
    await daemon?.stop();
    const workspaces = path.join(env.dir, "state", "workspaces");
    const stray = path.join(workspaces, "service.default.killed");
    fs.mkdirSync(path.join(stray, "sub"), { recursive: true });
    assert.ok(fs.existsSync(path.join(workspaces, stackA)), "the shortened stack's workspace, from its runs");
    env.gce.clearHistory();
    await start();
    assert.deepEqual(env.gce.history(), []);
    assert.deepEqual(await backend.listStacks(), ["cluster", "service.default.web", stackA, stackB].sort());
    assert.equal(fs.existsSync(stray), false, "the stray workspace folder removed");
    assert.deepEqual(
      fs.readdirSync(workspaces).filter((name) => name === stackA || name === stackB),
      [stackA, stackB].sort(),
    );
    for (const name of [NAME_A, NAME_B]) {
      assert.deepEqual(
        (await core.readNamespacedService({ name, namespace: NS })).status?.loadBalancer?.ingress?.map(
          (ingress) => ingress.ip,
        ),
        [ip[name]],
      );
    }
  });

  it("deleting the Service destroys its load balancer and removes its stack", async () => {
    await core.deleteNamespacedService({ name: NAME_A, namespace: NS });
    await eventually(`${NAME_A} gone from the API`, () => gone(NS, NAME_A));
    await eventually(
      "its stack removed",
      async () =>
        JSON.stringify(await backend.listStacks()) === JSON.stringify(["cluster", "service.default.web", stackB].sort())
          ? true
          : undefined,
      30_000,
      50,
    );
    assert.deepEqual(resourcesOf(NAME_A), []);
  });

  it("a Service deleted while the daemon is down: the next start destroys its stack, from the key the stack records", async () => {
    await daemon?.stop();
    await core.deleteNamespacedService({ name: NAME_B, namespace: NS });
    const terminating = await core.readNamespacedService({ name: NAME_B, namespace: NS });
    await core.replaceNamespacedService({
      name: NAME_B,
      namespace: NS,
      body: { ...terminating, metadata: { ...terminating.metadata, finalizers: [] } },
    });
    await eventually(`${NAME_B} gone from the API`, () => gone(NS, NAME_B));
    await start();
    assert.deepEqual(resourcesOf(NAME_B), []);
    assert.deepEqual(await backend.listStacks(), ["cluster", "service.default.web"]);
    assert.deepEqual(
      (await core.readNamespacedService({ name: "web", namespace: "default" })).status?.loadBalancer?.ingress?.map(
        (ingress) => ingress.ip,
      ),
      [ip.web],
    );
  });
});
