/**
 * The leak detector and `dccm gc` end to end (real apiserver, engine and GCE emulator): a Service
 * whose stack was removed out of band while GCE kept its resources, an out-of-band instance group
 * named and described for this cluster, and two look-alikes (another cluster's Service of the
 * same name, the stock CCM's node health check). The daemon's start-up check reports exactly
 * those; `dccm gc --dry-run` says why each is or is not provably ours; `dccm gc` deletes exactly
 * the proven ones and nothing any stack owns.
 */
import * as assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { LocalWorkspace } from "@pulumi/pulumi/automation";
import { Daemon } from "../../daemon/daemon";
import { clusterDescription, loadBalancerName, ownedDescription, parseConfig, serviceDescription } from "../../model";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { createNode, E2E_CONFIG, lbService } from "../support/e2e/cluster";
import { counter } from "../support/metrics";
import { eventually } from "../support/wait";

const CLI = path.resolve(__dirname, "../../bin/dccm.js");
const CLUSTER_ID = "e2e0cafe";
const PROJECT = "dccm-test";
const REGION = "us-central1";
/** A load balancer name no Service of this cluster has: another cluster's Service default/web. */
const ELSEWHERE = loadBalancerName("0123abcd-4567-4890-abcd-ef0123456789");

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe("leaks: the detector and dccm gc", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon | undefined;
  let configPath: string;
  let clusterUid: string;
  let webLb: string;
  let goneLb: string;

  // addressReservation `always`: the leaked load balancer then includes its address <lb>, which gc
  // must prove and delete like the rest (under `transient` an address is held while a run pins it,
  // or for life by a Service whose TCP and UDP rules share its IP).
  const options = (): ReturnType<typeof daemonOptions> =>
    daemonOptions(env, parseConfig({ ...E2E_CONFIG, addressReservation: "always" }), {
      leaderElection: false,
      leakCheck: { computeEndpoint: env.gce.computeEndpoint },
    });

  /** `dccm gc ARGS` as a child process (asynchronous: the emulator and apiserver answer from this process). */
  function gc(...args: string[]): Promise<Run> {
    const argv = [
      CLI,
      "gc",
      "--kubeconfig",
      env.kube.kubeconfigPath,
      "--config",
      configPath,
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

  const gceNames = (): string[] =>
    env.gce
      .listResources()
      .filter((r) => r.kind !== "instances")
      .map((r) => `${r.kind}/${r.scope}/${r.name}`)
      .sort();

  before(async () => {
    env = await startTestEnv({ backend: "gs" });
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    configPath = path.join(env.dir, "dccm.json");
    fs.writeFileSync(configPath, JSON.stringify(E2E_CONFIG));
    clusterUid = (await core.readNamespace({ name: "kube-system" })).metadata?.uid ?? "";
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    await createNode(core, "node-a1", "us-central1-a");
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("the daemon writes the ledger before each Service's first up", async () => {
    daemon = new Daemon(options());
    await daemon.start(() => assert.fail("lost leadership"));
    for (const name of ["web", "gone"])
      await core.createNamespacedService({ namespace: "default", body: lbService(name) });
    for (const name of ["web", "gone"]) {
      await eventually(
        `${name}'s ingress`,
        async () =>
          (await core.readNamespacedService({ name, namespace: "default" })).status?.loadBalancer?.ingress?.[0]?.ip,
      );
    }
    await daemon.idle();
    const uid = async (name: string): Promise<string> =>
      (await core.readNamespacedService({ name, namespace: "default" })).metadata?.uid ?? "";
    const [webUid, goneUid] = [await uid("web"), await uid("gone")];
    webLb = loadBalancerName(webUid);
    goneLb = loadBalancerName(goneUid);
    const ledger = await core.readNamespacedConfigMap({ name: "dccm-load-balancers", namespace: "kube-system" });
    assert.deepEqual(ledger.data, {
      [webLb]: `{"clusterId":"${CLUSTER_ID}","service":"default/web","uid":"${webUid}"}`,
      [goneLb]: `{"clusterId":"${CLUSTER_ID}","service":"default/gone","uid":"${goneUid}"}`,
    });
    // Nothing leaked so far: the start-up check (before any Service) found nothing, and reported nothing.
    // The first check starts once the start-up runs settled, which is before these Services: it may still run.
    const registry = daemon.metrics.registry;
    await eventually("the start-up leak check", async () =>
      (await counter(registry, "dccm_leak_checks_total", { result: "ok" })) +
        (await counter(registry, "dccm_leak_checks_total", { result: "failed" })) >
      0
        ? true
        : undefined,
    );
    assert.equal(await counter(registry, "dccm_leak_checks_total", { result: "failed" }), 0);
    assert.equal(await counter(registry, "dccm_leak_checks_total", { result: "ok" }), 1);
    await daemon.stop();
    daemon = undefined;
  });

  it("a stack removed out of band and look-alikes: the start-up check reports exactly this cluster's, with proof", async () => {
    // While dccm is down: the stack of `gone` is removed (its resources stay in GCE), and the
    // Service deleted with its finalizer removed by hand.
    const workspace = await LocalWorkspace.create({
      workDir: fs.mkdtempSync(path.join(os.tmpdir(), "dccm-leaks-oob-")),
      projectSettings: { name: `dccm-${CLUSTER_ID}`, runtime: "nodejs", backend: { url: env.backendUrl } },
      envVars: env.pulumiEnv,
      pulumiCommand: env.pulumiCommand,
    });
    await workspace.removeStack("service.default.gone", { force: true });
    await core.patchNamespacedService(
      { name: "gone", namespace: "default", body: { metadata: { finalizers: null } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    await core.deleteNamespacedService({ name: "gone", namespace: "default" });
    // Out of band: an instance group of ours (as dccm creates it: with its owner marker) in a zone
    // without nodes; another cluster's Service default/web; the stock CCM's node health check;
    // another cluster's instance group.
    const network = `projects/${PROJECT}/global/networks/k8s-net`;
    const ours = ownedDescription(clusterDescription(CLUSTER_ID), { clusterId: CLUSTER_ID, clusterUid });
    env.gce.state.create("gcp:compute/instanceGroup:InstanceGroup", {
      project: PROJECT,
      zone: "us-central1-c",
      name: `k8s-ig--${CLUSTER_ID}`,
      description: ours,
      network,
    });
    env.gce.state.create("gcp:compute/forwardingRule:ForwardingRule", {
      project: PROJECT,
      region: REGION,
      name: ELSEWHERE,
      description: serviceDescription("default/web"),
      portRange: "8080",
    });
    env.gce.state.create("gcp:compute/httpHealthCheck:HttpHealthCheck", {
      project: PROJECT,
      name: `k8s-${CLUSTER_ID}-node`,
      description: serviceDescription(`k8s-${CLUSTER_ID}-node`),
    });
    env.gce.state.create("gcp:compute/instanceGroup:InstanceGroup", {
      project: PROJECT,
      zone: "us-central1-a",
      name: "k8s-ig--0ther",
      description: clusterDescription("0ther"),
      network,
    });

    daemon = new Daemon(options());
    await daemon.start(() => assert.fail("lost leadership"));
    const metrics = daemon.metrics;
    await eventually("the start-up leak check", async () =>
      (await counter(metrics.registry, "dccm_leak_checks_total", { result: "ok" })) === 1 ? true : undefined,
    );

    const leaked = (await metrics.leaks.leakedResources.get()).values
      .filter((value) => value.value > 0)
      .map((value) => `${String(value.labels.kind)} ${String(value.labels.proof)} ${value.value}`);
    assert.deepEqual(leaked.sort(), [
      "addresses proven 1",
      "backendServices proven 1",
      "firewalls proven 1",
      "forwardingRules proven 1",
      "forwardingRules unproven 1",
      "httpHealthChecks unproven 1",
      "instanceGroups proven 1",
    ]);
    const events = await core.listNamespacedEvent({
      namespace: "kube-system",
      fieldSelector: "reason=LeakedResources",
    });
    const [first, second] = [`forwardingRules/${REGION}/${ELSEWHERE}`, `forwardingRules/${REGION}/${goneLb}`].sort();
    const proofOf = (id: string): string => (id.endsWith(goneLb) ? "proven" : "unproven");
    assert.deepEqual(
      events.items.map((event) => [
        event.type,
        event.involvedObject.kind,
        event.involvedObject.name,
        event.involvedObject.uid,
        event.message,
      ]),
      [
        [
          "Warning",
          "Namespace",
          "kube-system",
          clusterUid,
          "7 GCE resources of this cluster owned by no stack (5 proven, 2 unproven; dccm gc --dry-run says why, dccm gc deletes only proven ones): " +
            `${first} (${proofOf(first ?? "")}), ${second} (${proofOf(second ?? "")}), backendServices/${REGION}/${goneLb} (proven), ` +
            `httpHealthChecks/global/k8s-${CLUSTER_ID}-node (unproven), addresses/${REGION}/${goneLb} (proven), ` +
            `instanceGroups/us-central1-c/k8s-ig--${CLUSTER_ID} (proven), firewalls/global/k8s-fw-${goneLb} (proven)`,
        ],
      ],
    );
  });

  const ourDccm = (): string => `this cluster's dccm (clusterId ${CLUSTER_ID}, kube-system UID ${clusterUid})`;
  const provenWhy = (): string =>
    `its description carries the owner marker of ${ourDccm()} and names Service default/gone`;
  const header = (): string =>
    `cluster ${CLUSTER_ID} (kube-system UID ${clusterUid}), project ${PROJECT}: 2 stacks, 2 load balancers in the ledger`;
  const elsewhereWhy = `its description names Service default/web of this cluster, but ${ELSEWHERE} is not that Service's load balancer name and dccm's ledger has no entry for it: a Service of the same name in another cluster looks the same`;
  const unprovenLines = (): string[] => [
    "unproven (never deleted):",
    `  forwardingRules/${REGION}/${ELSEWHERE}: ${elsewhereWhy}`,
    `  httpHealthChecks/global/k8s-${CLUSTER_ID}-node: named for cluster ${CLUSTER_ID}, but its description "{\\"kubernetes.io/service-name\\":\\"k8s-${CLUSTER_ID}-node\\"}" carries no owner marker of ${ourDccm()}: the stock CCM, another controller or a dccm older than the marker may have made it`,
  ];

  it("dccm gc --dry-run lists the proven leaks and the unproven ones with why, and deletes nothing", async () => {
    const before = gceNames();
    const run = await gc("--dry-run");
    assert.deepEqual(run, {
      code: 0,
      stderr: "",
      stdout: [
        header(),
        "proven leaks (deleted by dccm gc --yes, or each by name):",
        `  forwardingRules/${REGION}/${goneLb}: ${provenWhy()}`,
        `  backendServices/${REGION}/${goneLb}: ${provenWhy()}`,
        `  addresses/${REGION}/${goneLb}: ${provenWhy()}`,
        `  instanceGroups/us-central1-c/k8s-ig--${CLUSTER_ID}: named for cluster ${CLUSTER_ID} and its description carries the owner marker of ${ourDccm()}`,
        `  firewalls/global/k8s-fw-${goneLb}: ${provenWhy()}`,
        ...unprovenLines(),
        "",
      ].join("\n"),
    });
    assert.deepEqual(gceNames(), before);
  });

  it("dccm gc refuses an unproven resource by name, and deletes nothing", async () => {
    const before = gceNames();
    const run = await gc(
      `forwardingRules/${REGION}/${ELSEWHERE}`,
      `instanceGroups/us-central1-c/k8s-ig--${CLUSTER_ID}`,
    );
    assert.deepEqual(run, {
      code: 1,
      stdout: `${header()}\n`,
      stderr: `dccm gc: nothing deleted:\n  forwardingRules/${REGION}/${ELSEWHERE}: unproven, never deleted: ${elsewhereWhy}\n`,
    });
    assert.deepEqual(gceNames(), before);
  });

  it("dccm gc RESOURCE deletes exactly that proven leak; --yes the other proven ones; the unproven and everything the stacks own stay", async () => {
    const before = gceNames();
    const byName = await gc(`instanceGroups/us-central1-c/k8s-ig--${CLUSTER_ID}`);
    assert.deepEqual(byName, {
      code: 0,
      stderr: "",
      stdout: [
        header(),
        `deleted instanceGroups/us-central1-c/k8s-ig--${CLUSTER_ID}`,
        "1 of 1 deleted; 2 unproven left alone",
        "",
      ].join("\n"),
    });
    const all = await gc("--yes");
    assert.deepEqual(all, {
      code: 0,
      stderr: "",
      stdout: [
        header(),
        `deleted forwardingRules/${REGION}/${goneLb}`,
        `deleted backendServices/${REGION}/${goneLb}`,
        `deleted addresses/${REGION}/${goneLb}`,
        `deleted firewalls/global/k8s-fw-${goneLb}`,
        "4 of 4 deleted; 2 unproven left alone",
        "",
      ].join("\n"),
    });
    const deleted = [
      `instanceGroups/us-central1-c/k8s-ig--${CLUSTER_ID}`,
      `forwardingRules/${REGION}/${goneLb}`,
      `backendServices/${REGION}/${goneLb}`,
      `addresses/${REGION}/${goneLb}`,
      `firewalls/global/k8s-fw-${goneLb}`,
    ];
    assert.deepEqual(
      gceNames(),
      before.filter((name) => !deleted.includes(name)),
    );
    // What is left: web's load balancer and the cluster stack's resources (all owned), the look-alikes.
    assert.deepEqual(gceNames(), [
      `addresses/${REGION}/${webLb}`,
      `backendServices/${REGION}/${webLb}`,
      `firewalls/global/k8s-e2e0cafe-node-http-hc`,
      `firewalls/global/k8s-fw-${webLb}`,
      ...[`forwardingRules/${REGION}/${ELSEWHERE}`, `forwardingRules/${REGION}/${webLb}`].sort(),
      `healthChecks/${REGION}/k8s-e2e0cafe-node`,
      `httpHealthChecks/global/k8s-e2e0cafe-node`,
      "instanceGroups/us-central1-a/k8s-ig--0ther",
      "instanceGroups/us-central1-a/k8s-ig--e2e0cafe",
    ]);
    const after = await gc("--dry-run");
    assert.deepEqual(after, { code: 0, stderr: "", stdout: [header(), ...unprovenLines(), ""].join("\n") });
    // web still serves: its status and stack untouched.
    assert.equal(
      (await core.readNamespacedService({ name: "web", namespace: "default" })).status?.loadBalancer?.ingress?.length,
      1,
    );
  });

  it("dccm gc against a backend without this cluster's stacks lists and deletes nothing", async () => {
    const empty = fs.mkdtempSync(path.join(env.dir, "empty-backend-"));
    const before = gceNames();
    const run = await gc("--yes", "--backend-url", `file://${empty}`);
    assert.deepEqual(run, {
      code: 1,
      stdout: "",
      stderr:
        `dccm gc: the backend file://${empty} has no stack "cluster" of this cluster in project dccm-${CLUSTER_ID} (no such stack): ` +
        "without it every resource would look leaked, so nothing is listed or deleted (check --backend-url, --state-dir and clusterId)\n",
    });
    assert.deepEqual(gceNames(), before);
  });
});
