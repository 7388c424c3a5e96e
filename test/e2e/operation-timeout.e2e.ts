/**
 * A hung engine run must not hold its stack forever. The daemon runs as a
 * process with `--operation-timeout 20s` against the real engine and the GCE emulator, behind a
 * proxy (test/support/e2e/delay-proxy.ts) that holds the provider's creates without ever answering (a
 * GCE call that hangs). The deadline is long enough for the retry (recovery, refresh, creates) to
 * finish on a loaded 2-core machine, so only the hung run times out. At the deadline the CLI is interrupted; it then waits for the hung create,
 * so 20 s later it is interrupted again, which terminates it (stacks/interrupt.ts). The run is
 * counted once as timed out, its CLI and plugin are gone and the stack is not left locked. Then the
 * held creates complete in GCE after all (as a slow operation does), and the retry recovers them
 * (the engine recorded them as pending) instead of creating again into 409s, and converges.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { loadBalancerName } from "../../model";
import { eventReasons, lbService } from "../support/e2e/cluster";
import {
  DaemonProcesses,
  descendants,
  isReaper,
  lockFiles,
  PLUGIN_GRACE_MS,
  processCluster,
  type RunningDaemon,
} from "../support/e2e/daemon-process";
import { startDelayProxy, type DelayProxy } from "../support/e2e/delay-proxy";
import type { TestEnv } from "../support/e2e/env";
import { declaredResources, gceViolations } from "../support/e2e/invariants";
import { eventually } from "../support/wait";

const TIMEOUTS = 'dccm_operation_timeouts_total{kind="service",operation="up"}';

/** The fields other than level/time/component/msg of every daemon log line with this message. */
function logLines(logPath: string, message: string): Record<string, unknown>[] {
  return fs
    .readFileSync(logPath, "utf8")
    .split("\n")
    .filter((line) => line.includes(message))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => entry.msg === message)
    .map(({ level: _level, time: _time, component: _component, msg: _msg, ...rest }) => rest);
}

describe("dccm daemon: a hung pulumi up is cancelled at --operation-timeout", function () {
  this.timeout(600_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemons: DaemonProcesses;
  let daemon: RunningDaemon | undefined;
  let hangCreates = false;
  let gce: DelayProxy;

  before(async () => {
    ({ env, core } = await processCluster());
    daemons = new DaemonProcesses(env, path.join(env.dir, "config.json"), ["--operation-timeout", "20s"]);
    // An hour is forever for this test: the request is never answered while it runs.
    gce = await startDelayProxy(env.gce.endpoint, (method, url) =>
      hangCreates && method === "POST" && url.startsWith("/emulator/provider/create") ? 3_600_000 : 0,
    );
  });

  function ours(lb: string): string[] {
    return env.gce
      .listResources()
      .filter((resource) => resource.name.includes(lb))
      .map((resource) => `${resource.kind} ${resource.name}`);
  }

  after(async () => {
    daemons?.killAll();
    await gce?.close();
    await env?.stop();
  });

  it("cancels the run, counts it once, leaves no lock and no CLI, and converges once creates answer again, recovering the late ones", async () => {
    daemon = daemons.start({ env: { DCCM_GCE_EMULATOR_URL: gce.url } });
    await daemons.waitReady(daemon);
    await daemons.waitClusterApplied(daemon);

    hangCreates = true;
    const held = gce.held();
    const created = await core.createNamespacedService({ namespace: "default", body: lbService("stuck") });
    await held;
    const running = daemon;
    await eventually(
      "the timed-out up counted",
      async () => ((await daemons.metric(running, TIMEOUTS)) > 0 ? true : undefined),
      120_000,
      50,
    );
    // The failed run waits out its backoff (5 s) before the retry: its CLI has ended and unlocked.
    assert.deepEqual(lockFiles(daemons.backendDir), []);
    assert.deepEqual(
      descendants(running.pid).filter((process) => process.comm === "pulumi"),
      [],
    );
    await eventually(
      "the provider plugin gone too",
      () => (descendants(running.pid).filter((process) => !isReaper(process)).length === 0 ? true : undefined),
      PLUGIN_GRACE_MS,
      20,
    );
    // The CLI did not end on the deadline's interrupt (it waits for the hung create): it was terminated.
    assert.deepEqual(logLines(running.logPath, "a cancelled pulumi run did not end; terminating it"), [
      { stack: "service.default.stuck", operation: "up", afterMs: 20_000 },
    ]);
    // GCE finishes the creates the engine gave up on, after all: the retry must recover them (a
    // create again would get 409 alreadyExists for ever).
    const lb = loadBalancerName(created.metadata?.uid ?? "");
    hangCreates = false;
    gce.release();
    await eventually(
      "the late creates in GCE",
      () => (env.gce.listResources().some((resource) => resource.name.includes(lb)) ? true : undefined),
      10_000,
      20,
    );
    // Held by the proxy when the run ended: the creates the engine ran first (the forwarding rule
    // waits for the backend service, the firewall for the rule's ephemeral IP, its destination; no
    // address is reserved at rest under addressReservation transient, the default).
    assert.deepEqual(ours(lb), [`backendServices ${lb}`]);

    const ip = await eventually(
      "stuck's ingress",
      async () =>
        (await core.readNamespacedServiceStatus({ name: "stuck", namespace: "default" })).status?.loadBalancer
          ?.ingress?.[0]?.ip,
      240_000,
    );
    assert.equal(await daemons.metric(running, TIMEOUTS), 1);
    const recovered = logLines(running.logPath, "recovered resources a killed run created but did not record").map(
      (line) => ({ ...line, urns: [...(line.urns as string[])].sort() }),
    );
    const urn = (type: string, name: string): string =>
      `urn:pulumi:service.default.stuck::dccm-e2e0cafe::dccm:gcp:ServiceLoadBalancer$gcp:compute/${type}::default/stuck:${name}`;
    assert.deepEqual(recovered, [
      {
        stack: "service.default.stuck",
        urns: [urn("regionBackendService:RegionBackendService", "backend-tcp")],
      },
    ]);
    assert.deepEqual(ours(lb), [`backendServices ${lb}`, `firewalls k8s-fw-${lb}`, `forwardingRules ${lb}`]);
    assert.equal(
      env.gce.listResources().find((resource) => resource.kind === "forwardingRules" && resource.name === lb)
        ?.properties.ipAddress,
      ip,
    );
    assert.deepEqual(gceViolations(env.gce.listResources(), declaredResources(daemons.backendDir)), []);
    const events = await eventReasons(core, "stuck");
    assert.deepEqual(
      events.map((event) => event.reason),
      ["EnsuringLoadBalancer", "SyncLoadBalancerFailed", "EnsuredLoadBalancer"],
    );
    // The rest of the message is the CLI's own output (ports, paths).
    const failure = events[1].message;
    const expected =
      "Error syncing load balancer: up of stack service.default.stuck did not finish within 20 s and was cancelled: pulumi up of stack service.default.stuck failed: ";
    assert.equal(failure.slice(0, expected.length), expected);
    assert.equal(await daemons.stop(running), 0);
    assert.deepEqual(lockFiles(daemons.backendDir), []);
  });
});
