/**
 * A crash at each step of the pin/replace/release sequence of addressReservation `transient`
 * (controllers/service/addressPins.ts) converges, on a new daemon, to the Service's same IP and no
 * reservation left. Daemon processes (bin/dccm.js daemon), a real kube-apiserver, the real Pulumi
 * engine, the GCE emulator. Each step changes one Service's protocol TCP → UDP (a replaced
 * forwarding rule) and stops the daemon with SIGKILL at one point:
 *
 * (a) after addresses.insert of `<lb>`, before the pinned run holds it: the run's import of `<lb>`
 *     fails (an injected fault on every read of that address), then the kill;
 * (b) during the pinned run: the kill while GCE holds the run's first delete (the proxy), which
 *     then completes with no engine to record it;
 * (c) after the pinned run, before the release run took effect: the release's delete of `<lb>`
 *     fails (an injected fault), then the kill;
 * (d) during the release run: the kill while GCE holds the delete of `<lb>`, which then completes
 *     with no engine to record it (the stack still declares the address GCE no longer holds).
 *
 * Faults stay in place until the kill (count 1000), so the killed daemon's own retries never get
 * past the step: what converges is the next daemon.
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { loadBalancerName } from "../../model";
import { eventReasons, lbService } from "../support/e2e/cluster";
import { DaemonProcesses, processCluster } from "../support/e2e/daemon-process";
import { declaredResourcesOf } from "../support/e2e/invariants";
import { startDelayProxy, type DelayProxy } from "../support/e2e/delay-proxy";
import type { TestEnv } from "../support/e2e/env";
import { eventually } from "../support/wait";

const STEPS = ["pin-a", "pin-b", "pin-c", "pin-d"] as const;
type Step = (typeof STEPS)[number];
/** Long enough that only release() forwards a held request. */
const HOLD_MS = 600_000;

