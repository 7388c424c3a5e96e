/**
 * SIGKILL of the daemon process alone (not its process group: an OOM kill does not signal the
 * group) during an `up`: the pulumi CLI it ran and the CLI's provider plugin die with it
 * (stacks/reaper.ts), so the next leader never shares a stack with an orphan engine; a restart
 * then converges.
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { loadBalancerName } from "../../model";
import { lbService } from "../support/e2e/cluster";
import {
  backendLocks,
  DaemonProcesses,
  killAndWatch,
  type RunningDaemon,
  processCluster,
} from "../support/e2e/daemon-process";
import { declaredResourcesOf, gceViolations, serviceLeftovers } from "../support/e2e/invariants";
import { startDelayProxy, type DelayProxy } from "../support/e2e/delay-proxy";
import type { TestEnv } from "../support/e2e/env";
import { eventually } from "../support/wait";

describe("dccm daemon killed with SIGKILL during an up", function () {
  this.timeout(600_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemons: DaemonProcesses;
  let slowCreates: DelayProxy;
  let victimUid = "";

  before(async () => {
    // gs://, as production: the next leader must clear the killed run's lock in the bucket.
    ({ env, core, daemons } = await processCluster({ backend: "gs" }));
    // GCE creates take seconds, during which the CLI waits and prints nothing: an orphan CLI then
    // lives on (it only dies of SIGPIPE at its next write to the dead daemon's pipe).
    slowCreates = await startDelayProxy(env.gce.endpoint, (method, url) =>
      method === "POST" && (url.startsWith("/emulator/provider/create") || url.startsWith("/emulator/provider/delete"))
        ? 8000
        : 0,
    );
  });

  after(async () => {
    daemons?.killAll();
    await slowCreates?.close();
    await env?.stop();
  });

  /** SIGKILL of the daemon alone: its CLI, its plugins and its reaper must be gone within 1 s. */
  async function killAndAssertNoSurvivor(running: RunningDaemon): Promise<void> {
    const report = await killAndWatch(daemons, running);
    process.stdout.write(`      gone after the kill: ${report.deaths.join(", ")}\n`);
    assert.equal(report.sawCli, true, "the kill must land during a pulumi run");
    assert.deepEqual(report.violations, []);
  }

  it("leaves no pulumi CLI or plugin of it alive 1 s later, and a restart converges with no lock", async () => {
    const first = daemons.start({ env: { DCCM_GCE_EMULATOR_URL: slowCreates.url } });
    await daemons.waitReady(first);
    await daemons.waitClusterApplied(first);
    const createHeld = slowCreates.held();
    const created = await core.createNamespacedService({ namespace: "default", body: lbService("victim") });
    victimUid = created.metadata?.uid ?? "";
    const lb = loadBalancerName(victimUid);
    await createHeld;
    await killAndAssertNoSurvivor(first);
    // The killed run's lock stays in the bucket; the next leader removes it (daemon/daemon.ts clearStaleLocks).
    assert.equal((await backendLocks(env)).length, 1);

    const restartedAt = Date.now();
    const second = daemons.start();
    await daemons.waitReady(second);
    const ip = await eventually(
      "victim's ingress after the restart",
      async () =>
        (await core.readNamespacedService({ name: "victim", namespace: "default" })).status?.loadBalancer?.ingress?.[0]
          ?.ip,
      240_000,
    );
    process.stdout.write(`      converged ${Date.now() - restartedAt} ms after the restart\n`);
    const ours = env.gce.listResources().filter((resource) => resource.name.includes(lb));
    assert.deepEqual(
      ours.map((resource) => `${resource.kind} ${resource.name}`),
      [`backendServices ${lb}`, `firewalls k8s-fw-${lb}`, `forwardingRules ${lb}`],
    );
    assert.equal(ours.find((resource) => resource.kind === "forwardingRules")?.properties.ipAddress, ip);
    assert.equal(await daemons.stop(second), 0);
    assert.deepEqual(await backendLocks(env), []);
  });

  it("during a destroy too (no inline program ties that CLI to the daemon), and a restart finishes the delete", async () => {
    const first = daemons.start({ env: { DCCM_GCE_EMULATOR_URL: slowCreates.url } });
    await daemons.waitReady(first);
    const deleteHeld = slowCreates.held();
    await core.deleteNamespacedService({ name: "victim", namespace: "default" });
    await deleteHeld;
    await killAndAssertNoSurvivor(first);
    const second = daemons.start();
    await daemons.waitReady(second);
    await eventually(
      "victim deleted",
      async () => ((await core.listNamespacedService({ namespace: "default" })).items.length === 1 ? true : undefined),
      240_000,
    );
    assert.deepEqual(serviceLeftovers(env.gce.listResources(), "default", "victim", victimUid), []);
    assert.deepEqual(gceViolations(env.gce.listResources(), await declaredResourcesOf(env)), []);
    assert.equal(await daemons.stop(second), 0);
    assert.deepEqual(await backendLocks(env), []);
  });
});
