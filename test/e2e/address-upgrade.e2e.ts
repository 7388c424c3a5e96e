/**
 * The upgrade from the previous release, which reserved a static address `<lb>` for every Service,
 * to addressReservation `transient` (the default): the stacks are made by a real build of the
 * previous release (commit 9b3e15a, built by `bash scripts/testenv dccm-previous`) running as a
 * daemon process; this tree's daemon then takes them over. No IP changes, no GCE resource is
 * created, replaced or updated: the only operations are the deletes of the three `<lb>` (GCE
 * leaves each IP on its forwarding rule as ephemeral). Then `addressReservation: always` and back
 * to `transient` on the same cluster: the addresses are reserved on the rules' IPs and released
 * again, with no other operation and no IP change.
 *
 * Daemon processes (bin/dccm.js daemon), a real kube-apiserver, the real Pulumi engine, the GCE
 * emulator.
 */
import * as assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { loadBalancerName } from "../../model";
import { createNode, E2E_CONFIG, lbService } from "../support/e2e/cluster";
import { DaemonProcesses, type RunningDaemon } from "../support/e2e/daemon-process";
import { declaredResourcesOf } from "../support/e2e/invariants";
import { startTestEnv, type TestEnv } from "../support/e2e/env";
import { repoRoot } from "../support/tooling/testenv-paths";
import { eventually } from "../support/wait";

const SERVICES = {
  "up-bs": lbService("up-bs", {}, { "dccm.io/backend": "backend-service" }),
  "up-tp": lbService("up-tp", {}, { "dccm.io/backend": "target-pool" }),
  "up-ilb": lbService("up-ilb", {}, { "networking.gke.io/load-balancer-type": "Internal" }),
} as const;
type Name = keyof typeof SERVICES;
const NAMES = Object.keys(SERVICES) as Name[];

