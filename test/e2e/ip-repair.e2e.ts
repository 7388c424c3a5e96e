/**
 * A drift repair never changes a Service's IP, end to end: the real engine, the
 * GCE emulator (which releases an address a forwarding rule uses the way GCE does: the rule keeps
 * the IP as ephemeral), a drift pass driven by the test. A released address is reserved again with
 * the IP its rule still serves; when that IP is gone from GCE the repair is held, nothing applied.
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";
import { loadBalancerName, parseConfig } from "../../model";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { createNode, E2E_CONFIG, eventReasons, lbService } from "../support/e2e/cluster";
import { counter } from "../support/metrics";
import { eventually } from "../support/wait";

const REGION = "us-central1";

describe("dccm daemon: a drift repair keeps the Service's IP", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon;
  const runs: string[] = [];
  const lbs = new Map<string, string>();
  const ips = new Map<string, string>();

  const ingressOf = async (name: string): Promise<string[]> =>
    ((await core.readNamespacedServiceStatus({ name, namespace: "default" })).status?.loadBalancer?.ingress ?? []).map(
      (entry) => entry.ip ?? "",
    );
  const found = (kind: string, name: string): Record<string, unknown> | undefined =>
    env.gce.listResources().find((resource) => resource.kind === kind && resource.name === name)?.properties;

  before(async () => {
    env = await startTestEnv();
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    await createNode(core, "node-a1", "us-central1-a");
    for (const name of ["kept", "lost"]) {
      const created = await core.createNamespacedService({ namespace: "default", body: lbService(name) });
      lbs.set(name, loadBalancerName(created.metadata?.uid ?? ""));
    }
    // addressReservation `always`: these are the repairs of a Service that holds its address <lb> for
    // life. Under `transient`, the default, a Service holds none at rest, and a forwarding rule deleted
    // out of band is held with IPChangeHeld (test/e2e/address-reservation.e2e.ts).
    daemon = new Daemon(
      daemonOptions(env, parseConfig({ ...E2E_CONFIG, addressReservation: "always" }), {
        // Passes are driven by the test; a held repair's retry waits longer than the test runs.
        driftMs: 3_600_000,
        backoffBaseMs: 600_000,
        backoffMaxMs: 600_000,
        driftListing: { computeEndpoint: env.gce.computeEndpoint },
        onRunStart: (stack, operation) => runs.push(`${operation} ${stack}`),
      }),
    );
    await daemon.start(() => assert.fail("leadership lost"));
    for (const name of ["kept", "lost"])
      ips.set(name, await eventually(`${name}'s ingress`, async () => (await ingressOf(name))[0]));
    await daemon.idle();
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("the Service's static address released out of band: reserved again with the IP its forwarding rule still serves; the rule is not replaced", async () => {
    const lb = lbs.get("kept") ?? "";
    const ip = ips.get("kept") ?? "";
    const rule = found("forwardingRules", lb);
    assert.deepEqual([found("addresses", lb)?.address, rule?.ipAddress], [ip, ip]);
    // As `gcloud compute addresses delete` does on GCE: the rule keeps the IP, now ephemeral.
    const released = await fetch(`${env.gce.computeEndpoint}projects/dccm-test/regions/${REGION}/addresses/${lb}`, {
      method: "DELETE",
    });
    assert.equal(released.status, 200);
    assert.deepEqual([found("addresses", lb), found("forwardingRules", lb)?.ipAddress], [undefined, ip]);
    env.gce.clearHistory();
    runs.length = 0;
    const pass = await daemon.driftPass();
    assert.deepEqual(
      pass?.refreshed.map((finding) => [finding.stack, finding.reasons]),
      [["service.default.kept", [`addresses/${REGION}/${lb}: missing`]]],
    );
    await daemon.idle();
    assert.deepEqual(await ingressOf("kept"), [ip]);
    assert.equal(found("addresses", lb)?.address, ip);
    const after = found("forwardingRules", lb);
    assert.deepEqual([after?.id, after?.creationTimestamp, after?.ipAddress], [rule?.id, rule?.creationTimestamp, ip]);
    assert.deepEqual(
      env.gce.history().map((entry) => `${entry.op} ${entry.kind} ${entry.name}`),
      [`create addresses ${lb}`],
    );
    const events = await eventReasons(core, "kept");
    assert.deepEqual(events.at(-1), {
      reason: "DriftCorrected",
      message: "Put back: Address default/kept:address (create)",
    });
    // The repair was planned first: a preview, then the up.
    assert.deepEqual(runs, ["preview service.default.kept", "refresh service.default.kept"]);
    assert.deepEqual((await daemon.driftPass())?.refreshed, []);
  });

  it("the address and its forwarding rule both deleted (the IP gone from GCE): the repair is held, nothing created, a Warning and a metric", async () => {
    const lb = lbs.get("lost") ?? "";
    const ip = ips.get("lost") ?? "";
    env.gce.deleteOutOfBand("addresses", lb, { scope: REGION });
    // The rule held the IP as ephemeral: with it the IP goes back to Google's pool.
    env.gce.deleteOutOfBand("forwardingRules", lb, { scope: REGION });
    env.gce.clearHistory();
    runs.length = 0;
    const pass = await daemon.driftPass();
    assert.deepEqual(
      pass?.refreshed.map((finding) => [finding.stack, [...finding.reasons].sort()]),
      [["service.default.lost", [`addresses/${REGION}/${lb}: missing`, `forwardingRules/${REGION}/${lb}: missing`]]],
    );
    await daemon.idle();
    assert.deepEqual(env.gce.history(), []);
    assert.deepEqual(await ingressOf("lost"), [ip]);
    assert.deepEqual(runs, ["preview service.default.lost"]);
    const events = await eventReasons(core, "lost");
    assert.deepEqual(events.at(-1), {
      reason: "IPChangeHeld",
      message:
        `Not repaired: the run would not keep the load balancer's IP ${ip}: ` +
        `Address default/lost:address (create): ${ip} is on no forwarding rule any more, so it cannot be reserved again; ` +
        `ForwardingRule default/lost:forwarding-rule-tcp (create): ${ip} is held by no address. ` +
        `Nothing was applied; retried with backoff. Reserve ${ip} again as address ${lb} in ${REGION} if the project still holds it, or delete and create the Service again to take a new IP`,
    });
    assert.equal(await counter(daemon.metrics.registry, "dccm_ip_changes_held_total", {}), 1);
  });
});
