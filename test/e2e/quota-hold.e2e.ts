/**
 * Quota headroom before the run, the daemon end to end on the emulator with a project quota set
 * low (a quota override GCE lets a project make): FORWARDING_RULES 2, one of them another tool's.
 * A Service whose first up would exceed it is held with a Warning naming the quota instead of
 * starting a run that fails; deleting another Service frees a rule and the held Service is served
 * at once, not after the quota wait.
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";

import { Daemon } from "../../daemon/daemon";
import { parseConfig } from "../../model";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { createNode, E2E_CONFIG, eventReasons, lbService } from "../support/e2e/cluster";
import { eventually } from "../support/wait";

/** Shorter than the quota wait (5 minutes): an ingress within it came from the release, not the backstop. */
const BEFORE_THE_QUOTA_WAIT_MS = 240_000;

describe("quota headroom before a Service's first up", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon;

  before(async () => {
    env = await startTestEnv({ gce: { limits: { quotas: { FORWARDING_RULES: 2 } } } });
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    await createNode(core, "node-a1", "us-central1-a");
    // Another tool's forwarding rule holds one of the project's two.
    env.gce.insertOutOfBand("forwardingRules", { name: "theirs", portRange: "80" });
    daemon = new Daemon(
      daemonOptions(env, parseConfig(E2E_CONFIG), { firstUpGuard: { computeEndpoint: env.gce.computeEndpoint } }),
    );
    await daemon.start(() => assert.fail("leadership lost"));
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  const ingress = async (name: string): Promise<string | undefined> =>
    (await core.readNamespacedService({ name, namespace: "default" })).status?.loadBalancer?.ingress?.[0]?.ip;

  it("a Service over FORWARDING_RULES is held with the exact Warning and no run; deleting another Service serves it at once", async () => {
    await core.createNamespacedService({ namespace: "default", body: lbService("web") });
    await eventually("web's ingress", () => ingress("web"));

    await core.createNamespacedService({ namespace: "default", body: lbService("held") });
    const warning = await eventually("held's QuotaExceeded", async () =>
      (await eventReasons(core, "held")).find((event) => event.reason === "QuotaExceeded"),
    );
    assert.equal(
      warning.message,
      "Load balancer not created: GCE quota FORWARDING_RULES (global) has 2 of 2 in use or being created, and this load balancer needs 1. Held until a load balancer is deleted or 5 minutes pass; release unused resources or raise the quota",
    );
    assert.deepEqual(daemon.statusDocument().quotas?.held, ["service.default.held"]);
    // Held before anything was written: no stack run, so GCE refused nothing.
    assert.deepEqual(env.gce.limits.counts().quotaExceeded, {});
    assert.equal(await ingress("held"), undefined);

    await core.deleteNamespacedService({ name: "web", namespace: "default" });
    const ip = await eventually("held's ingress once web is deleted", () => ingress("held"), BEFORE_THE_QUOTA_WAIT_MS);
    const rules = env.gce.listResources().filter((resource) => resource.kind === "forwardingRules");
    assert.deepEqual(rules.map((rule) => rule.name === "theirs" || rule.properties.ipAddress === ip).sort(), [
      true,
      true,
    ]);
    assert.deepEqual(
      (await eventReasons(core, "held")).map((event) => event.reason),
      ["QuotaExceeded", "EnsuringLoadBalancer", "EnsuredLoadBalancer"],
    );
    assert.deepEqual(env.gce.limits.counts().quotaExceeded, {});
    assert.deepEqual(daemon.statusDocument().quotas?.held, []);
  });
});
