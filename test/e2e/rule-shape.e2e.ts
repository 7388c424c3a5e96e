/**
 * model/ruleShape.ts against the real engine: for each change of a Service, whether the engine's plan
 * replaces a forwarding rule, and whether forwardingRuleShape says it may. The daemon pins a
 * transient Service's IP only when the shape changes (controllers/service/addressPins.ts), so a
 * change the engine would replace a rule for must change the shape; the rows show the shape does
 * not move for changes GCE makes in place.
 */
import * as assert from "node:assert/strict";
import * as path from "node:path";
import type { StepEventMetadata } from "@pulumi/pulumi/automation";
import { StackRunner } from "../../stacks/runner";
import {
  CLUSTER_STACK,
  desiredState,
  forwardingRuleShape,
  parseConfig,
  serviceStackName,
  type ClusterSnapshot,
  type ServiceInfo,
} from "../../model";
import { E2E_CONFIG, E2E_NODE } from "../support/e2e/cluster";
import { startTestEnv, type TestEnv } from "../support/e2e/env";

const config = parseConfig({ ...E2E_CONFIG, subnetwork: "k8s-subnet" });
const INTERNAL = { "networking.gke.io/load-balancer-type": "Internal" };

function service(name: string, uid: string, annotations: Record<string, string> = {}): ServiceInfo {
  return {
    namespace: "default",
    name,
    uid,
    type: "LoadBalancer",
    annotations,
    ports: [{ protocol: "TCP", port: 80, nodePort: 30080 }],
    loadBalancerSourceRanges: [],
    deleting: false,
  };
}

const BASES = {
  web: service("web", "1b0e2e00-1111-4222-8333-444455556666"),
  pool: service("pool", "2b0e2e00-1111-4222-8333-444455556666", { "dccm.io/backend": "target-pool" }),
  ilb: service("ilb", "3b0e2e00-1111-4222-8333-444455556666", INTERNAL),
};
type Base = keyof typeof BASES;

const LOCAL = { externalTrafficPolicy: "Local", healthCheckNodePort: 30999 };

/** `shape`: whether the shape changes, when not what `replaced` says (it errs towards "may replace"). */
const ROWS: {
  base: Base;
  change: string;
  edit: (info: ServiceInfo) => ServiceInfo;
  replaced: boolean;
  shape?: boolean;
}[] = [
  {
    base: "web",
    change: "source ranges",
    edit: (s) => ({ ...s, loadBalancerSourceRanges: ["10.0.0.0/8"] }),
    replaced: false,
  },
  { base: "web", change: "session affinity", edit: (s) => ({ ...s, sessionAffinity: "ClientIP" }), replaced: false },
  { base: "web", change: "externalTrafficPolicy Local", edit: (s) => ({ ...s, ...LOCAL }), replaced: false },
  {
    base: "web",
    change: "port 80 → 81",
    edit: (s) => ({ ...s, ports: [{ protocol: "TCP", port: 81, nodePort: 30080 }] }),
    replaced: true,
  },
  {
    base: "web",
    change: "TCP → UDP",
    edit: (s) => ({ ...s, ports: [{ protocol: "UDP", port: 80, nodePort: 30080 }] }),
    replaced: true,
  },
  {
    base: "web",
    change: "Standard tier",
    edit: (s) => ({ ...s, annotations: { "cloud.google.com/network-tier": "Standard" } }),
    replaced: true,
  },
  {
    base: "web",
    change: "onto a target pool",
    edit: (s) => ({ ...s, annotations: { "dccm.io/backend": "target-pool" } }),
    replaced: true,
  },
  { base: "pool", change: "session affinity", edit: (s) => ({ ...s, sessionAffinity: "ClientIP" }), replaced: true },
  // The pool's health checks are updated in place; the shape counts them: one pin more, never an IP less.
  {
    base: "pool",
    change: "externalTrafficPolicy Local",
    edit: (s) => ({ ...s, ...LOCAL }),
    replaced: false,
    shape: true,
  },
  {
    base: "pool",
    change: "source ranges",
    edit: (s) => ({ ...s, loadBalancerSourceRanges: ["10.0.0.0/8"] }),
    replaced: false,
  },
  {
    base: "ilb",
    change: "global access",
    edit: (s) => ({
      ...s,
      annotations: { ...INTERNAL, "networking.gke.io/internal-load-balancer-allow-global-access": "true" },
    }),
    replaced: false,
  },
  {
    base: "ilb",
    change: "port 80 → 81",
    edit: (s) => ({ ...s, ports: [{ protocol: "TCP", port: 81, nodePort: 30080 }] }),
    replaced: true,
  },
];

const REPLACING = new Set(["replace", "create-replacement", "delete-replaced"]);

describe("forwardingRuleShape against the engine's plans", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let runner: StackRunner;
  const snapshot: ClusterSnapshot = { nodes: [E2E_NODE], services: Object.values(BASES) };
  const desired = desiredState(snapshot, config);

  before(async () => {
    env = await startTestEnv({ withKube: false });
    env.gce.putInstance("node-1", { zone: "us-central1-a" });
    runner = new StackRunner({
      backendUrl: env.backendUrl,
      env: env.pulumiEnv,
      workDir: path.join(env.dir, "workspaces"),
      pulumiCommand: env.pulumiCommand,
      projectName: "dccm-e2e0cafe",
    });
    await runner.up(CLUSTER_STACK, { kind: "cluster" }, desired, { refresh: false });
    for (const info of Object.values(BASES))
      await runner.up(
        serviceStackName("default", info.name),
        { kind: "service", namespace: "default", name: info.name },
        desired,
        {
          refresh: false,
        },
      );
  });

  after(async () => {
    await env?.stop();
  });

  for (const row of ROWS)
    it(`${row.base}: ${row.change} — ${row.replaced ? "a rule replaced" : "no rule replaced"}, the shape ${(row.shape ?? row.replaced) ? "changes" : "stays"}`, async () => {
      const base = BASES[row.base];
      const changed = desiredState(
        { nodes: [E2E_NODE], services: Object.values(BASES).map((info) => (info === base ? row.edit(info) : info)) },
        config,
      );
      assert.deepEqual(changed.rejected, []);
      const steps: StepEventMetadata[] = [];
      await runner.preview(
        serviceStackName("default", base.name),
        { kind: "service", namespace: "default", name: base.name },
        changed,
        { onStep: (step) => steps.push(step) },
      );
      const replaced = steps.some(
        (step) => step.type === "gcp:compute/forwardingRule:ForwardingRule" && REPLACING.has(step.op),
      );
      const key = `default/${base.name}`;
      const before = desired.services.find((s) => s.key === key);
      const after = changed.services.find((s) => s.key === key);
      assert.ok(before !== undefined && after !== undefined);
      const shapeChanged = forwardingRuleShape(before) !== forwardingRuleShape(after);
      assert.deepEqual({ replaced, shapeChanged }, { replaced: row.replaced, shapeChanged: row.shape ?? row.replaced });
    });
});
