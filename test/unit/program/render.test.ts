// renderProgram(stackProgram, config) on the fixture: every resource of every stack, exactly.
import * as assert from "node:assert/strict";
import * as path from "node:path";

import * as pulumi from "@pulumi/pulumi";

import { computedState, renderProgram, type RenderedResource, type RenderResult } from "../../../program/render";
import { stackOfResource } from "../../../model/stacks";
import { RejectedServicesError, snapshotFile, stackProgram } from "../../../program/stackProgram";
import {
  backendServiceInputs,
  CLUSTER_DESCRIPTION,
  describedBy,
  externalAddressInputs,
  firewallInputs,
  forwardingRuleInputs,
  IG_B,
  instanceGroupInputs,
  NODE_HC,
  NODE_HC_FIREWALL,
  regionHealthCheckInputs,
  routeInputs,
  serviceFirewall,
  V1,
} from "../../support/builders";

const SNAPSHOT = path.resolve(__dirname, "../../../../test/fixtures/cluster.json");

const CONFIG: Record<string, string> = {
  project: "dccm-test",
  region: "us-central1",
  network: "k8s-net",
  subnetwork: "k8s-subnet",
  nodeTags: '["k8s-node"]',
  clusterName: "prod",
  clusterId: "c0ffee1234",
  clusterCIDR: "10.64.0.0/14",
  snapshot: SNAPSHOT,
  scope: "all",
};

// <lb> = ("a" + UID without dashes) cut to 32; fixture UIDs are 5ec0000N-7a1b-4c2d-8e3f-a0b1c2d3e4f5.
const WEB_LB = "a5ec000017a1b4c2d8e3fa0b1c2d3e4f";
const INTERNAL_LB = "a5ec000037a1b4c2d8e3fa0b1c2d3e4f";
const DNS_LB = "a5ec000057a1b4c2d8e3fa0b1c2d3e4f";
// computedState's placeholder for an Address: 1 + sha256(name)[0..2] % 254 as the last octet.
const WEB_IP = "203.0.113.136";
const DNS_IP = "203.0.113.224";
const INTERNAL_IP = "10.128.0.199";

const A = "gcp:compute/address:Address";
const FW = "gcp:compute/firewall:Firewall";
const FR = "gcp:compute/forwardingRule:ForwardingRule";
const BS = "gcp:compute/regionBackendService:RegionBackendService";
const HC = "gcp:compute/regionHealthCheck:RegionHealthCheck";
const IG = "gcp:compute/instanceGroup:InstanceGroup";
const RT = "gcp:compute/route:Route";

/** Scope all as the program declares it by default (addressReservation always): every IPv4 Service reserves `<lb>`. */
const EXPECTED_LIST: [string, string, string][] = [
  ["cluster", FW, "cluster:node-hc-fw"],
  ["cluster", IG, "cluster:ig-us-central1-a"],
  ["cluster", IG, "cluster:ig-us-central1-b"],
  ["cluster", HC, "cluster:node-hc"],
  ["cluster", RT, "cluster:route-node-a1"],
  ["cluster", RT, "cluster:route-node-a2"],
  ["cluster", RT, "cluster:route-node-b1"],
  ["cluster", RT, "cluster:route-node-b2"],
  ["cluster", RT, "cluster:route-node-c1"],
  ["service.db.internal", A, "db/internal:address"],
  ["service.db.internal", FW, "db/internal:firewall"],
  ["service.db.internal", FR, "db/internal:forwarding-rule-tcp"],
  ["service.db.internal", BS, "db/internal:backend-tcp"],
  ["service.default.local", A, "default/local:address"],
  ["service.default.local", FW, "default/local:firewall"],
  ["service.default.local", FW, "default/local:hc-firewall"],
  ["service.default.local", FR, "default/local:forwarding-rule-tcp"],
  ["service.default.local", BS, "default/local:backend-tcp"],
  ["service.default.local", HC, "default/local:hc"],
  ["service.default.restricted", A, "default/restricted:address"],
  ["service.default.restricted", FW, "default/restricted:firewall"],
  ["service.default.restricted", FR, "default/restricted:forwarding-rule-tcp"],
  ["service.default.restricted", BS, "default/restricted:backend-tcp"],
  ["service.default.web", A, "default/web:address"],
  ["service.default.web", FW, "default/web:firewall"],
  ["service.default.web", FR, "default/web:forwarding-rule-tcp"],
  ["service.default.web", BS, "default/web:backend-tcp"],
  ["service.kube-system.dns", A, "kube-system/dns:address"],
  ["service.kube-system.dns", FW, "kube-system/dns:firewall"],
  ["service.kube-system.dns", FR, "kube-system/dns:forwarding-rule-tcp"],
  ["service.kube-system.dns", FR, "kube-system/dns:forwarding-rule-udp"],
  ["service.kube-system.dns", BS, "kube-system/dns:backend-tcp"],
  ["service.kube-system.dns", BS, "kube-system/dns:backend-udp"],
];

