/**
 * Migration from the stock GCE CCM end to end (real apiserver, engine and GCE emulator): the
 * emulator is seeded with exactly what the stock CCM leaves (test/support/e2e/stockCcm.ts) for an
 * external multi-port Service, an ETP=Local one, an internal one (its forwarding rule as GCE reads it
 * back: networkTier PREMIUM) and a UDP one, plus the routes of four nodes, one of them labelled out of
 * load balancers (its route only); the Services carry the stock finalizers. `dccm adopt --dry-run` changes nothing and
 * says what would happen; `dccm daemon --adopt` adopts every load balancer with its IP, creating
 * and replacing nothing that existed; `dccm adopt --to backend-service` moves one Service.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";

import { loadBalancerName, parseConfig, LB_FINALIZER } from "../../model";
import { backendStackNames } from "../support/e2e/backendListing";
import { backendContents } from "../support/e2e/daemon-process";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { E2E_CONFIG } from "../support/e2e/cluster";
import {
  seedStockCcm,
  STOCK_ILB_FINALIZER,
  STOCK_LB_CLEANUP_FINALIZER,
  type StockSeed,
  type StockService,
  E2E_STOCK_CLUSTER,
} from "../support/e2e/stockCcm";
import { runDccmAsync } from "../support/cli";
import { eventually } from "../support/wait";

const RAW_CONFIG = { ...E2E_CONFIG, subnetwork: "k8s-subnet" };
const EXCLUDE = "node.kubernetes.io/exclude-from-external-load-balancers";
const NODES: Array<{ name: string; zone: string; uid: string; podCIDR: string; labels?: Record<string, string> }> = [
  { name: "node-a1", zone: "us-central1-a", uid: "", podCIDR: "10.64.1.0/24" },
  { name: "node-b1", zone: "us-central1-b", uid: "", podCIDR: "10.64.2.0/24" },
  { name: "node-b2", zone: "us-central1-b", uid: "", podCIDR: "10.64.3.0/24" },
  // Out of every load balancer (the stock CCM's and dccm's), its pod route made all the same.
  { name: "node-x1", zone: "us-central1-a", uid: "", podCIDR: "10.64.4.0/24", labels: { [EXCLUDE]: "true" } },
];
const SERVICES = ["ext", "local", "ilb", "dns", "sticky"] as const;
type Name = (typeof SERVICES)[number];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** `dccm adopt ARGS` against the test's cluster, backend and emulator. */
async function adopt(env: TestEnv, configPath: string, args: readonly string[]): Promise<Run> {
  const run = await runDccmAsync(
    [
      "adopt",
      "--kubeconfig",
      env.kube.kubeconfigPath,
      "--config",
      configPath,
      "--backend-url",
      env.backendUrl,
      "--compute-endpoint",
      env.gce.computeEndpoint,
      ...args,
    ],
    env.pulumiEnv,
  );
  return { code: run.status ?? -1, stdout: run.stdout, stderr: run.stderr };
}

function spec(name: Name): { spec: k8s.V1ServiceSpec; annotations: Record<string, string>; finalizers: string[] } {
  const tcp = (port: number): k8s.V1ServicePort => ({ name: `p${port}`, protocol: "TCP", port, targetPort: 8080 });
  const base = { type: "LoadBalancer", selector: { app: name } };
  switch (name) {
    case "ext":
      return {
        spec: { ...base, ports: [tcp(80), tcp(443)] },
        annotations: {},
        finalizers: [STOCK_LB_CLEANUP_FINALIZER],
      };
    case "local":
      return {
        spec: { ...base, ports: [tcp(8080)], externalTrafficPolicy: "Local" },
        annotations: {},
        finalizers: [STOCK_LB_CLEANUP_FINALIZER],
      };
    case "ilb":
      return {
        spec: { ...base, ports: [tcp(80), tcp(81)] },
        annotations: { "networking.gke.io/load-balancer-type": "Internal" },
        finalizers: [STOCK_LB_CLEANUP_FINALIZER, STOCK_ILB_FINALIZER],
      };
    case "dns":
      return {
        spec: { ...base, ports: [{ name: "dns", protocol: "UDP", port: 53, targetPort: 53 }] },
        annotations: {},
        finalizers: [STOCK_LB_CLEANUP_FINALIZER],
      };
    case "sticky":
      return { spec: { ...base, ports: [tcp(9000)] }, annotations: {}, finalizers: [STOCK_LB_CLEANUP_FINALIZER] };
  }
}

