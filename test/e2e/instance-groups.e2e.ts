/**
 * A zone with more nodes than one instance group holds, on a real kube-apiserver,
 * the real engine and the GCE emulator, both held to a limit of 2 instances per group (config
 * instanceGroupLimit and the emulator's test-only instanceGroupMaxInstances): every node is served,
 * the backend service lists every group, and nodes never move between groups.
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";
import { loadBalancerName, parseConfig } from "../../model";
import { parseNodeConfig } from "../../controllers/node";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { createNode, E2E_CONFIG, lbService } from "../support/e2e/cluster";
import { counter } from "../support/metrics";
import { eventually } from "../support/wait";

const ZONE = "us-central1-a";
const IG = "k8s-ig--e2e0cafe";
const IG2 = "k8s-ig2--e2e0cafe";
const IG3 = "k8s-ig3--e2e0cafe";

describe("dccm daemon: a zone beyond the instance-group limit", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon;
  let webLb = "";

  /** Group name → its instances' names, sorted, for the zone's groups. */
  const memberships = (): Record<string, string[]> =>
    Object.fromEntries(
      env.gce
        .listResources()
        .filter((r) => r.kind === "instanceGroups" && r.scope === ZONE)
        .map((r) => [
          r.name,
          ((r.properties.instances ?? []) as string[]).map((link) => link.split("/").pop() ?? "").sort(),
        ]),
    );
  /** The groups web's backend service lists, in its order. */
  const backendGroups = (): string[] => {
    const backendService = env.gce.listResources().find((r) => r.kind === "backendServices" && r.name === webLb);
    return ((backendService?.properties.backends ?? []) as Array<{ group: string }>).map(
      (backend) => backend.group.split(`/zones/${ZONE}/instanceGroups/`)[1] ?? backend.group,
    );
  };
  const clusterRetries = (): Promise<number> =>
    counter(daemon.metrics.registry, "dccm_reconciles_total", { kind: "cluster", result: "retry" });
  const addNode = async (name: string): Promise<void> => {
    env.gce.putInstance(name, { zone: ZONE });
    await createNode(core, name, ZONE);
  };

  before(async () => {
    env = await startTestEnv({ gce: { instanceGroupMaxInstances: 2 } });
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    for (const name of ["node-1", "node-2", "node-3", "node-4", "node-5"]) await addNode(name);
    daemon = new Daemon(
      daemonOptions(env, parseConfig({ ...E2E_CONFIG, instanceGroupLimit: 2 }), {
        nodes: parseNodeConfig({ computeEndpoint: env.gce.computeEndpoint, nodeLifecyclePeriod: "1h" }, []),
      }),
    );
    await daemon.start(() => assert.fail("leadership lost"));
    const created = await core.createNamespacedService({ namespace: "default", body: lbService("web") });
    webLb = loadBalancerName(created.metadata?.uid ?? "");
    await eventually(
      "web's ingress",
      async () =>
        (await core.readNamespacedService({ name: "web", namespace: "default" })).status?.loadBalancer?.ingress?.[0]
          ?.ip,
    );
    await daemon.idle();
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("5 nodes at 2 per group: three groups hold all of them, and the backend service lists every group", () => {
    assert.deepEqual(memberships(), { [IG]: ["node-1", "node-2"], [IG2]: ["node-3", "node-4"], [IG3]: ["node-5"] });
    assert.deepEqual(backendGroups(), [IG, IG2, IG3]);
  });

  it("a sixth node joins (sorting before all the others): it takes the free place, nobody moves", async () => {
    const retries = await clusterRetries();
    await addNode("node-0");
    await eventually("node-0 in a group", () =>
      Object.values(memberships()).flat().includes("node-0") ? true : undefined,
    );
    await daemon.idle();
    assert.deepEqual(memberships(), {
      [IG]: ["node-1", "node-2"],
      [IG2]: ["node-3", "node-4"],
      [IG3]: ["node-0", "node-5"],
    });
    assert.deepEqual(backendGroups(), [IG, IG2, IG3]);
    assert.equal(await clusterRetries(), retries);
  });

  it("a node of a numbered group leaves: no other node moves; when its group empties, the backend service drops it before it is deleted", async () => {
    const retries = await clusterRetries();
    await core.deleteNode({ name: "node-3" });
    await eventually("node-3 out of its group", () =>
      memberships()[IG2]?.includes("node-3") === false ? true : undefined,
    );
    await daemon.idle();
    assert.deepEqual(memberships(), { [IG]: ["node-1", "node-2"], [IG2]: ["node-4"], [IG3]: ["node-0", "node-5"] });
    assert.deepEqual(backendGroups(), [IG, IG2, IG3]);

    await core.deleteNode({ name: "node-4" });
    await eventually("the emptied group gone", () => (memberships()[IG2] === undefined ? true : undefined));
    await daemon.idle();
    assert.deepEqual(memberships(), { [IG]: ["node-1", "node-2"], [IG3]: ["node-0", "node-5"] });
    assert.deepEqual(backendGroups(), [IG, IG3]);
    assert.equal(await clusterRetries(), retries);
  });

  it("after a restart, the recorded membership holds: a node joining meanwhile fills the lowest free place, nobody moves", async () => {
    await daemon.stop();
    await addNode("node-6");
    daemon = new Daemon(
      daemonOptions(env, parseConfig({ ...E2E_CONFIG, instanceGroupLimit: 2 }), {
        nodes: parseNodeConfig({ computeEndpoint: env.gce.computeEndpoint, nodeLifecyclePeriod: "1h" }, []),
      }),
    );
    await daemon.start(() => assert.fail("leadership lost"));
    await eventually("node-6 in a group", () =>
      Object.values(memberships()).flat().includes("node-6") ? true : undefined,
    );
    await daemon.idle();
    assert.deepEqual(memberships(), { [IG]: ["node-1", "node-2"], [IG2]: ["node-6"], [IG3]: ["node-0", "node-5"] });
    assert.deepEqual(backendGroups(), [IG, IG2, IG3]);
  });
});