/** Scope all with addressReservation transient: only kube-system/dns, whose TCP and UDP rules share its IP, reserves `<lb>`. */
const EXPECTED_LIST_TRANSIENT = EXPECTED_LIST.filter(
  ([stack, type]) => type !== A || stack === "service.kube-system.dns",
);

const BROKEN_MESSAGES = [
  'Service default/broken: spec.loadBalancerSourceRanges: "10.0.0.0/33" is not a CIDR (expected a.b.c.d/n)',
  "Service default/broken: spec.ports[0].protocol: SCTP is not supported by GCE load balancers (TCP or UDP)",
];

const backendServiceUrl = (name: string) => `${V1}/regions/us-central1/backendServices/${name}`;

/** Exact inputs (the program's default, addressReservation always): the cluster resources and the web, dns and internal Services. */
const EXPECTED_INPUTS: Record<string, Record<string, unknown>> = {
  "cluster:ig-us-central1-a": instanceGroupInputs("us-central1-a", ["node-a1", "node-a2"]),
  "cluster:ig-us-central1-b": instanceGroupInputs("us-central1-b", ["node-b1"]),
  "cluster:node-hc": regionHealthCheckInputs("k8s-c0ffee1234-node", 10256, CLUSTER_DESCRIPTION),
  "cluster:node-hc-fw": firewallInputs(NODE_HC_FIREWALL),
  "cluster:route-node-a1": routeInputs(
    "node-a1",
    "11111111-1111-4111-8111-111111111111",
    "10.64.1.0/24",
    "us-central1-a",
  ),
  "cluster:route-node-a2": routeInputs(
    "node-a2",
    "22222222-2222-4222-8222-222222222222",
    "10.64.2.0/24",
    "us-central1-a",
  ),
  "cluster:route-node-b1": routeInputs(
    "node-b1",
    "33333333-3333-4333-8333-333333333333",
    "10.64.3.0/24",
    "us-central1-b",
  ),
  "cluster:route-node-b2": routeInputs(
    "node-b2",
    "44444444-4444-4444-8444-444444444444",
    "10.64.4.0/24",
    "us-central1-b",
  ),
  "cluster:route-node-c1": routeInputs(
    "node-c1",
    "55555555-5555-4555-8555-555555555555",
    "10.64.5.0/24",
    "us-central1-c",
  ),

  "default/web:address": externalAddressInputs(WEB_LB, describedBy("default/web")),
  "default/web:backend-tcp": backendServiceInputs(WEB_LB, describedBy("default/web"), NODE_HC),
  "default/web:forwarding-rule-tcp": forwardingRuleInputs(
    WEB_LB,
    describedBy("default/web"),
    WEB_IP,
    ["80", "443", "8080"],
    backendServiceUrl(WEB_LB),
  ),
  "default/web:firewall": firewallInputs(
    serviceFirewall("default/web", WEB_LB, ["0.0.0.0/0"], [{ protocol: "tcp", ports: ["80", "443", "8080"] }]),
    WEB_IP,
  ),

  "kube-system/dns:address": externalAddressInputs(DNS_LB, describedBy("kube-system/dns")),
  "kube-system/dns:backend-tcp": backendServiceInputs(DNS_LB, describedBy("kube-system/dns"), NODE_HC),
  "kube-system/dns:backend-udp": backendServiceInputs(`${DNS_LB}-udp`, describedBy("kube-system/dns"), NODE_HC, {
    protocol: "UDP",
  }),
  "kube-system/dns:forwarding-rule-tcp": forwardingRuleInputs(
    DNS_LB,
    describedBy("kube-system/dns"),
    DNS_IP,
    ["53"],
    backendServiceUrl(DNS_LB),
  ),
  "kube-system/dns:forwarding-rule-udp": forwardingRuleInputs(
    `${DNS_LB}-udp`,
    describedBy("kube-system/dns"),
    DNS_IP,
    ["53"],
    backendServiceUrl(`${DNS_LB}-udp`),
    { ipProtocol: "UDP" },
  ),
  "kube-system/dns:firewall": firewallInputs(
    serviceFirewall(
      "kube-system/dns",
      DNS_LB,
      ["0.0.0.0/0"],
      [
        { protocol: "tcp", ports: ["53"] },
        { protocol: "udp", ports: ["53"] },
      ],
    ),
    DNS_IP,
  ),

  "db/internal:address": {
    project: "dccm-test",
    region: "us-central1",
    name: INTERNAL_LB,
    description: describedBy("db/internal"),
    addressType: "INTERNAL",
    subnetwork: "ilb-subnet",
    purpose: "SHARED_LOADBALANCER_VIP",
  },
  "db/internal:backend-tcp": backendServiceInputs(INTERNAL_LB, describedBy("db/internal"), NODE_HC, {
    loadBalancingScheme: "INTERNAL",
    network: "k8s-net",
  }),
  "db/internal:forwarding-rule-tcp": {
    project: "dccm-test",
    region: "us-central1",
    name: INTERNAL_LB,
    description: describedBy("db/internal"),
    ipAddress: INTERNAL_IP,
    ipProtocol: "TCP",
    loadBalancingScheme: "INTERNAL",
    ports: ["5432"],
    network: "k8s-net",
    subnetwork: "ilb-subnet",
    allowGlobalAccess: true,
    backendService: backendServiceUrl(INTERNAL_LB),
  },
  "db/internal:firewall": firewallInputs(
    serviceFirewall("db/internal", INTERNAL_LB, ["0.0.0.0/0"], [{ protocol: "tcp", ports: ["5432"] }]),
    INTERNAL_IP,
  ),
};

