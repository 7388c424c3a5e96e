// `dccm render` of the fixture (external, internal, ETP=Local and TCP+UDP Services) with
// `networkProject`: where every resource lives, and every place the host project is named.
import * as assert from "node:assert/strict";
import * as path from "node:path";

import { runDccm } from "../../support/cli";
import { repoRoot } from "../../support/tooling/testenv-paths";

const SNAPSHOT = path.join(repoRoot(), "test/fixtures/cluster.json");
const CONFIG = path.join(repoRoot(), "test/fixtures/config.json");
const HOST = "vpc-host";
const SERVICE_PROJECT = "dccm-test";

interface Rendered {
  stack: string;
  type: string;
  name: string;
  inputs: Record<string, unknown>;
}

const FW = "gcp:compute/firewall:Firewall";
const RT = "gcp:compute/route:Route";

/** Every firewall and route of the render: in the host project. */
const IN_HOST: [string, string][] = [
  [FW, "cluster:node-hc-fw"],
  [RT, "cluster:route-node-a1"],
  [RT, "cluster:route-node-a2"],
  [RT, "cluster:route-node-b1"],
  [RT, "cluster:route-node-b2"],
  [RT, "cluster:route-node-c1"],
  [FW, "db/internal:firewall"],
  [FW, "default/local:firewall"],
  [FW, "default/local:hc-firewall"],
  [FW, "default/restricted:firewall"],
  [FW, "default/web:firewall"],
  [FW, "kube-system/dns:firewall"],
];

const HOST_NETWORK = `projects/${HOST}/global/networks/k8s-net`;
const HOST_ILB_SUBNET = `projects/${HOST}/regions/us-central1/subnetworks/ilb-subnet`;

/** Every input of every resource that names the host project: the firewalls' and routes' project, and the network references of the rest. */
const HOST_NAMED: [string, string, string][] = [
  ["cluster:ig-us-central1-a", "network", HOST_NETWORK],
  ["cluster:ig-us-central1-b", "network", HOST_NETWORK],
  ["cluster:node-hc-fw", "project", HOST],
  ["cluster:route-node-a1", "project", HOST],
  ["cluster:route-node-a2", "project", HOST],
  ["cluster:route-node-b1", "project", HOST],
  ["cluster:route-node-b2", "project", HOST],
  ["cluster:route-node-c1", "project", HOST],
  ["db/internal:address", "subnetwork", HOST_ILB_SUBNET],
  ["db/internal:backend-tcp", "network", HOST_NETWORK],
  ["db/internal:firewall", "project", HOST],
  ["db/internal:forwarding-rule-tcp", "network", HOST_NETWORK],
  ["db/internal:forwarding-rule-tcp", "subnetwork", HOST_ILB_SUBNET],
  ["default/local:firewall", "project", HOST],
  ["default/local:hc-firewall", "project", HOST],
  ["default/restricted:firewall", "project", HOST],
  ["default/web:firewall", "project", HOST],
  ["kube-system/dns:firewall", "project", HOST],
];

/** `[resource, input path, value]` of every string input that contains `needle`. */
function mentions(resources: Rendered[], needle: string): [string, string, string][] {
  const found: [string, string, string][] = [];
  const walk = (name: string, at: string, value: unknown): void => {
    if (typeof value === "string") {
      if (value.includes(needle)) found.push([name, at, value]);
    } else if (Array.isArray(value)) {
      value.forEach((item, index) => walk(name, `${at}[${index}]`, item));
    } else if (typeof value === "object" && value !== null) {
      for (const [key, item] of Object.entries(value)) walk(name, at === "" ? key : `${at}.${key}`, item);
    }
  };
  for (const resource of resources) walk(resource.name, "", resource.inputs);
  return found.sort(([a, x], [b, y]) => (a === b ? x.localeCompare(y) : a < b ? -1 : 1));
}

function render(...flags: string[]): Rendered[] {
  const run = runDccm(["render", "--snapshot", SNAPSHOT, "--config", CONFIG, ...flags]);
  // The fixture's default/broken Service is rejected: render says so on stderr and exits 0.
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout) as Rendered[];
}

describe("dccm render with networkProject (Shared VPC)", () => {
  let shared: Rendered[];
  let plain: Rendered[];
  before(() => {
    shared = render("--networkProject", HOST);
    plain = render();
  });

  it("every firewall and route, and nothing else, is in the host project", () => {
    assert.deepStrictEqual(
      shared.filter((r) => r.inputs.project === HOST).map((r) => [r.type, r.name]),
      IN_HOST,
    );
    assert.deepStrictEqual(
      shared.filter((r) => r.inputs.project !== HOST && r.inputs.project !== SERVICE_PROJECT).map((r) => r.name),
      [],
    );
  });

  it("names the host project on the firewalls' and routes' project and on network references, nowhere else", () => {
    assert.deepStrictEqual(mentions(shared, HOST), HOST_NAMED);
  });

  it("declares the same resources as without it, with the same inputs apart from those", () => {
    assert.deepStrictEqual(
      shared.map((r) => [r.stack, r.type, r.name]),
      plain.map((r) => [r.stack, r.type, r.name]),
    );
    const withoutHost = (resources: Rendered[], project: string): Record<string, unknown>[] =>
      resources.map((r) => {
        const inputs: Record<string, unknown> = { ...r.inputs };
        for (const [name, key] of HOST_NAMED) if (name === r.name) delete inputs[key];
        if (r.type === FW || r.type === RT) assert.equal(r.inputs.project, project, r.name);
        return inputs;
      });
    assert.deepStrictEqual(withoutHost(shared, HOST), withoutHost(plain, SERVICE_PROJECT));
  });

  it("without it, the host project is named nowhere and every resource is in project", () => {
    assert.deepStrictEqual(mentions(plain, HOST), []);
    assert.deepStrictEqual(
      plain.filter((r) => r.inputs.project !== SERVICE_PROJECT).map((r) => r.name),
      [],
    );
  });
});
