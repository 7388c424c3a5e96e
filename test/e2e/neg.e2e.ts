/**
 * Backend `neg` (issue 41) through the real apiserver, the real engine and the emulator: each
 * Service's zonal GCE_VM_IP NEGs, one per (zone, subnetwork), in the cluster stack with exactly its
 * subset's endpoints; its backend service listing exactly those NEGs; instance groups grouped by
 * (zone, subnetwork) beside them; `dccm.io/node-selector`; a node's entry as one cluster-stack run;
 * and a Service moved from instance groups to NEGs keeping its IP, its forwarding rule, and a
 * backend list that is never empty.
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";
import { loadBalancerName, parseConfig, subnetworkHash } from "../../model";
import { parseNodeConfig } from "../../controllers/node";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { E2E_CONFIG, eventReasons, lbService } from "../support/e2e/cluster";
import { counter } from "../support/metrics";
import { eventually } from "../support/wait";
import type { NetworkSpec } from "../../emulator/gce";

const PROJECT = "dccm-test";
const HOME = "k8s-subnet";
const OTHER = "sub-b";
const NETWORKS: readonly NetworkSpec[] = [
  { name: "default", autoCreateSubnetworks: true },
  {
    name: "k8s-net",
    autoCreateSubnetworks: false,
    subnetworks: [
      { name: HOME, ipCidrRange: "10.128.0.0/20" },
      { name: "ilb-subnet", ipCidrRange: "10.129.0.0/20" },
      { name: OTHER, ipCidrRange: "10.130.0.0/20" },
    ],
  },
];

interface TestNode {
  name: string;
  zone: string;
  subnetwork: string;
  ip: string;
  labels?: Record<string, string>;
}

const A = "us-central1-a";
const B = "us-central1-b";
const C = "us-central1-c";
const EDGE = { pool: "edge" };
const NODES: readonly TestNode[] = [
  { name: "node-a1", zone: A, subnetwork: HOME, ip: "10.128.0.11", labels: EDGE },
  { name: "node-a2", zone: A, subnetwork: OTHER, ip: "10.130.0.21" },
  { name: "node-b1", zone: B, subnetwork: HOME, ip: "10.128.0.12" },
  { name: "node-c1", zone: C, subnetwork: HOME, ip: "10.128.0.13" },
  { name: "node-c2", zone: C, subnetwork: OTHER, ip: "10.130.0.22", labels: EDGE },
];
/** Case 3's newcomer: zone a's default subnetwork, in the node selector's pool. */
const NEWCOMER: TestNode = { name: "node-a3", zone: A, subnetwork: HOME, ip: "10.128.0.14", labels: EDGE };

const INTERNAL = { "networking.gke.io/load-balancer-type": "Internal" };
const IG = { "dccm.io/backend": "backend-service" };
const SERVICES = ["ext", "int", "ig", "picky"];
const OTHER_HASH = subnetworkHash(OTHER);
const GROUP = "k8s-ig--e2e0cafe";
const OTHER_GROUP = `${GROUP}-${OTHER_HASH}`;

const repeat = (step: string, times: number): string[] => Array.from({ length: times }, () => step);
const last = (link: unknown): string => (typeof link === "string" ? (link.split("/").pop() ?? "") : "");