describe("upgrade from the previous release's stacks: every <lb> released, no IP changed, nothing replaced", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let transient: DaemonProcesses;
  let always: DaemonProcesses;
  let previousDccm: string;
  const ips = new Map<Name, string>();
  const lbs = new Map<Name, string>();

  const ingressOf = async (name: string): Promise<string | undefined> =>
    (await core.readNamespacedService({ name, namespace: "default" })).status?.loadBalancer?.ingress?.[0]?.ip;
  const addresses = () =>
    env.gce
      .listResources()
      .filter((resource) => resource.kind === "addresses")
      .map((resource) => `${resource.name} ${String(resource.properties.address)}`)
      .sort();
  const declaredAddresses = async () =>
    (await declaredResourcesOf(env)).filter((declared) => declared.startsWith("addresses "));
  /** Every GCE operation since the last clearHistory, as `op kind name`, sorted. */
  const operations = () =>
    env.gce
      .history()
      .map((entry) => `${entry.op} ${entry.kind} ${entry.name}`)
      .sort();
  const lbOf = (name: Name): string => lbs.get(name) ?? assert.fail(`${name} has no load balancer name`);
  const ipOf = (name: Name): string => ips.get(name) ?? assert.fail(`${name} has no IP`);
  /** `<lb> ip` of every Service, sorted: what each reservation holds. */
  const reservedOnTheirIps = () => NAMES.map((name) => `${lbOf(name)} ${ipOf(name)}`).sort();
  const ruleIps = () =>
    NAMES.map((name) => {
      const rule = env.gce
        .listResources()
        .find((resource) => resource.kind === "forwardingRules" && resource.name === lbOf(name));
      return `${name} ${String(rule?.properties.ipAddress)}`;
    });
  const expectedRuleIps = () => NAMES.map((name) => `${name} ${ipOf(name)}`);

  async function assertIpsUnchanged(): Promise<void> {
    assert.deepEqual(ruleIps(), expectedRuleIps());
    for (const name of NAMES) assert.equal(await ingressOf(name), ipOf(name), `${name}'s ingress`);
  }

  /**
   * Every Service reconciled by `running` (its runs finished, not merely begun: a stop in the
   * middle of a run is another test's subject, address-pin-kill.e2e.ts).
   */
  async function untilServicesReconciled(daemons: DaemonProcesses, running: RunningDaemon): Promise<void> {
    await eventually(
      "every Service reconciled",
      async () =>
        (await daemons.metric(running, 'dccm_reconciles_total{kind="service",result="ok"}')) >= NAMES.length
          ? true
          : undefined,
      240_000,
    );
  }

  async function untilNoAddress(): Promise<void> {
    await eventually(
      "no address in GCE nor in a stack",
      async () => (addresses().length === 0 && (await declaredAddresses()).length === 0 ? true : undefined),
      240_000,
    );
  }

  before(async () => {
    previousDccm = path.join(
      execFileSync("bash", [path.join(repoRoot(), "scripts", "testenv"), "dccm-previous"], { encoding: "utf8" }).trim(),
      "dist",
      "bin",
      "dccm.js",
    );
    env = await startTestEnv();
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    await createNode(core, "node-a1", "us-central1-a");
    const base = { ...E2E_CONFIG, subnetwork: "k8s-subnet", backendUrl: env.backendUrl };
    const transientPath = path.join(env.dir, "transient.json");
    const alwaysPath = path.join(env.dir, "always.json");
    // No addressReservation key: the previous release knows none, and `transient` is the default.
    fs.writeFileSync(transientPath, JSON.stringify(base));
    fs.writeFileSync(alwaysPath, JSON.stringify({ ...base, addressReservation: "always" }));
    transient = new DaemonProcesses(env, transientPath);
    always = new DaemonProcesses(env, alwaysPath);

    const previous = transient.start({ dccm: previousDccm });
    await transient.waitReady(previous);
    await transient.waitClusterApplied(previous);
    for (const name of NAMES) {
      const created = await core.createNamespacedService({ namespace: "default", body: SERVICES[name] });
      lbs.set(name, loadBalancerName(created.metadata?.uid ?? ""));
    }
    for (const name of NAMES) ips.set(name, await eventually(`${name}'s ingress`, () => ingressOf(name), 240_000));
    assert.equal(new Set(ips.values()).size, NAMES.length);
    // The previous release reserves every Service's IP as <lb>.
    assert.deepEqual(addresses(), reservedOnTheirIps());
    assert.deepEqual(await declaredAddresses(), NAMES.map((name) => `addresses ${lbOf(name)}`).sort());
    assert.deepEqual(ruleIps(), expectedRuleIps());
    assert.equal(await transient.stop(previous), 0);
  });

  after(async () => {
    transient?.killAll();
    always?.killAll();
    await env?.stop();
  });

  it("this release takes over: the three <lb> deleted, nothing else touched, every IP kept", async () => {
    env.gce.clearHistory();
    const current = transient.start();
    await transient.waitReady(current);
    await untilServicesReconciled(transient, current);
    await untilNoAddress();
    assert.deepEqual(operations(), NAMES.map((name) => `delete addresses ${lbOf(name)}`).sort());
    await assertIpsUnchanged();
    assert.equal(await transient.stop(current), 0);
  });

  it("addressReservation always reserves each rule's IP, and transient again releases it: no IP changes", async () => {
    env.gce.clearHistory();
    const reserving = always.start();
    await always.waitReady(reserving);
    await untilServicesReconciled(always, reserving);
    await eventually(
      "the three <lb> reserved and held by their stacks",
      async () => ((await declaredAddresses()).length === NAMES.length ? true : undefined),
      240_000,
    );
    assert.deepEqual(addresses(), reservedOnTheirIps());
    assert.deepEqual(operations(), NAMES.map((name) => `create addresses ${lbOf(name)}`).sort());
    await assertIpsUnchanged();
    assert.equal(await always.stop(reserving), 0);

    env.gce.clearHistory();
    const releasing = transient.start();
    await transient.waitReady(releasing);
    await untilServicesReconciled(transient, releasing);
    await untilNoAddress();
    assert.deepEqual(operations(), NAMES.map((name) => `delete addresses ${lbOf(name)}`).sort());
    await assertIpsUnchanged();
    assert.equal(await transient.stop(releasing), 0);
  });
});