describe("adopt: migration from the stock CCM", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon | undefined;
  let configPath: string;
  let seed: StockSeed;
  const lb: Partial<Record<Name, string>> = {};

  const dccm = (...args: string[]): Promise<Run> => adopt(env, configPath, args);

  const read = (name: string): Promise<k8s.V1Service> => core.readNamespacedService({ name, namespace: "default" });
  const gceState = (): string =>
    JSON.stringify(
      env.gce
        .listResources()
        .filter((r) => r.kind !== "instances")
        .map((r) => [r.kind, r.scope, r.name, r.properties]),
    );

  before(async () => {
    env = await startTestEnv({ backend: "gs" });
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    configPath = path.join(env.dir, "dccm.json");
    fs.writeFileSync(configPath, JSON.stringify(RAW_CONFIG));
    for (const node of NODES) {
      env.gce.putInstance(node.name, { zone: node.zone });
      const created = await core.createNode({
        body: {
          metadata: { name: node.name, labels: { "topology.kubernetes.io/zone": node.zone, ...node.labels } },
          spec: {
            providerID: `gce://dccm-test/${node.zone}/${node.name}`,
            podCIDR: node.podCIDR,
            podCIDRs: [node.podCIDR],
          },
        },
      });
      node.uid = created.metadata?.uid ?? "";
    }
    const stock: StockService[] = [];
    for (const name of SERVICES) {
      const { spec: serviceSpec, annotations, finalizers } = spec(name);
      const created = await core.createNamespacedService({
        namespace: "default",
        body: { metadata: { name, namespace: "default", annotations, finalizers }, spec: serviceSpec },
      });
      const uid = created.metadata?.uid ?? "";
      lb[name] = loadBalancerName(uid);
      stock.push({
        namespace: "default",
        name,
        uid,
        scheme: name === "ilb" ? "Internal" : "External",
        ports: (created.spec?.ports ?? []).map((port) => ({
          port: port.port,
          protocol: port.protocol === "UDP" ? "UDP" : "TCP",
          nodePort: port.nodePort ?? 0,
        })),
        externalTrafficPolicy: name === "local" ? "Local" : "Cluster",
        ...(created.spec?.healthCheckNodePort !== undefined
          ? { healthCheckNodePort: created.spec.healthCheckNodePort }
          : {}),
        // The stock CCM made this one sticky, and someone set the Service back: its target pool would be replaced.
        ...(name === "sticky" ? { sessionAffinity: "ClientIP" as const } : {}),
      });
    }
    seed = seedStockCcm(env.gce, E2E_STOCK_CLUSTER, stock, NODES);
    // What the stock CCM wrote into each Service's status.
    for (const name of SERVICES) {
      await core.replaceNamespacedServiceStatus({
        name,
        namespace: "default",
        body: {
          ...(await read(name)),
          status: { loadBalancer: { ingress: [{ ip: seed.ips[`default/${name}`], ipMode: "VIP" }] } },
        },
      });
    }
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("--dry-run changes nothing anywhere and says, per Service, what adoption does; a replace is refused", async () => {
    const before = gceState();
    const run = await dccm("--dry-run");
    assert.equal(gceState(), before, "GCE unchanged");
    assert.deepEqual(await backendContents(env), new Map(), "the backend unchanged: empty");
    assert.equal(run.code, 1, "sticky would be replaced");
    const lines = run.stdout.split("\n");
    const section = (subject: string): string[] => {
      const start = lines.findIndex((line) => line.startsWith(`${subject} (stack `));
      const end = lines.findIndex((line, index) => index > start && !line.startsWith("  "));
      return lines.slice(start, end);
    };
    // Nothing promoted: under addressReservation transient (the default) the rule keeps its ephemeral IP.
    assert.deepEqual(section("Service default/ext"), [
      "Service default/ext (stack service.default.ext): would be adopted",
      "  import default/ext:firewall",
      "  import default/ext:forwarding-rule-tcp",
      "  import default/ext:target-pool",
    ]);
    // The internal rule GCE reads back with networkTier PREMIUM, which dccm does not declare
    // (Optional + Computed in the provider: no diff), is adopted as it is: nothing replaced.
    const ilb = section("Service default/ilb");
    assert.equal(ilb[0], "Service default/ilb (stack service.default.ilb): would be adopted", run.stdout);
    assert.deepEqual(
      ilb.filter((line) => line.startsWith("  replace") || line.includes("networkTier")),
      [],
      run.stdout,
    );
    assert.ok(ilb.includes("  import default/ilb:forwarding-rule-tcp"), run.stdout);
    // The excluded Node's route is the cluster stack's like any other.
    const cluster = section("Cluster");
    assert.equal(cluster[0], "Cluster (stack cluster): would be adopted", run.stdout);
    assert.deepEqual(
      cluster.filter((line) => line.startsWith("  import cluster:route-")),
      [
        "  import cluster:route-node-a1",
        "  import cluster:route-node-b1",
        "  import cluster:route-node-b2",
        "  import cluster:route-node-x1",
      ],
      run.stdout,
    );
    assert.deepEqual(section("Service default/sticky").slice(0, 1), [
      "Service default/sticky (stack service.default.sticky): not adopted: would replace default/sticky:forwarding-rule-tcp, default/sticky:target-pool (pass --allow-replace to accept)",
    ]);
    assert.ok(lines.includes("  replace TargetPool default/sticky:target-pool because sessionAffinity"), run.stdout);
    assert.ok(lines.includes('      sessionAffinity: "CLIENT_IP" → "NONE"'), run.stdout);
    assert.deepEqual(lines.slice(0, 4), [
      "Service default/dns: would be pinned to its target pool (annotation dccm.io/backend: target-pool; move it with dccm adopt --to backend-service)",
      "Service default/ext: would be pinned to its target pool (annotation dccm.io/backend: target-pool; move it with dccm adopt --to backend-service)",
      "Service default/local: would be pinned to its target pool (annotation dccm.io/backend: target-pool; move it with dccm adopt --to backend-service)",
      "Service default/sticky: would be pinned to its target pool (annotation dccm.io/backend: target-pool; move it with dccm adopt --to backend-service)",
    ]);
    // 25 imports: the cluster stack's 8 (4 routes, the excluded Node's included; 2 groups; the legacy
    // node health check and its firewall) and the Services' 17; the 2 replaces are sticky's only
    // (refused); adopted resources keep their descriptions (dccm's owner marker is written only on
    // what it creates) and the firewalls their destinationRanges. The third update is sticky's
    // firewall (refused): it opens towards its rule's IP, which the replace it would make leaves
    // unknown until the run under addressReservation transient (no address <lb> holds it).
    assert.equal(
      lines.at(-2),
      "Adoption: 0 addresses to promote, 25 to import, 3 to update in place, 2 to replace, 1 to create, 1 stacks refused",
      run.stdout,
    );
    for (const name of SERVICES)
      assert.equal(
        (await read(name)).metadata?.annotations?.["dccm.io/backend"],
        undefined,
        `${name} not annotated by a dry run`,
      );
  });

  it("dccm daemon --adopt: every Service keeps its IP; nothing that existed is created, replaced or deleted; the finalizers are dccm's", async () => {
    env.gce.clearHistory();
    daemon = new Daemon(
      daemonOptions(env, parseConfig(RAW_CONFIG), {
        leaderElection: false,
        driftMs: 15_000,
        driftListing: { computeEndpoint: env.gce.computeEndpoint },
        // Compute access, as the daemon has in a cluster: --to backend-service pins the rule's IP first.
        firstUpGuard: { computeEndpoint: env.gce.computeEndpoint },
        adopt: { allowReplace: false, computeEndpoint: env.gce.computeEndpoint },
      }),
    );
    await daemon.start(() => assert.fail("lost leadership"));
    await daemon.idle();
    for (const name of ["ext", "local", "ilb", "dns"] as const) {
      const service = await read(name);
      assert.deepEqual(
        service.status?.loadBalancer?.ingress?.map((ingress) => ingress.ip),
        [seed.ips[`default/${name}`]],
        `${name} keeps its IP`,
      );
      assert.deepEqual(
        service.metadata?.finalizers,
        [LB_FINALIZER],
        `${name}: the stock finalizers replaced by dccm's`,
      );
      assert.equal(
        service.metadata?.annotations?.["dccm.io/backend"],
        name === "ilb" ? undefined : "target-pool",
        `${name}'s pin`,
      );
      const rule = env.gce.listResources().find((r) => r.kind === "forwardingRules" && r.name === lb[name]);
      assert.equal(rule?.properties.ipAddress, seed.ips[`default/${name}`], `${name}'s forwarding rule keeps its IP`);
    }
    const seeded = new Set(seed.resources.map((r) => `${r.kind}/${r.scope}/${r.name}`));
    const history = env.gce.history();
    assert.deepEqual(
      history.filter((entry) => entry.op !== "update" && seeded.has(`${entry.kind}/${entry.scope}/${entry.name}`)),
      [],
      "no create or delete of anything the stock CCM made",
    );
    assert.deepEqual(
      history.filter((entry) => entry.op === "delete"),
      [],
    );
    assert.deepEqual(
      history
        .filter((entry) => entry.op === "create")
        .map((entry) => `${entry.kind}/${entry.scope}/${entry.name}`)
        .sort(),
      ["healthChecks/us-central1/k8s-e2e0cafe-node"],
      "created: dccm's regional node health check only (no address: each rule keeps its ephemeral IP)",
    );
    // The Node out of load balancers: its route adopted untouched, and in no target pool or group.
    const excluded = NODES.find((node) => node.name === "node-x1");
    assert.deepEqual(
      history.filter((entry) => entry.kind === "routes" && entry.name === `e2e-${excluded?.uid ?? ""}`),
      [],
    );
    assert.ok(env.gce.listResources().some((r) => r.kind === "routes" && r.name === `e2e-${excluded?.uid ?? ""}`));
    const members = env.gce
      .listResources()
      .filter((r) => r.kind === "targetPools" || r.kind === "instanceGroups")
      .flatMap((r) => (Array.isArray(r.properties.instances) ? r.properties.instances : []))
      .map(String);
    assert.deepEqual(
      members.filter((link) => link.endsWith("/node-x1")),
      [],
    );
    // sticky: refused (its target pool would be replaced), held, told, untouched.
    const sticky = await read("sticky");
    assert.deepEqual(sticky.metadata?.finalizers, [STOCK_LB_CLEANUP_FINALIZER]);
    assert.deepEqual(
      history.filter((entry) => entry.name === lb.sticky || entry.name === `k8s-fw-${lb.sticky ?? ""}`),
      [],
    );
    const events = await core.listNamespacedEvent({
      namespace: "default",
      fieldSelector: "involvedObject.name=sticky,involvedObject.kind=Service",
    });
    assert.deepEqual(
      events.items.map((event) => [event.type, event.reason, event.message]),
      [
        [
          "Warning",
          "AdoptionRefused",
          "Not adopted: would replace default/sticky:forwarding-rule-tcp, default/sticky:target-pool (pass --allow-replace to accept)",
        ],
      ],
    );
  });

  it("an out-of-band change after adoption is put back like any other", async () => {
    const name = `k8s-fw-${lb.ext ?? ""}`;
    env.gce.deleteOutOfBand("firewalls", name);
    await eventually("the firewall put back by a drift pass", () =>
      env.gce.listResources().some((r) => r.kind === "firewalls" && r.name === name) ? true : undefined,
    );
  });

  it("--to backend-service moves one Service with its IP; the shared legacy health check stays for the other target pools", async () => {
    env.gce.clearHistory();
    const ext = lb.ext ?? "";
    const ip = seed.ips["default/ext"];
    const run = await dccm("--to", "backend-service", "--service", "default/ext");
    assert.deepEqual(
      [run.code, run.stdout, run.stderr],
      [
        0,
        `Service default/ext: annotated dccm.io/backend: backend-service; dccm daemon recreates its forwarding rule on ${ip} and deletes its target pool\n`,
        "",
      ],
    );
    const has = (kind: string, name: string): boolean =>
      env.gce.listResources().some((r) => r.kind === kind && r.name === name);
    await eventually("ext on a backend service, its target pool gone", () =>
      has("backendServices", ext) && !has("targetPools", ext) && has("forwardingRules", ext) ? true : undefined,
    );
    await daemon?.idle();
    const rule = env.gce.listResources().find((r) => r.kind === "forwardingRules" && r.name === ext);
    assert.equal(rule?.properties.ipAddress, ip);
    assert.match(String(rule?.properties.backendService), new RegExp(`/regions/us-central1/backendServices/${ext}$`));
    assert.deepEqual(
      (await read("ext")).status?.loadBalancer?.ingress?.map((ingress) => ingress.ip),
      [ip],
    );
    assert.equal(
      has("httpHealthChecks", "k8s-e2e0cafe-node"),
      true,
      "dns and sticky still use the shared legacy check",
    );
    const ruleSteps = env.gce.history().filter((entry) => entry.kind === "forwardingRules" && entry.name === ext);
    assert.deepEqual(
      ruleSteps.map((entry) => entry.op),
      ["delete", "create"],
    );
    const gapSeconds = (ruleSteps[1].at - ruleSteps[0].at) / 1000;
    process.stdout.write(
      `      (default/ext was without a forwarding rule for ${gapSeconds.toFixed(2)} s in the emulator)\n`,
    );
    const moved = await dccm("--to", "backend-service", "--service", "default/ext");
    assert.deepEqual([moved.code, moved.stdout], [0, "Service default/ext is already on a backend service\n"]);
  });

  it("--to backend-service of an ETP=Local Service: its own legacy health check goes with its target pool", async () => {
    const local = lb.local ?? "";
    const ip = seed.ips["default/local"];
    const run = await dccm("--to", "backend-service", "--service", "default/local");
    assert.equal(run.code, 0, run.stderr);
    const has = (kind: string, name: string): boolean =>
      env.gce.listResources().some((r) => r.kind === kind && r.name === name);
    await eventually("local on a backend service, its target pool and legacy check gone", () =>
      has("backendServices", local) && !has("targetPools", local) && !has("httpHealthChecks", local) ? true : undefined,
    );
    await daemon?.idle();
    assert.equal(has("healthChecks", local), true, "its regional health check instead");
    assert.equal(
      env.gce.listResources().find((r) => r.kind === "forwardingRules" && r.name === local)?.properties.ipAddress,
      ip,
    );
    assert.deepEqual(
      (await read("local")).status?.loadBalancer?.ingress?.map((ingress) => ingress.ip),
      [ip],
    );
  });
});

describe("adopt: dccm adopt from the command line", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let configPath: string;

  before(async () => {
    env = await startTestEnv({ backend: "gs" });
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    configPath = path.join(env.dir, "dccm.json");
    fs.writeFileSync(configPath, JSON.stringify(RAW_CONFIG));
  });

  after(async () => {
    await env?.stop();
  });

  it("adopts every stack with the IP kept, and a second run finds nothing left to adopt", async () => {
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    const node = await core.createNode({
      body: {
        metadata: { name: "node-a1", labels: { "topology.kubernetes.io/zone": "us-central1-a" } },
        spec: {
          providerID: "gce://dccm-test/us-central1-a/node-a1",
          podCIDR: "10.64.1.0/24",
          podCIDRs: ["10.64.1.0/24"],
        },
      },
    });
    const created = await core.createNamespacedService({
      namespace: "default",
      body: {
        metadata: { name: "web", namespace: "default", finalizers: [STOCK_LB_CLEANUP_FINALIZER] },
        spec: {
          type: "LoadBalancer",
          selector: { app: "web" },
          ports: [{ name: "http", protocol: "TCP", port: 80, targetPort: 8080 }],
        },
      },
    });
    const uid = created.metadata?.uid ?? "";
    const seed = seedStockCcm(
      env.gce,
      E2E_STOCK_CLUSTER,
      [
        {
          namespace: "default",
          name: "web",
          uid,
          scheme: "External",
          ports: [{ port: 80, protocol: "TCP", nodePort: created.spec?.ports?.[0]?.nodePort ?? 0 }],
          externalTrafficPolicy: "Cluster",
        },
      ],
      [{ name: "node-a1", zone: "us-central1-a", uid: node.metadata?.uid ?? "", podCIDR: "10.64.1.0/24" }],
    );
    const ip = seed.ips["default/web"];
    env.gce.clearHistory();
    const first = await adopt(env, configPath, []);
    assert.equal(first.code, 0, first.stderr);
    const lb = loadBalancerName(uid);
    // The stock CCM makes instance groups only for internal load balancers: the cluster stack creates this one.
    assert.deepEqual(first.stdout.split("\n").slice(0, 6), [
      "Service default/web: pinned to its target pool (annotation dccm.io/backend: target-pool; move it with dccm adopt --to backend-service)",
      "Cluster (stack cluster): adopted",
      "  import cluster:node-hc-fw",
      "  import cluster:node-legacy-hc",
      "  import cluster:route-node-a1",
      "  create InstanceGroup cluster:ig-us-central1-a",
    ]);
    const lines = first.stdout.split("\n");
    const web = lines.indexOf("Service default/web (stack service.default.web): adopted");
    // Nothing promoted (addressReservation transient, the default): the rule keeps its ephemeral IP.
    assert.deepEqual(lines.slice(web, web + 4), [
      "Service default/web (stack service.default.web): adopted",
      "  import default/web:firewall",
      "  import default/web:forwarding-rule-tcp",
      "  import default/web:target-pool",
    ]);
    assert.equal(
      env.gce.listResources().find((r) => r.kind === "forwardingRules" && r.name === lb)?.properties.ipAddress,
      ip,
    );
    const service = await core.readNamespacedService({ name: "web", namespace: "default" });
    assert.deepEqual(
      service.status?.loadBalancer?.ingress?.map((ingress) => ingress.ip),
      [ip],
    );
    assert.deepEqual(service.metadata?.finalizers, [LB_FINALIZER]);
    assert.equal(service.metadata?.annotations?.["dccm.io/backend"], "target-pool");
    const seeded = new Set(seed.resources.map((r) => `${r.kind}/${r.scope}/${r.name}`));
    assert.deepEqual(
      env.gce
        .history()
        .filter((entry) => entry.op !== "update" && seeded.has(`${entry.kind}/${entry.scope}/${entry.name}`)),
      [],
    );
    assert.deepEqual(await backendStackNames(env, "dccm-e2e0cafe"), ["cluster", "service.default.web"]);
    env.gce.clearHistory();
    const second = await adopt(env, configPath, []);
    assert.deepEqual(
      [second.code, second.stdout],
      [
        0,
        "Adoption: 0 addresses to promote, 0 to import, 0 to update in place, 0 to replace, 0 to create, 0 stacks refused\n",
      ],
    );
    assert.deepEqual(env.gce.history(), []);
  });
});