/** A forwarding rule declared without an IP: an ephemeral one (render's placeholder, as `<lb>`'s would be). */
function ephemeral(inputs: Record<string, unknown>): Record<string, unknown> {
  const { ipAddress: _ip, ...rest } = inputs;
  return rest;
}

/** Exact inputs with addressReservation transient: web and internal without `<lb>`, their rules without an IP; dns as always. */
const EXPECTED_INPUTS_TRANSIENT: Record<string, Record<string, unknown>> = Object.fromEntries(
  Object.entries(EXPECTED_INPUTS)
    .filter(([name]) => name !== "default/web:address" && name !== "db/internal:address")
    .map(([name, inputs]) => [
      name,
      name === "default/web:forwarding-rule-tcp" || name === "db/internal:forwarding-rule-tcp"
        ? ephemeral(inputs)
        : inputs,
    ]),
);

function list(resources: RenderedResource[]): [string, string, string][] {
  return resources.map((r): [string, string, string] => [r.stack, r.type, r.name]);
}

function inputsOf(resources: RenderedResource[], name: string): Record<string, unknown> | undefined {
  return resources.find((r) => r.name === name)?.inputs;
}

function errorOf(result: RenderResult): unknown {
  assert.ok("error" in result, "the program was expected to fail");
  return result.error;
}

function value<T>(output: pulumi.Output<T>): Promise<T> {
  return new Promise((resolve) => output.apply(resolve));
}

