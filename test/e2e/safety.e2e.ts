/**
 * What dccm must never do, end to end: two daemons of different load balancer
 * classes on one cluster never touch each other's Services, and a daemon pointed at another
 * cluster with the same config file and backend refuses the stacks it finds.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { isDeepStrictEqual } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";

import { loadBalancerName, parseConfig, LB_FINALIZER } from "../../model";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { startKube, type KubeEnv } from "../support/e2e/kube";
import { createNode, E2E_CONFIG, lbService } from "../support/e2e/cluster";
import { eventually } from "../support/wait";

const CLASS_A = "dccm.io/team-a";
const CLASS_B = "dccm.io/team-b";

/** Every stack a daemon ran a pulumi operation on. */
/**
 * The stacks each daemon (by identity) started a pulumi run of. Recorded at the start of each run,
 * not read from dccm_stack_runs_total: that metric drops a stack's series once the stack is gone.
 */
const runsBy = new Map<string, Set<string>>();
function recordRuns(identity: string): { identity: string; onRunStart: (stack: string) => void } {
  runsBy.set(identity, new Set());
  return { identity, onRunStart: (stack) => runsBy.get(identity)?.add(stack) };
}

function stacksRun(identity: string): string[] {
  return [...(runsBy.get(identity) ?? [])].sort();
}

async function readService(core: k8s.CoreV1Api, name: string): Promise<k8s.V1Service | undefined> {
  try {
    return await core.readNamespacedService({ name, namespace: "default" });
  } catch (error) {
    if (error instanceof k8s.ApiException && error.code === 404) return undefined;
    throw error;
  }
}

describe("safety: what dccm never touches", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemonA: Daemon;
  let daemonB: Daemon;
  let wrongCluster: KubeEnv | undefined;
  const configA = { ...E2E_CONFIG, loadBalancerClasses: [CLASS_A] };

  before(async () => {
    env = await startTestEnv();
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    await createNode(core, "node-a1", "us-central1-a");
    const backendB = path.join(env.dir, "backend-b");
    fs.mkdirSync(backendB, { recursive: true });
    // Two controllers of one cluster keep their own state and cluster ID (their instance groups differ).
    daemonA = new Daemon(
      daemonOptions(env, parseConfig(configA), {
        stateDir: path.join(env.dir, "state-a"),
        leaderElection: false,
        // Compute access, as in a cluster: a change that replaces a forwarding rule pins its IP first.
        firstUpGuard: { computeEndpoint: env.gce.computeEndpoint },
        ...recordRuns("team-a"),
      }),
    );
    daemonB = new Daemon(
      daemonOptions(
        env,
        parseConfig({ ...E2E_CONFIG, clusterId: "e2e0beef", clusterName: "e2e-b", loadBalancerClasses: [CLASS_B] }),
        {
          stateDir: path.join(env.dir, "state-b"),
          backendUrl: `file://${backendB}`,
          leaderElection: false,
          firstUpGuard: { computeEndpoint: env.gce.computeEndpoint },
          ...recordRuns("team-b"),
        },
      ),
    );
    await daemonA.start(() => assert.fail("A lost leadership"));
    await daemonB.start(() => assert.fail("B lost leadership"));
  });

  after(async () => {
    await Promise.allSettled([daemonA?.stop(), daemonB?.stop()]);
    await wrongCluster?.stop();
    await env?.stop();
  });

  it("each daemon gives only its own class a load balancer; the other's finalizer and status stay", async () => {
    await core.createNamespacedService({
      namespace: "default",
      body: lbService("web-a", { loadBalancerClass: CLASS_A }),
    });
    await core.createNamespacedService({
      namespace: "default",
      body: lbService("web-b", { loadBalancerClass: CLASS_B }),
    });
    for (const name of ["web-a", "web-b"])
      await eventually(
        `${name}'s ingress`,
        async () => (await readService(core, name))?.status?.loadBalancer?.ingress?.[0]?.ip,
      );
    await Promise.all([daemonA.idle(), daemonB.idle()]);
    const webB = await readService(core, "web-b");
    assert.deepEqual(webB?.metadata?.finalizers, [LB_FINALIZER]);
    assert.equal(webB?.status?.loadBalancer?.ingress?.length, 1);
    assert.deepEqual(stacksRun("team-a"), ["cluster", "service.default.web-a"]);
    assert.deepEqual(stacksRun("team-b"), ["cluster", "service.default.web-b"]);
  });

  it("a daemon pointed at another cluster with the same config file and backend refuses to start and touches nothing", async () => {
    wrongCluster = await startKube();
    const before = env.gce
      .listResources()
      .map((resource) => `${resource.kind} ${resource.name}`)
      .sort();
    const impostor = new Daemon(
      daemonOptions(env, parseConfig(configA), {
        kubeConfig: wrongCluster.kubeConfig,
        stateDir: path.join(env.dir, "state-impostor"),
        leaderElection: false,
        ...recordRuns("impostor"),
      }),
    );
    try {
      await assert.rejects(
        impostor.start(() => undefined),
        (error: unknown) => {
          assert.ok(error instanceof Error);
          assert.equal(error.name, "ForeignStackError");
          assert.match(
            error.message,
            /^stack cluster belongs to the cluster whose kube-system Namespace has UID [0-9a-f-]{36}, and this cluster's is [0-9a-f-]{36}: refusing to touch it/,
          );
          return true;
        },
      );
    } finally {
      await impostor.stop();
    }
    assert.deepEqual(stacksRun("impostor"), []);
    assert.deepEqual(
      env.gce
        .listResources()
        .map((resource) => `${resource.kind} ${resource.name}`)
        .sort(),
      before,
    );
    assert.equal((await readService(core, "web-a"))?.status?.loadBalancer?.ingress?.length, 1);
  });

  it("updates and deletes stay with the owner; the other daemon's Service keeps its finalizer and status throughout", async () => {
    const webA = await readService(core, "web-a");
    const lbA = loadBalancerName(webA?.metadata?.uid ?? "");
    await core.patchNamespacedService(
      {
        name: "web-a",
        namespace: "default",
        body: {
          spec: {
            ports: [
              { name: "http", protocol: "TCP", port: 80, targetPort: 8080 },
              { name: "https", protocol: "TCP", port: 443, targetPort: 8443 },
            ],
          },
        },
      },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    await eventually("web-a's forwarding rule with port 443", async () => {
      const rule = env.gce
        .listResources()
        .find((resource) => resource.kind === "forwardingRules" && resource.name === lbA);
      return isDeepStrictEqual(rule?.properties.ports, ["80", "443"]) ? true : undefined;
    });
    await core.deleteNamespacedService({ name: "web-a", namespace: "default" });
    await eventually("web-a gone", async () => ((await readService(core, "web-a")) === undefined ? true : undefined));
    await Promise.all([daemonA.idle(), daemonB.idle()]);
    const webB = await readService(core, "web-b");
    assert.deepEqual(webB?.metadata?.finalizers, [LB_FINALIZER]);
    assert.equal(webB?.status?.loadBalancer?.ingress?.length, 1);
    await core.deleteNamespacedService({ name: "web-b", namespace: "default" });
    await eventually("web-b gone", async () => ((await readService(core, "web-b")) === undefined ? true : undefined));
    assert.deepEqual(stacksRun("team-a"), ["cluster", "service.default.web-a"]);
    assert.deepEqual(stacksRun("team-b"), ["cluster", "service.default.web-b"]);
    assert.deepEqual(
      env.gce
        .listResources()
        .filter((resource) => resource.kind === "forwardingRules")
        .map((resource) => resource.name),
      [],
    );
  });
});