describe("adopt: a dry run after a partial adoption", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let configPath: string;

  before(async () => {
    env = await startTestEnv({ backend: "gs" });
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    configPath = path.join(env.dir, "dccm.json");
    fs.writeFileSync(configPath, JSON.stringify(RAW_CONFIG));
  });

  after(async () => {
    await env?.stop();
  });

  it("reads what the real stacks hold, read-only, and reports exactly the imports the real run then does", async () => {
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    const node = await core.createNode({
      body: {
        metadata: { name: "node-a1", labels: { "topology.kubernetes.io/zone": "us-central1-a" } },
        spec: {
          providerID: "gce://dccm-test/us-central1-a/node-a1",
          podCIDR: "10.64.1.0/24",
          podCIDRs: ["10.64.1.0/24"],
        },
      },
    });
    const stock: StockService[] = [];
    for (const name of ["web", "sticky"]) {
      const created = await core.createNamespacedService({
        namespace: "default",
        body: {
          metadata: { name, namespace: "default", finalizers: [STOCK_LB_CLEANUP_FINALIZER] },
          spec: {
            type: "LoadBalancer",
            selector: { app: name },
            ports: [{ name: "http", protocol: "TCP", port: 80, targetPort: 8080 }],
          },
        },
      });
      stock.push({
        namespace: "default",
        name,
        uid: created.metadata?.uid ?? "",
        scheme: "External",
        ports: [{ port: 80, protocol: "TCP", nodePort: created.spec?.ports?.[0]?.nodePort ?? 0 }],
        externalTrafficPolicy: "Cluster",
        // Its target pool would be replaced (the Service is not sticky): the first adoption refuses it.
        ...(name === "sticky" ? { sessionAffinity: "ClientIP" as const } : {}),
      });
    }
    const seed = seedStockCcm(env.gce, E2E_STOCK_CLUSTER, stock, [
      { name: "node-a1", zone: "us-central1-a", uid: node.metadata?.uid ?? "", podCIDR: "10.64.1.0/24" },
    ]);
    const partial = await adopt(env, configPath, []);
    assert.equal(partial.code, 1, "sticky refused: the cluster stack and web adopted");
    // Its owner sets it back to what the stock CCM made: now it can be adopted without a replace.
    const sticky = await core.readNamespacedService({ name: "sticky", namespace: "default" });
    await core.replaceNamespacedService({
      name: "sticky",
      namespace: "default",
      body: { ...sticky, spec: { ...sticky.spec, sessionAffinity: "ClientIP" } },
    });
    const backend = await backendContents(env);
    const gce = JSON.stringify(env.gce.listResources().map((r) => [r.kind, r.scope, r.name, r.properties]));
    env.gce.clearHistory();

    const dry = await adopt(env, configPath, ["--dry-run"]);
    assert.equal(dry.code, 0, dry.stderr);
    assert.deepEqual(
      await backendContents(env),
      backend,
      "the backend byte for byte (gs://: every object's MD5 and generation)",
    );
    assert.equal(
      JSON.stringify(env.gce.listResources().map((r) => [r.kind, r.scope, r.name, r.properties])),
      gce,
      "GCE unchanged",
    );
    assert.deepEqual(env.gce.history(), [], "no write to GCE");
    const expected = (verdict: string): string =>
      [
        `Service default/sticky (stack service.default.sticky): ${verdict}`,
        "  import default/sticky:firewall",
        "  import default/sticky:forwarding-rule-tcp",
        "  import default/sticky:target-pool",
        "Adoption: 0 addresses to promote, 3 to import, 0 to update in place, 0 to replace, 0 to create, 0 stacks refused",
        "",
      ].join("\n");
    const withoutChanges = (stdout: string): string =>
      stdout
        .split("\n")
        .filter((line) => !/^ {2}(update|replace|create|delete) |^ {6}/.test(line))
        .join("\n");
    assert.equal(withoutChanges(dry.stdout), expected("would be adopted"));

    const real = await adopt(env, configPath, []);
    assert.equal(real.code, 0, `${real.stdout}\n${real.stderr}`);
    assert.equal(withoutChanges(real.stdout), expected("adopted"));
    assert.equal(
      dry.stdout.replace(": would be adopted", ": adopted"),
      real.stdout,
      "the dry run's report is the real run's, change for change",
    );
    // Nothing promoted (addressReservation transient, the default): the rule keeps its IP, and no address holds it.
    const lb = loadBalancerName(stock[1].uid);
    assert.deepEqual(
      [
        env.gce.listResources().find((r) => r.kind === "forwardingRules" && r.name === lb)?.properties.ipAddress,
        env.gce.listResources().some((r) => r.kind === "addresses" && r.name === lb),
      ],
      [seed.ips["default/sticky"], false],
    );
  });
});