describe("addressReservation transient: a kill at each step of pin, replace, release converges on the same IP", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemons: DaemonProcesses;
  let proxy: DelayProxy;
  /** Which requests the proxy holds now. */
  let holdWhen: (method: string, path: string) => boolean = () => false;
  const ips = new Map<Step, string>();
  const lbs = new Map<Step, string>();

  const ingressOf = async (name: string): Promise<string | undefined> =>
    (await core.readNamespacedService({ name, namespace: "default" })).status?.loadBalancer?.ingress?.[0]?.ip;
  const ruleOf = (lb: string) =>
    env.gce.listResources().find((resource) => resource.kind === "forwardingRules" && resource.name === lb);
  const addresses = () =>
    env.gce
      .listResources()
      .filter((resource) => resource.kind === "addresses")
      .map((resource) => `${resource.name} ${String(resource.properties.address)}`);
  const addressesOf = (lb: string) => addresses().filter((address) => address.startsWith(`${lb} `));
  const declaredAddresses = async () =>
    (await declaredResourcesOf(env)).filter((declared) => declared.startsWith("addresses "));
  const declaredAddressesOf = async (lb: string) =>
    (await declaredAddresses()).filter((declared) => declared === `addresses ${lb}`);
  const ipOf = (step: Step): string => ips.get(step) ?? assert.fail(`${step} has no IP`);
  const lbOf = (step: Step): string => lbs.get(step) ?? assert.fail(`${step} has no load balancer name`);

  const toUdp = (name: Step) =>
    core.patchNamespacedService(
      { name, namespace: "default", body: [{ op: "replace", path: "/spec/ports/0/protocol", value: "UDP" }] },
      k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.JsonPatch),
    );
  const failedWith = (name: Step, message: string) =>
    eventually(`${name}: a SyncLoadBalancerFailed naming "${message}"`, async () =>
      (await eventReasons(core, name)).find(
        (event) => event.reason === "SyncLoadBalancerFailed" && event.message.includes(message),
      ),
    );
  const clearFaults = async () => {
    const answer = await fetch(`${env.gce.endpoint}/emulator/faults`, { method: "DELETE" });
    assert.equal(answer.status, 200);
  };

  /**
   * A new daemon; the Service's rule is UDP on its old IP, and no address of it is left in GCE or
   * in its stack (each step's own: a step that fails leaves the others' checks their own).
   */
  async function assertConvergesAfterRestart(step: Step): Promise<void> {
    const restarted = daemons.start();
    try {
      await daemons.waitReady(restarted);
      await assertConverged(step);
    } catch (error) {
      // The next step's daemon must become the leader: this one goes, converged or not.
      await daemons.stop(restarted);
      throw error;
    }
    assert.equal(await daemons.stop(restarted), 0);
  }

  async function assertConverged(step: Step): Promise<void> {
    const ip = ipOf(step);
    const lb = lbOf(step);
    await eventually(
      `${step} converged: a UDP rule, no address in GCE nor in its stack`,
      async () =>
        ruleOf(lb)?.properties.ipProtocol === "UDP" &&
        addressesOf(lb).length === 0 &&
        (await declaredAddressesOf(lb)).length === 0
          ? true
          : undefined,
      240_000,
    );
    assert.equal(ruleOf(lb)?.properties.ipAddress, ip);
    assert.equal(await ingressOf(step), ip);
    assert.deepEqual(addressesOf(lb), []);
    assert.deepEqual(await declaredAddressesOf(lb), []);
  }

  before(async () => {
    ({ env, core, daemons } = await processCluster());
    proxy = await startDelayProxy(env.gce.endpoint, (method, path) => (holdWhen(method, path) ? HOLD_MS : 0));
    const first = daemons.start();
    await daemons.waitReady(first);
    await daemons.waitClusterApplied(first);
    for (const step of STEPS) {
      const created = await core.createNamespacedService({ namespace: "default", body: lbService(step) });
      lbs.set(step, loadBalancerName(created.metadata?.uid ?? ""));
    }
    for (const step of STEPS) ips.set(step, await eventually(`${step}'s ingress`, () => ingressOf(step), 240_000));
    assert.equal(new Set(ips.values()).size, STEPS.length);
    assert.deepEqual(addresses(), []);
    assert.equal(await daemons.stop(first), 0);
  });

  after(async () => {
    daemons?.killAll();
    await proxy?.close();
    await env?.stop();
  });

  afterEach(() => {
    holdWhen = () => false;
    // A step that failed before its kill leaves its daemon the leader: the next step needs the lease.
    daemons.killAll();
  });

  /** Starts a daemon whose run of `step` fails on `message` (GCE refusing `operation` on <lb>), kills it, lifts the fault. */
  async function killAfterRefusal(step: Step, operation: "read" | "delete", message: string): Promise<void> {
    env.gce.injectFault({ kind: "addresses", name: lbOf(step), operation, status: 400, message, count: 1000 });
    const running = daemons.start();
    await daemons.waitReady(running);
    await toUdp(step);
    await failedWith(step, message);
    await daemons.kill(running);
    await clearFaults();
  }

  /**
   * Starts a daemon through the proxy, which holds the first provider delete `when` says, SIGKILLs it
   * there (after `whileHeld`'s checks) and lets GCE finish the held operation.
   */
  async function killWhileHeld(step: Step, when: () => boolean, whileHeld: () => void): Promise<void> {
    holdWhen = (method, path) => method === "POST" && path.startsWith("/emulator/provider/delete") && when();
    const running = daemons.start({ env: { DCCM_GCE_EMULATOR_URL: proxy.url } });
    await daemons.waitReady(running);
    const held = proxy.held();
    await toUdp(step);
    await held;
    whileHeld();
    await daemons.kill(running);
    holdWhen = () => false;
    // GCE completes the operation the dead engine started; nothing records it.
    proxy.release();
  }

  it("(a) killed after addresses.insert, before the pinned run holds <lb>: the restart finds the reservation and finishes", async () => {
    const lb = lbOf("pin-a");
    await killAfterRefusal("pin-a", "read", "import of the pinned address refused (test fault)");
    // The crash state: GCE reserves the rule's IP as <lb>; no stack holds it. The rule may be
    // deleted already: the engine replaces it in parallel with the failed import (its IP is the
    // pin's literal, not the address's output), and the reservation keeps the IP all the same.
    assert.deepEqual(addressesOf(lb), [`${lb} ${ipOf("pin-a")}`]);
    assert.deepEqual(await declaredAddressesOf(lb), []);
    await assertConvergesAfterRestart("pin-a");
  });

  it("(b) SIGKILLed during the pinned run, while GCE holds its delete: the restart replaces the rule on the reserved IP and releases it", async () => {
    const lb = lbOf("pin-b");
    // The pinned run's first delete: <lb> is reserved by then.
    await killWhileHeld(
      "pin-b",
      () => addressesOf(lb).length === 1,
      () => assert.deepEqual(addressesOf(lb), [`${lb} ${ipOf("pin-b")}`]),
    );
    await eventually("the held delete done", () => (ruleOf(lb) === undefined ? true : undefined));
    assert.deepEqual(addressesOf(lb), [`${lb} ${ipOf("pin-b")}`]);
    await assertConvergesAfterRestart("pin-b");
  });

  it("(c) killed after the pinned run, before the release took effect: the restart releases <lb>", async () => {
    const lb = lbOf("pin-c");
    await killAfterRefusal("pin-c", "delete", "release of the pinned address refused (test fault)");
    // The crash state: the new rule on the pinned IP, <lb> reserved and held by the stack.
    assert.equal(ruleOf(lb)?.properties.ipProtocol, "UDP");
    assert.equal(ruleOf(lb)?.properties.ipAddress, ipOf("pin-c"));
    assert.deepEqual(addressesOf(lb), [`${lb} ${ipOf("pin-c")}`]);
    assert.deepEqual(await declaredAddressesOf(lb), [`addresses ${lb}`]);
    await assertConvergesAfterRestart("pin-c");
  });

  it("(d) SIGKILLed during the release run, while GCE holds the delete of <lb>: the restart forgets the address GCE deleted", async () => {
    const lb = lbOf("pin-d");
    // The release's delete: the only delete once the replacement rule is UDP.
    await killWhileHeld(
      "pin-d",
      () => ruleOf(lb)?.properties.ipProtocol === "UDP",
      () => {
        assert.equal(ruleOf(lb)?.properties.ipAddress, ipOf("pin-d"));
        assert.deepEqual(addressesOf(lb), [`${lb} ${ipOf("pin-d")}`]);
      },
    );
    await eventually("the held delete of the address done", () => (addressesOf(lb).length === 0 ? true : undefined));
    // The crash state: GCE released the IP to the rule (ephemeral); the stack still declares <lb>.
    assert.deepEqual(await declaredAddressesOf(lb), [`addresses ${lb}`]);
    assert.equal(ruleOf(lb)?.properties.ipAddress, ipOf("pin-d"));
    await assertConvergesAfterRestart("pin-d");
  });

  it("after every step: no address anywhere, in GCE or in a stack", async () => {
    assert.deepEqual(addresses(), []);
    assert.deepEqual(await declaredAddresses(), []);
  });
});