describe("program: renderProgram(stackProgram) on the fixture", () => {
  describe("scope all (the program's default: addressReservation always)", () => {
    let result: RenderResult;
    before(async () => {
      result = await renderProgram(stackProgram, CONFIG);
    });

    it("declares exactly these resources, sorted by stack, type and name", () => {
      assert.deepStrictEqual(list(result.resources), EXPECTED_LIST);
    });

    it("exact inputs of the cluster resources and of the web, dns and internal Services", () => {
      for (const [name, inputs] of Object.entries(EXPECTED_INPUTS))
        assert.deepStrictEqual(inputsOf(result.resources, name), inputs, name);
    });

    it("the forwarding rules use the IP of their Service's Address", () => {
      for (const key of ["default/web", "kube-system/dns", "db/internal"]) {
        const address = inputsOf(result.resources, `${key}:address`) ?? {};
        const ip = computedState(A, address).state.address;
        for (const rule of result.resources.filter((r) => r.type === FR && r.name.startsWith(`${key}:`)))
          assert.equal(rule.inputs.ipAddress, ip, rule.name);
      }
    });

    it("fails with RejectedServicesError naming the broken Service (so `up` deletes nothing), after declaring every valid one", () => {
      const error = errorOf(result);
      assert.ok(error instanceof RejectedServicesError);
      assert.deepStrictEqual(error.messages, BROKEN_MESSAGES);
      assert.equal(error.message, BROKEN_MESSAGES.join("\n"));
      assert.equal(
        result.resources.some((r) => r.name.startsWith("default/broken")),
        false,
      );
    });
  });

  describe("scope all, addressReservation transient (the daemon's default)", () => {
    let result: RenderResult;
    before(async () => {
      result = await renderProgram(stackProgram, { ...CONFIG, addressReservation: "transient" });
    });

    it("declares exactly these resources: an address only for the Service whose TCP and UDP rules share its IP", () => {
      assert.deepStrictEqual(list(result.resources), EXPECTED_LIST_TRANSIENT);
    });

    it("exact inputs of the cluster resources and of the web, dns and internal Services", () => {
      for (const [name, inputs] of Object.entries(EXPECTED_INPUTS_TRANSIENT))
        assert.deepStrictEqual(inputsOf(result.resources, name), inputs, name);
    });

    it("the forwarding rules of the Service that reserves an address use its IP; the others name none", () => {
      const address = inputsOf(result.resources, "kube-system/dns:address") ?? {};
      const ip = computedState(A, address).state.address;
      assert.deepStrictEqual(
        result.resources.filter((r) => r.type === FR).map((r) => [r.name, r.inputs.ipAddress]),
        [
          ["db/internal:forwarding-rule-tcp", undefined],
          ["default/local:forwarding-rule-tcp", undefined],
          ["default/restricted:forwarding-rule-tcp", undefined],
          ["default/web:forwarding-rule-tcp", undefined],
          ["kube-system/dns:forwarding-rule-tcp", ip],
          ["kube-system/dns:forwarding-rule-udp", ip],
        ],
      );
    });
  });

  it("scope cluster: only the cluster stack's resources, and its outputs", async () => {
    const result = await renderProgram(stackProgram, { ...CONFIG, scope: "cluster" });
    assert.deepStrictEqual(
      list(result.resources),
      EXPECTED_LIST.filter(([stack]) => stack === "cluster"),
    );
    assert.ok("outputs" in result, "scope cluster does not fail on a rejected Service");
    const outputs = result.outputs as {
      loadBalancers: Record<string, unknown>;
      instanceGroups: Record<string, pulumi.Output<string>>;
      routes: Record<string, pulumi.Output<string>>;
    };
    assert.deepStrictEqual(outputs.loadBalancers, {});
    assert.deepStrictEqual(Object.keys(outputs.instanceGroups), ["us-central1-a", "us-central1-b"]);
    assert.equal(await value(outputs.instanceGroups["us-central1-b"]), IG_B);
    assert.deepStrictEqual(Object.keys(outputs.routes), ["node-a1", "node-a2", "node-b1", "node-b2", "node-c1"]);
    assert.equal(await value(outputs.routes["node-c1"]), "prod-55555555-5555-4555-8555-555555555555");
  });

  it("scope service:default/web: only its resources, referring to the cluster stack by self link, same inputs as in scope all", async () => {
    const all = await renderProgram(stackProgram, CONFIG);
    const result = await renderProgram(stackProgram, { ...CONFIG, scope: "service:default/web" });
    assert.deepStrictEqual(
      list(result.resources),
      EXPECTED_LIST.filter(([stack]) => stack === "service.default.web"),
    );
    assert.deepStrictEqual(
      result.resources,
      all.resources.filter((r) => r.stack === "service.default.web"),
    );
    assert.ok("outputs" in result, "a valid Service's scope does not fail");
    const outputs = result.outputs as { loadBalancers: Record<string, pulumi.Output<unknown>> };
    assert.deepStrictEqual(Object.keys(outputs.loadBalancers), ["default/web"]);
    assert.deepStrictEqual(await value(outputs.loadBalancers["default/web"]), {
      ingress: [WEB_IP],
      resources: {
        address: WEB_LB,
        forwardingRules: [WEB_LB],
        backendServices: [WEB_LB],
        healthCheck: "k8s-c0ffee1234-node",
        firewalls: [`k8s-fw-${WEB_LB}`],
      },
      forwardingRuleShape: JSON.stringify({
        scheme: "EXTERNAL",
        networkTier: "PREMIUM",
        subnetwork: null,
        backend: "backend-service",
        frontends: [[WEB_LB, "TCP", { kind: "ports", ports: ["80", "443", "8080"] }]],
        targetPool: null,
        ipv6: null,
      }),
    });
  });

  describe("scope services:<i>/3 (CI chunks: sha256 of the key mod 3 is 0 for kube-system/dns and default/broken, 1 for the others)", () => {
    const chunkStacks: string[][] = [
      ["service.kube-system.dns"],
      ["service.db.internal", "service.default.local", "service.default.restricted", "service.default.web"],
      [],
    ];
    let all: RenderResult;
    let chunks: RenderResult[];
    before(async () => {
      all = await renderProgram(stackProgram, CONFIG);
      chunks = [];
      for (let index = 0; index < 3; index++)
        chunks.push(await renderProgram(stackProgram, { ...CONFIG, scope: `services:${index}/3` }));
    });

    it("each chunk declares exactly its Services' resources, with the inputs of scope all (the cluster by self link)", () => {
      for (const [index, stacks] of chunkStacks.entries()) {
        assert.deepStrictEqual(
          list(chunks[index].resources),
          EXPECTED_LIST.filter(([stack]) => stacks.includes(stack)),
          `chunk ${index}`,
        );
        assert.deepStrictEqual(
          chunks[index].resources,
          all.resources.filter((r) => stacks.includes(r.stack)),
          `chunk ${index}`,
        );
      }
    });

    it("the chunks and scope cluster together declare exactly what scope all declares, each resource once", async () => {
      const cluster = await renderProgram(stackProgram, { ...CONFIG, scope: "cluster" });
      const union = [...cluster.resources, ...chunks.flatMap((chunk) => chunk.resources)];
      assert.deepStrictEqual(list(union).sort(), EXPECTED_LIST.slice().sort());
    });

    it("the chunk holding the broken Service fails with its messages after declaring the valid one; the others succeed with their load balancers", () => {
      const error = errorOf(chunks[0]);
      assert.ok(error instanceof RejectedServicesError);
      assert.deepStrictEqual(error.messages, BROKEN_MESSAGES);
      assert.ok("outputs" in chunks[1] && "outputs" in chunks[2]);
      assert.deepStrictEqual(
        Object.keys((chunks[1].outputs as { loadBalancers: Record<string, unknown> }).loadBalancers),
        ["db/internal", "default/local", "default/restricted", "default/web"],
      );
      assert.deepStrictEqual((chunks[2].outputs as { loadBalancers: Record<string, unknown> }).loadBalancers, {});
    });
  });

  it("scope service:default/broken: declares nothing at all and fails with the rejections", async () => {
    const result = await renderProgram(stackProgram, { ...CONFIG, scope: "service:default/broken" });
    assert.deepStrictEqual(result.resources, []);
    assert.equal((errorOf(result) as Error).message, BROKEN_MESSAGES.join("\n"));
  });

  it("a Service outside the snapshot: declares nothing, no error (its stack is destroyed)", async () => {
    const result = await renderProgram(stackProgram, { ...CONFIG, scope: "service:default/gone" });
    assert.deepStrictEqual(result.resources, []);
    assert.ok("outputs" in result);
  });

  it("nodeTags as a comma-separated string is the same as a JSON list", async () => {
    const result = await renderProgram(stackProgram, { ...CONFIG, scope: "cluster", nodeTags: "k8s-node" });
    assert.deepStrictEqual(inputsOf(result.resources, "cluster:node-hc-fw"), EXPECTED_INPUTS["cluster:node-hc-fw"]);
  });

  it("a missing required key: fails naming the key, declares nothing", async () => {
    const { clusterId: _dropped, ...config } = CONFIG;
    const result = await renderProgram(stackProgram, config);
    assert.deepStrictEqual(result.resources, []);
    const error = errorOf(result);
    assert.ok(error instanceof pulumi.RunError);
    assert.equal(error.message, "dccm: invalid configuration:\n  clusterId: required");
    assert.equal((error.cause as Error).name, "ConfigError", "the cause is kept");
  });

  it("an unreadable snapshot: fails naming the file", async () => {
    const result = await renderProgram(stackProgram, { ...CONFIG, snapshot: "/nonexistent/cluster.json" });
    assert.deepStrictEqual(result.resources, []);
    assert.equal(
      (errorOf(result) as Error).message,
      "dccm:snapshot: cannot read /nonexistent/cluster.json: ENOENT: no such file or directory, open '/nonexistent/cluster.json'",
    );
    assert.equal(((errorOf(result) as Error).cause as NodeJS.ErrnoException).code, "ENOENT", "the cause is kept");
  });

  it("a bad scope: fails naming the value", async () => {
    const result = await renderProgram(stackProgram, { ...CONFIG, scope: "service:web" });
    assert.deepStrictEqual(result.resources, []);
    assert.equal(
      (errorOf(result) as Error).message,
      'dccm:scope: "service:web" is not all, cluster, service:<namespace>/<name> or services:<i>/<n>',
    );
  });

  describe("helpers", () => {
    const cases: [string, string][] = [
      ["cluster:ig-us-central1-a", "cluster"],
      ["cluster", "cluster"],
      ["default/web:forwarding-rule-tcp", "service.default.web"],
      ["kube-system/dns:backend-udp", "service.kube-system.dns"],
    ];
    for (const [name, stack] of cases) {
      it(`stackOfResource(${JSON.stringify(name)}) → ${stack}`, () => assert.equal(stackOfResource(name), stack));
    }
    // getRootDirectory() is the directory of Pulumi.yaml under the language host, "" or the placeholder "rootDirectory" elsewhere.
    const snapshotCases: [string, string, string][] = [
      ["cluster.json", "/ci/project", "/ci/project/cluster.json"],
      ["dumps/cluster.json", "/ci/project", "/ci/project/dumps/cluster.json"],
      ["../cluster.json", "/ci/project", "/ci/cluster.json"],
      ["/abs/cluster.json", "/ci/project", "/abs/cluster.json"],
      ["cluster.json", "", path.join(process.cwd(), "cluster.json")],
      ["cluster.json", "rootDirectory", path.join(process.cwd(), "cluster.json")],
      ["/abs/cluster.json", "", "/abs/cluster.json"],
    ];
    for (const [snapshot, projectDirectory, expected] of snapshotCases) {
      it(`snapshotFile(${JSON.stringify(snapshot)}, ${JSON.stringify(projectDirectory)}) → ${expected}`, () =>
        assert.equal(snapshotFile(snapshot, projectDirectory), expected));
    }
    it("computedState: regional, zonal and global self links; placeholder IPs only when not given", () => {
      assert.deepStrictEqual(computedState(BS, { project: "p", region: "r", name: "n" }), {
        id: "projects/p/regions/r/backendServices/n",
        state: {
          project: "p",
          region: "r",
          name: "n",
          selfLink: "https://www.googleapis.com/compute/v1/projects/p/regions/r/backendServices/n",
        },
      });
      assert.equal(computedState(IG, { project: "p", zone: "z", name: "n" }).id, "projects/p/zones/z/instanceGroups/n");
      assert.equal(computedState(FW, { project: "p", name: "n" }).id, "projects/p/global/firewalls/n");
      assert.equal(
        computedState("gcp:compute/httpHealthCheck:HttpHealthCheck", { project: "p", name: "n" }).id,
        "projects/p/global/httpHealthChecks/n",
      );
      assert.equal(
        computedState(FR, { project: "p", region: "r", name: "n", ipAddress: "192.0.2.1" }).state.ipAddress,
        "192.0.2.1",
      );
      assert.equal(
        computedState(A, { project: "dccm-test", region: "us-central1", name: WEB_LB, addressType: "EXTERNAL" }).state
          .address,
        WEB_IP,
      );
      assert.equal(
        computedState(A, { project: "dccm-test", region: "us-central1", name: INTERNAL_LB, addressType: "INTERNAL" })
          .state.address,
        INTERNAL_IP,
      );
      assert.deepStrictEqual(computedState("x:y:Z", { name: "n", a: 1 }), {
        id: "x:y:Z::n",
        state: { name: "n", a: 1 },
      });
    });
  });
});
