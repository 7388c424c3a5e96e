/**
 * End to end (real apiserver, engine and GCE emulator): what proves a leaked resource
 * dccm's. (a) The stock CCM's internal load balancer of a Service dccm runs without `--adopt`: the
 * daemon writes the Service's ledger entry and fails on GCE's 409s; the stock CCM's resources, which
 * serve traffic, carry the same names and descriptions, and the leak check must call them
 * unproven: `dccm gc --yes` deletes none of them. (b) A daemon restarted with a mistyped clusterId
 * on the same cluster and backend refuses to start, creating nothing, and `dccm gc` with that
 * config lists and deletes nothing.
 */
import * as assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";
import { loadBalancerName, parseConfig } from "../../model";
import { backendProjects } from "../support/e2e/backendListing";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { createNode, E2E_CONFIG, lbService } from "../support/e2e/cluster";
import { seedStockCcm, STOCK_ILB_FINALIZER, STOCK_LB_CLEANUP_FINALIZER } from "../support/e2e/stockCcm";
import { eventually } from "../support/wait";

const CLI = path.resolve(__dirname, "../../bin/dccm.js");
const CLUSTER_ID = "e2e0cafe";
const MISTYPED = "other02";
const PROJECT = "dccm-test";
const REGION = "us-central1";
const RAW_CONFIG = { ...E2E_CONFIG, subnetwork: "k8s-subnet" };

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe("leaks: only what dccm created is proven", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon | undefined;
  let clusterUid: string;
  let ilbLb: string;
  /** The stock CCM's resources of Service default/ilb, `kind/scope/name` → description. */
  let stockResources: Map<string, string>;

  const configFile = (clusterId: string): string => {
    const file = path.join(env.dir, `dccm-${clusterId}.json`);
    fs.writeFileSync(file, JSON.stringify({ ...RAW_CONFIG, clusterId }));
    return file;
  };

  /** `dccm gc ARGS` as a child process (asynchronous: the emulator and apiserver answer from this process). */
  function gc(clusterId: string, ...args: string[]): Promise<Run> {
    const argv = [
      CLI,
      "gc",
      "--kubeconfig",
      env.kube.kubeconfigPath,
      "--config",
      configFile(clusterId),
      "--backend-url",
      env.backendUrl,
      "--compute-endpoint",
      env.gce.computeEndpoint,
      ...args,
    ];
    return new Promise((resolve, reject) => {
      execFile(
        process.execPath,
        argv,
        { env: { ...process.env, ...env.pulumiEnv }, timeout: 300_000 },
        (error, stdout, stderr) => {
          if (error !== null && typeof error.code !== "number") reject(new Error(argv.join(" "), { cause: error }));
          else resolve({ code: error === null ? 0 : Number(error.code), stdout, stderr });
        },
      );
    });
  }

  const gceState = (): string =>
    JSON.stringify(
      env.gce
        .listResources()
        .filter((r) => r.kind !== "instances")
        .map((r) => [r.kind, r.scope, r.name, r.properties]),
    );
  const gceNames = (): string[] =>
    env.gce
      .listResources()
      .filter((r) => r.kind !== "instances")
      .map((r) => `${r.kind}/${r.scope}/${r.name}`);
  const ledger = async (): Promise<k8s.V1ConfigMap> =>
    core.readNamespacedConfigMap({ name: "dccm-load-balancers", namespace: "kube-system" });

  before(async () => {
    env = await startTestEnv({ backend: "gs" });
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    clusterUid = (await core.readNamespace({ name: "kube-system" })).metadata?.uid ?? "";
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    await createNode(core, "node-a1", "us-central1-a");
    // The stock CCM served internal Service default/ilb (its finalizers on the Service, its
    // resources in GCE). No nodes in the seed: its instance group would be the cluster stack's
    // (a 409 on every cluster run), which is not what this test is about.
    const created = await core.createNamespacedService({
      namespace: "default",
      body: {
        metadata: {
          name: "ilb",
          namespace: "default",
          annotations: { "networking.gke.io/load-balancer-type": "Internal" },
          finalizers: [STOCK_LB_CLEANUP_FINALIZER, STOCK_ILB_FINALIZER],
        },
        spec: {
          type: "LoadBalancer",
          selector: { app: "ilb" },
          ports: [{ name: "p80", protocol: "TCP", port: 80, targetPort: 8080 }],
        },
      },
    });
    const uid = created.metadata?.uid ?? "";
    ilbLb = loadBalancerName(uid);
    const seed = seedStockCcm(
      env.gce,
      {
        project: PROJECT,
        region: REGION,
        network: "k8s-net",
        subnetwork: "k8s-subnet",
        clusterId: CLUSTER_ID,
        clusterName: "e2e",
        nodeTags: ["k8s-node"],
      },
      [
        {
          namespace: "default",
          name: "ilb",
          uid,
          scheme: "Internal",
          ports: [{ port: 80, protocol: "TCP", nodePort: created.spec?.ports?.[0]?.nodePort ?? 0 }],
          externalTrafficPolicy: "Cluster",
        },
      ],
      [],
    );
    stockResources = new Map(
      env.gce
        .listResources()
        .filter((r) => seed.resources.some((s) => s.kind === r.kind && s.scope === r.scope && s.name === r.name))
        .map((r) => [
          `${r.kind}/${r.scope}/${r.name}`,
          typeof r.properties.description === "string" ? r.properties.description : "",
        ]),
    );
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("(a) the daemon without --adopt: the ledger records the stock CCM's load balancer name, the run fails on GCE's 409s", async () => {
    daemon = new Daemon(daemonOptions(env, parseConfig(RAW_CONFIG), { leaderElection: false }));
    await daemon.start(() => assert.fail("lost leadership"));
    await core.createNamespacedService({ namespace: "default", body: lbService("web") });
    await eventually(
      "web's ingress",
      async () =>
        (await core.readNamespacedService({ name: "web", namespace: "default" })).status?.loadBalancer?.ingress?.[0]
          ?.ip,
    );
    const webUid = (await core.readNamespacedService({ name: "web", namespace: "default" })).metadata?.uid ?? "";
    const ilbUid = (await core.readNamespacedService({ name: "ilb", namespace: "default" })).metadata?.uid ?? "";
    await eventually("ilb's failed run", async () => {
      const events = await core.listNamespacedEvent({
        namespace: "default",
        fieldSelector: "involvedObject.name=ilb,reason=SyncLoadBalancerFailed",
      });
      return events.items.length > 0 ? true : undefined;
    });
    await daemon.stop();
    daemon = undefined;
    const written = await ledger();
    assert.deepEqual(written.metadata?.annotations, { [`claim.dccm.io/${CLUSTER_ID}`]: '["dccm.io/gce"]' });
    assert.deepEqual(written.data, {
      [ilbLb]: `{"clusterId":"${CLUSTER_ID}","service":"default/ilb","uid":"${ilbUid}"}`,
      [loadBalancerName(webUid)]: `{"clusterId":"${CLUSTER_ID}","service":"default/web","uid":"${webUid}"}`,
    });
    // The stock CCM's resources are untouched: same names, same descriptions.
    for (const [id, description] of stockResources) {
      const [kind, scope, name] = id.split("/");
      const found = env.gce.listResources().find((r) => r.kind === kind && r.scope === scope && r.name === name);
      assert.equal(found?.properties.description ?? "", description, id);
    }
  });

  it("(a) the leak check calls the stock CCM's resources unproven, and dccm gc --yes deletes none of them", async () => {
    const ourDccm = `this cluster's dccm (clusterId ${CLUSTER_ID}, kube-system UID ${clusterUid})`;
    const noMarker = (description: string): string =>
      `its description ${JSON.stringify(description)} carries no owner marker of ${ourDccm}: the stock CCM, another controller or a dccm older than the marker may have made it`;
    const lbWhy = (id: string): string =>
      `dccm's ledger records load balancer ${ilbLb} for Service default/ilb, but ${noMarker(stockResources.get(id) ?? "")}`;
    const rule = `forwardingRules/${REGION}/${ilbLb}`;
    const backend = `backendServices/${REGION}/${ilbLb}`;
    // The emulator's kind of a global health check; the leak check lists regional ones only.
    const nodeCheck = `globalHealthChecks/global/k8s-${CLUSTER_ID}-node`;
    const trafficFirewall = `firewalls/global/k8s-fw-${ilbLb}`;
    assert.deepEqual(
      [...stockResources.keys()].sort(),
      [backend, `firewalls/global/k8s-${CLUSTER_ID}-node-hc`, trafficFirewall, rule, nodeCheck].sort(),
    );
    const header = `cluster ${CLUSTER_ID} (kube-system UID ${clusterUid}), project ${PROJECT}: 3 stacks, 2 load balancers in the ledger`;
    const unproven = [
      "unproven (never deleted):",
      `  ${rule}: ${lbWhy(rule)}`,
      `  ${backend}: ${lbWhy(backend)}`,
      `  ${trafficFirewall}: ${lbWhy(trafficFirewall)}`,
    ];
    const before = gceState();
    assert.deepEqual(await gc(CLUSTER_ID, "--dry-run"), {
      code: 0,
      stderr: "",
      stdout: [header, ...unproven, ""].join("\n"),
    });
    assert.deepEqual(await gc(CLUSTER_ID, "--yes"), {
      code: 0,
      stderr: "",
      stdout: [header, "0 of 0 deleted; 3 unproven left alone", ""].join("\n"),
    });
    assert.equal(gceState(), before, "GCE unchanged");
    for (const id of stockResources.keys()) assert.ok(gceNames().includes(id), id);
  });

  it("(b) a daemon restarted with a mistyped clusterId on the same cluster and backend refuses to start, creating nothing; dccm gc with it deletes nothing", async () => {
    const refusal =
      `this cluster (kube-system UID ${clusterUid}) is managed by dccm under clusterId ${CLUSTER_ID} (annotation claim.dccm.io/${CLUSTER_ID} of ConfigMap kube-system/dccm-load-balancers, load balancer class dccm.io/gce), not ${MISTYPED}: ` +
      `changing a clusterId is a migration, not a restart (every GCE name and the Pulumi project depend on it); start dccm with clusterId ${CLUSTER_ID}`;
    const gceBefore = gceState();
    const ledgerBefore = await ledger();
    const mistyped = new Daemon(
      daemonOptions(env, parseConfig({ ...RAW_CONFIG, clusterId: MISTYPED }), { leaderElection: false }),
    );
    try {
      await assert.rejects(
        mistyped.start(() => assert.fail("lost leadership")),
        { name: "ClusterIdRefusedError", message: refusal },
      );
    } finally {
      await mistyped.stop();
    }
    assert.equal(gceState(), gceBefore, "GCE unchanged: no k8s-ig--other02, nothing else");
    const ledgerAfter = await ledger();
    assert.deepEqual(
      [ledgerAfter.metadata?.annotations, ledgerAfter.data],
      [ledgerBefore.metadata?.annotations, ledgerBefore.data],
    );
    assert.deepEqual(await backendProjects(env), [`dccm-${CLUSTER_ID}`], "no stack of project dccm-other02");
    const web = await core.listNamespacedEvent({
      namespace: "default",
      fieldSelector: "involvedObject.name=web,reason=SyncLoadBalancerFailed",
    });
    assert.deepEqual(web.items, [], "no failure posted on the served Service");

    for (const args of [["--yes"], ["--dry-run"]]) {
      assert.deepEqual(await gc(MISTYPED, ...args), {
        code: 1,
        stdout: "",
        stderr: `dccm gc: nothing listed or deleted: ${refusal}\n`,
      });
    }
    assert.equal(gceState(), gceBefore, "GCE unchanged");
  });
});