describe("dccm daemon: backend neg, NEGs per (zone, subnetwork)", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon;
  const lbNames = new Map<string, string>();
  const lb = (service: string): string => lbNames.get(service) ?? assert.fail(`no load balancer name of ${service}`);

  const addNode = async (node: TestNode): Promise<void> => {
    env.gce.putInstance(node.name, {
      zone: node.zone,
      networkInterfaces: [{ network: "k8s-net", subnetwork: node.subnetwork, networkIP: node.ip }],
    });
    await core.createNode({
      body: {
        metadata: { name: node.name, labels: { "topology.kubernetes.io/zone": node.zone, ...node.labels } },
        spec: { providerID: `gce://${PROJECT}/${node.zone}/${node.name}` },
        // The apiserver keeps a Node's status on create (as kubelet registers it): one event with
        // its address, so a node's entry is one change and not an entry then an address.
        status: { addresses: [{ type: "InternalIP", address: node.ip }] },
      },
    });
  };

  /** Every NEG: `<zone>/<name>` → its subnetwork and endpoints (`instance@ip`, sorted). */
  const negs = (): Record<string, { subnetwork: string; endpoints: string[] }> =>
    Object.fromEntries(
      env.gce
        .listResources()
        .filter((r) => r.kind === "networkEndpointGroups")
        .map((r) => [
          `${r.scope}/${r.name}`,
          {
            subnetwork: last(r.properties.subnetwork),
            endpoints: env.gce.state
              .endpointsOf({ kind: "networkEndpointGroups", project: r.project, scope: r.scope, name: r.name })
              .map((e) => `${last(e.instance)}@${e.ipAddress}`)
              .sort(),
          },
        ]),
    );
  const negsOf = (service: string): Record<string, { subnetwork: string; endpoints: string[] }> => {
    const name = lb(service);
    return Object.fromEntries(
      Object.entries(negs()).filter(([key]) => {
        const negName = key.split("/")[1];
        return negName === name || negName === `${name}-${OTHER_HASH}`;
      }),
    );
  };
  /** A backend service's backends: `<zone>/<kind>/<name> <balancingMode>`, sorted. */
  const backends = (service: string): string[] => {
    const found = env.gce.listResources().find((r) => r.kind === "backendServices" && r.name === lb(service));
    const list = (found?.properties.backends ?? []) as Array<{ group: string; balancingMode?: string }>;
    return list
      .map((b) => {
        const [, zone, kind, name] = /\/zones\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(b.group) ?? [];
        return `${zone}/${kind}/${name} ${b.balancingMode ?? ""}`;
      })
      .sort();
  };
  const groups = (): Record<string, string[]> =>
    Object.fromEntries(
      env.gce
        .listResources()
        .filter((r) => r.kind === "instanceGroups")
        .map((r) => [`${r.scope}/${r.name}`, ((r.properties.instances ?? []) as string[]).map(last).sort()]),
    );
  const ingress = async (name: string): Promise<string | undefined> =>
    (await core.readNamespacedService({ name, namespace: "default" })).status?.loadBalancer?.ingress?.[0]?.ip;
  const served = (name: string): Promise<string> => eventually(`${name}'s ingress`, () => ingress(name));
  const ups = (stack: string): Promise<number> =>
    counter(daemon.metrics.registry, "dccm_stack_runs_total", { stack, operation: "up" });
  const serviceUps = (): Promise<number[]> => Promise.all(SERVICES.map((name) => ups(`service.default.${name}`)));
  const ruleOf = (service: string): { name: string; ip: unknown } | undefined => {
    const rule = env.gce.listResources().find((r) => r.kind === "forwardingRules" && r.name === lb(service));
    return rule === undefined ? undefined : { name: rule.name, ip: rule.properties.ipAddress };
  };
  const createService = async (service: k8s.V1Service): Promise<void> => {
    const created = await core.createNamespacedService({ namespace: "default", body: service });
    lbNames.set(created.metadata?.name ?? "", loadBalancerName(created.metadata?.uid ?? ""));
  };

  const newDaemon = (): Daemon =>
    new Daemon(
      daemonOptions(env, parseConfig({ ...E2E_CONFIG, subnetwork: HOME, backendMode: "neg" }), {
        nodes: parseNodeConfig({ computeEndpoint: env.gce.computeEndpoint, nodeLifecyclePeriod: "1h" }, []),
        firstUpGuard: { computeEndpoint: env.gce.computeEndpoint },
        negEndpoints: { computeEndpoint: env.gce.computeEndpoint },
      }),
    );

  before(async () => {
    env = await startTestEnv({ gce: { networks: NETWORKS } });
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    for (const node of NODES) await addNode(node);
    daemon = newDaemon();
    await daemon.start(() => assert.fail("leadership lost"));
    await createService(lbService("ext"));
    await createService(lbService("int", {}, INTERNAL));
    await createService(lbService("ig", {}, IG));
    for (const name of ["ext", "int", "ig"]) await served(name);
    await daemon.idle();
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  const everyNode = (service: string): Record<string, { subnetwork: string; endpoints: string[] }> => ({
    [`${A}/${lb(service)}`]: { subnetwork: HOME, endpoints: ["node-a1@10.128.0.11"] },
    [`${A}/${lb(service)}-${OTHER_HASH}`]: { subnetwork: OTHER, endpoints: ["node-a2@10.130.0.21"] },
    [`${B}/${lb(service)}`]: { subnetwork: HOME, endpoints: ["node-b1@10.128.0.12"] },
    [`${C}/${lb(service)}`]: { subnetwork: HOME, endpoints: ["node-c1@10.128.0.13"] },
    [`${C}/${lb(service)}-${OTHER_HASH}`]: { subnetwork: OTHER, endpoints: ["node-c2@10.130.0.22"] },
  });
  /** everyNode after the newcomer's entry (case "a node's entry" on). */
  const everyNodeWithNewcomer = (service: string): Record<string, { subnetwork: string; endpoints: string[] }> => ({
    ...everyNode(service),
    [`${A}/${lb(service)}`]: { subnetwork: HOME, endpoints: ["node-a1@10.128.0.11", "node-a3@10.128.0.14"] },
  });
  const negBackends = (service: string): string[] =>
    [
      `${A}/networkEndpointGroups/${lb(service)} CONNECTION`,
      `${A}/networkEndpointGroups/${lb(service)}-${OTHER_HASH} CONNECTION`,
      `${B}/networkEndpointGroups/${lb(service)} CONNECTION`,
      `${C}/networkEndpointGroups/${lb(service)} CONNECTION`,
      `${C}/networkEndpointGroups/${lb(service)}-${OTHER_HASH} CONNECTION`,
    ].sort();

  it("an external and an internal Service: one NEG per (zone, subnetwork) with its subset, listed by the backend service with CONNECTION", () => {
    for (const service of ["ext", "int"]) {
      assert.deepEqual(negsOf(service), everyNode(service), service);
      assert.deepEqual(backends(service), negBackends(service), service);
      const neg = env.gce
        .listResources()
        .find((r) => r.kind === "networkEndpointGroups" && r.scope === A && r.name === lb(service));
      assert.equal(neg?.properties.networkEndpointType, "GCE_VM_IP");
      assert.equal(last(neg?.properties.network), "k8s-net");
    }
    assert.deepEqual(negsOf("ig"), {});
  });

  it("instance groups beside them are grouped by (zone, subnetwork), each holding VMs of one subnetwork", () => {
    assert.deepEqual(groups(), {
      [`${A}/${GROUP}`]: ["node-a1"],
      [`${A}/${OTHER_GROUP}`]: ["node-a2"],
      [`${B}/${GROUP}`]: ["node-b1"],
      [`${C}/${GROUP}`]: ["node-c1"],
      [`${C}/${OTHER_GROUP}`]: ["node-c2"],
    });
    const subnetOf = new Map(NODES.map((node) => [node.name, node.subnetwork]));
    for (const [key, members] of Object.entries(groups()))
      assert.equal(new Set(members.map((member) => subnetOf.get(member))).size, 1, key);
    assert.deepEqual(
      backends("ig"),
      [
        `${A}/instanceGroups/${GROUP} CONNECTION`,
        `${A}/instanceGroups/${OTHER_GROUP} CONNECTION`,
        `${B}/instanceGroups/${GROUP} CONNECTION`,
        `${C}/instanceGroups/${GROUP} CONNECTION`,
        `${C}/instanceGroups/${OTHER_GROUP} CONNECTION`,
      ].sort(),
    );
  });

  it("dccm.io/node-selector: only the matching nodes are endpoints; a bad selector is refused naming the annotation", async () => {
    await createService(lbService("picky", {}, { "dccm.io/node-selector": "pool=edge" }));
    await served("picky");
    await daemon.idle();
    assert.deepEqual(negsOf("picky"), {
      [`${A}/${lb("picky")}`]: { subnetwork: HOME, endpoints: ["node-a1@10.128.0.11"] },
      [`${C}/${lb("picky")}`]: { subnetwork: HOME, endpoints: [] },
      [`${C}/${lb("picky")}-${OTHER_HASH}`]: { subnetwork: OTHER, endpoints: ["node-c2@10.130.0.22"] },
    });
    assert.deepEqual(
      backends("picky"),
      [
        `${A}/networkEndpointGroups/${lb("picky")} CONNECTION`,
        `${C}/networkEndpointGroups/${lb("picky")} CONNECTION`,
        `${C}/networkEndpointGroups/${lb("picky")}-${OTHER_HASH} CONNECTION`,
      ].sort(),
    );

    await createService(lbService("bad", {}, { "dccm.io/node-selector": "pool in edge" }));
    const refused = await eventually("bad's SyncLoadBalancerFailed", async () =>
      (await eventReasons(core, "bad")).find((event) => event.reason === "SyncLoadBalancerFailed"),
    );
    assert.equal(
      refused.message,
      'Service default/bad: metadata.annotations[dccm.io/node-selector]: "pool in edge" is not key, !key, key=value, key!=value, key in (values) or key notin (values)',
    );
    await daemon.idle();
    assert.equal(await ingress("bad"), undefined);
    assert.deepEqual(negsOf("bad"), {});
    assert.equal(
      env.gce.listResources().some((r) => r.name.startsWith(lb("bad"))),
      false,
    );
  });

  it("a node's entry: one cluster-stack run, no Service-stack run, and it is an endpoint of the NEGs whose subset it enters", async () => {
    const [clusterBefore, servicesBefore] = [await ups("cluster"), await serviceUps()];
    await addNode(NEWCOMER);
    await eventually("node-a3 in ext's zone-a NEG", () =>
      negsOf("ext")[`${A}/${lb("ext")}`]?.endpoints.includes("node-a3@10.128.0.14") ? true : undefined,
    );
    await daemon.idle();
    assert.equal((await ups("cluster")) - clusterBefore, 1);
    assert.deepEqual(await serviceUps(), servicesBefore);
    const zoneA = ["node-a1@10.128.0.11", "node-a3@10.128.0.14"];
    for (const service of ["ext", "int"]) {
      assert.deepEqual(negsOf(service), everyNodeWithNewcomer(service), service);
      assert.deepEqual(backends(service), negBackends(service), service);
    }
    assert.deepEqual(negsOf("picky")[`${A}/${lb("picky")}`], { subnetwork: HOME, endpoints: zoneA });
    assert.deepEqual(groups()[`${A}/${GROUP}`], ["node-a1", "node-a3"]);
  });

  it("instance groups → NEGs: the IP and the forwarding rule stay; the backend list goes from groups to NEGs in one update", async () => {
    const ip = await served("ig");
    const rule = ruleOf("ig");
    assert.equal(rule?.ip, ip);
    env.gce.clearHistory();
    await core.patchNamespacedService(
      { name: "ig", namespace: "default", body: { metadata: { annotations: { "dccm.io/backend": "neg" } } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    await eventually("ig's backend service on NEGs", () =>
      backends("ig").every((backend) => backend.includes("/networkEndpointGroups/")) ? true : undefined,
    );
    await daemon.idle();
    assert.deepEqual(negsOf("ig"), everyNodeWithNewcomer("ig"));
    assert.deepEqual(backends("ig"), negBackends("ig"));
    assert.equal(await ingress("ig"), ip);
    assert.deepEqual(ruleOf("ig"), rule);
    const history = env.gce.history();
    // One update from five group backends to five NEG backends: no state in between, none empty.
    assert.deepEqual(
      history.filter((entry) => entry.kind === "backendServices" && entry.name === lb("ig")).map((entry) => entry.op),
      ["update"],
    );
    assert.deepEqual(
      history.filter((entry) => entry.kind === "forwardingRules").map((entry) => `${entry.op} ${entry.name}`),
      [],
    );
    // The NEGs the update names exist, with their endpoints, before it: the Service's first run
    // creates them (its backend service still on the groups), the NEG controller fills them, and
    // only then a second run moves the backend service.
    const updateAt = history.findIndex((entry) => entry.kind === "backendServices" && entry.name === lb("ig"));
    const negSteps = history
      .map((entry, index) => ({ entry, index }))
      .filter(({ entry }) => entry.kind === "networkEndpointGroups");
    assert.deepEqual(
      negSteps.map(({ entry, index }) => `${entry.op} ${index < updateAt ? "before" : "after"}`),
      [...repeat("create before", 5), ...repeat("update before", 5)],
    );
  });

  it("a target pool → NEGs: the IP stays; the NEGs and the backend service exist before the rule moves onto it, whose one replacement is the only gap", async () => {
    await createService(lbService("pool", {}, { "dccm.io/backend": "target-pool" }));
    const ip = await served("pool");
    await daemon.idle();
    env.gce.clearHistory();
    await core.patchNamespacedService(
      { name: "pool", namespace: "default", body: { metadata: { annotations: { "dccm.io/backend": "neg" } } } },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
    );
    const onBackendService = (): true | undefined => {
      const rule = env.gce.listResources().find((r) => r.kind === "forwardingRules" && r.name === lb("pool"));
      return typeof rule?.properties.backendService === "string" ? true : undefined;
    };
    await eventually("pool's forwarding rule on its backend service", async () => onBackendService());
    await daemon.idle();
    assert.equal(await ingress("pool"), ip);
    assert.equal(ruleOf("pool")?.ip, ip);
    assert.deepEqual(negsOf("pool"), everyNodeWithNewcomer("pool"));
    assert.deepEqual(backends("pool"), negBackends("pool"));
    const steps = env.gce
      .history()
      .filter((entry) => entry.name === lb("pool") || entry.name === `${lb("pool")}-${OTHER_HASH}`)
      .map((entry) => `${entry.op} ${entry.kind}`);
    // A rule's target (pool or backend service) is fixed at creation: its IP is held as a static
    // address over the one replacement, onto a backend service on the instance groups while the
    // NEGs are created and filled (an update of each); one update then moves it onto them.
    assert.deepEqual(
      steps.filter((step) => !step.endsWith(" networkEndpointGroups")),
      [
        "create addresses",
        "create backendServices",
        "delete forwardingRules",
        "create forwardingRules",
        "delete targetPools",
        "delete addresses",
        "update backendServices",
      ],
    );
    assert.deepEqual(
      steps.filter((step) => step.endsWith(" networkEndpointGroups")),
      [...repeat("create networkEndpointGroups", 5), ...repeat("update networkEndpointGroups", 5)],
    );
    assert.ok(
      steps.lastIndexOf("update networkEndpointGroups") < steps.indexOf("update backendServices"),
      "the backend service moved onto NEGs not yet filled",
    );
  });

  it("a restart: no engine run, no endpoint moved; an endpoint detached out of band is put back by the NEG controller", async () => {
    const before = negs();
    await daemon.stop();
    env.gce.clearHistory();
    daemon = newDaemon();
    await daemon.start(() => assert.fail("leadership lost"));
    await daemon.idle();
    // Each stack waited for its NEGs' first listing, and the listing woke it: none is left to a timer.
    assert.deepEqual(daemon.waitingStacks(), []);
    assert.deepEqual(await ups("cluster"), 0);
    assert.deepEqual([...(await serviceUps()), await ups("service.default.pool")], [0, 0, 0, 0, 0]);
    assert.deepEqual(negs(), before);
    assert.deepEqual(env.gce.history(), []);
    const key = { kind: "networkEndpointGroups", project: PROJECT, scope: A, name: lb("ext") } as const;
    env.gce.state.changeEndpoints(key, [{ instance: "node-a1", ipAddress: "10.128.0.11" }], false);
    assert.deepEqual(negsOf("ext")[`${A}/${lb("ext")}`]?.endpoints, ["node-a3@10.128.0.14"]);
    daemon.checkNegs();
    await daemon.idle();
    assert.deepEqual(negs(), before);
  });

  it("a new Service's stack runs as soon as the NEG controller has listed its NEGs, not when its wait's backstop expires", async () => {
    const synced = (): Promise<number> =>
      counter(daemon.metrics.registry, "dccm_reconciles_total", { kind: "neg", result: "ok" });
    const syncsBefore = await synced();
    await createService(lbService("late"));
    await eventually("late's NEGs listed", async () => ((await synced()) > syncsBefore ? true : undefined));
    // The stack found its NEGs not yet listed and waits; the listing must wake it, so it is not
    // left to a timer that idle() does not wait for.
    await daemon.idle();
    assert.equal(typeof (await ingress("late")), "string");
    await eventually("late's backend service on its NEGs", () =>
      backends("late").every((backend) => backend.includes("/networkEndpointGroups/")) ? true : undefined,
    );
    await daemon.idle();
    assert.deepEqual(negsOf("late"), everyNodeWithNewcomer("late"));
    assert.deepEqual(backends("late"), negBackends("late"));
  });
});
