/**
 * Drift found by listing, end to end: the real engine applies a cluster of Services of
 * every shape dccm declares; a drift pass then lists GCE, compares it with what each stack last
 * applied, and sends only the stacks that drifted to `up --refresh`. DCCM_E2E_DRIFT_SERVICES sets
 * how many Services (default 200, the figure).
 */
import * as assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../../daemon/daemon";
import {
  ANNOTATION_BACKEND,
  ANNOTATION_ILB_SUBNET,
  ANNOTATION_LB_TYPE,
  loadBalancerName,
  parseConfig,
} from "../../model";
import { daemonOptions, startTestEnv, type TestEnv } from "../support/e2e/env";
import { E2E_CONFIG, lbService } from "../support/e2e/cluster";
import { eventually } from "../support/wait";

const SERVICES = Number(process.env.DCCM_E2E_DRIFT_SERVICES ?? "200");

/** The shapes dccm declares, in turn: each maps onto other kinds and fields of the listing. */
function service(index: number): k8s.V1Service {
  const name = `svc-${String(index).padStart(3, "0")}`;
  switch (index % 5) {
    case 0:
      return lbService(name, {
        ports: [
          { name: "http", protocol: "TCP", port: 80 },
          { name: "https", protocol: "TCP", port: 443 },
        ],
        loadBalancerSourceRanges: ["10.0.0.0/8", "192.168.0.0/16"],
      });
    case 1:
      return lbService(name, { externalTrafficPolicy: "Local" });
    case 2:
      return lbService(name, {}, { [ANNOTATION_LB_TYPE]: "Internal", [ANNOTATION_ILB_SUBNET]: "ilb-subnet" });
    case 3:
      return lbService(name, { sessionAffinity: "ClientIP" }, { [ANNOTATION_BACKEND]: "target-pool" });
    default:
      return lbService(name, { ports: [{ name: "dns", protocol: "UDP", port: 53 }] });
  }
}

describe(`dccm daemon: drift found by listing GCE (${SERVICES} Services)`, function () {
  this.timeout(1_800_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemon: Daemon;
  const runs: string[] = [];
  const uids = new Map<string, string>();

  before(async () => {
    env = await startTestEnv({ backend: "gs" });
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    for (const [name, zone, cidr] of [
      ["node-a1", "us-central1-a", "10.64.1.0/24"],
      ["node-b1", "us-central1-b", "10.64.2.0/24"],
    ] as const) {
      env.gce.putInstance(name, { zone });
      await core.createNode({
        body: {
          metadata: { name, labels: { "topology.kubernetes.io/zone": zone } },
          spec: { providerID: `gce://dccm-test/${zone}/${name}`, podCIDR: cidr },
        },
      });
    }
    for (let index = 0; index < SERVICES; index++) {
      const created = await core.createNamespacedService({ namespace: "default", body: service(index) });
      uids.set(created.metadata?.name ?? "", created.metadata?.uid ?? "");
    }
    daemon = new Daemon(
      // addressReservation always: a forwarding rule deleted out of band is put back on its reserved IP
      // (under transient, the default, that repair is held: address-reservation.e2e.ts).
      daemonOptions(env, parseConfig({ ...E2E_CONFIG, addressReservation: "always" }), {
        // Passes are driven by the test; the timer's would come after an hour.
        driftMs: 3_600_000,
        driftListing: { computeEndpoint: env.gce.computeEndpoint },
        onRunStart: (stack, operation) => runs.push(`${operation} ${stack}`),
      }),
    );
    await daemon.start(() => assert.fail("leadership lost"));
    await eventually(
      "every Service's ingress",
      async () => {
        const listed = await core.listNamespacedService({ namespace: "default" });
        const pending = listed.items.filter(
          (item) => item.spec?.type === "LoadBalancer" && (item.status?.loadBalancer?.ingress ?? []).length === 0,
        );
        return pending.length === 0 ? true : undefined;
      },
      1_500_000,
      1000,
    );
    await daemon.idle();
  });

  after(async () => {
    await daemon?.stop();
    await env?.stop();
  });

  it("a pass over every stack with nothing drifted runs no engine", async () => {
    runs.length = 0;
    const pass = await daemon.driftPass();
    assert.deepEqual(
      { stacks: pass?.stacks, refreshed: pass?.refreshed, skipped: pass?.skipped },
      { stacks: SERVICES + 1, refreshed: [], skipped: [] },
    );
    await daemon.idle();
    assert.deepEqual(runs, []);
  });

  it("a firewall changed out of band: exactly its stack is refreshed, and the firewall is put back", async () => {
    const lb = loadBalancerName(uids.get("svc-000") ?? "");
    env.gce.patchOutOfBand("firewalls", `k8s-fw-${lb}`, { sourceRanges: ["0.0.0.0/0"] });
    const applied = daemon.applied.generation("service.default.svc-000");
    assert.equal(typeof applied, "number");
    runs.length = 0;
    const pass = await daemon.driftPass();
    assert.deepEqual(pass?.refreshed, [
      {
        stack: "service.default.svc-000",
        // The stack's record as it stood before the pass (the daemon was idle): nothing ran in between.
        generation: applied,
        reasons: [
          `firewalls/global/k8s-fw-${lb}: sourceRanges: declared ["10.0.0.0/8","192.168.0.0/16"], found "0.0.0.0/0"`,
        ],
      },
    ]);
    await daemon.idle();
    // A repair is planned first (controllers/service/repairs.ts): a preview, then the up.
    assert.deepEqual(runs, ["preview service.default.svc-000", "refresh service.default.svc-000"]);
    const firewall = env.gce
      .listResources()
      .find((resource) => resource.kind === "firewalls" && resource.name === `k8s-fw-${lb}`);
    assert.deepEqual(firewall?.properties.sourceRanges, ["10.0.0.0/8", "192.168.0.0/16"]);
    runs.length = 0;
    assert.deepEqual((await daemon.driftPass())?.refreshed, []);
    assert.deepEqual(runs, []);
  });

  it("a forwarding rule deleted and a node taken out of its instance group: the two stacks are refreshed and both put back", async () => {
    const lb = loadBalancerName(uids.get("svc-002") ?? "");
    env.gce.deleteOutOfBand("forwardingRules", lb, { scope: "us-central1" });
    const group = env.gce
      .listResources()
      .find((resource) => resource.kind === "instanceGroups" && resource.scope === "us-central1-a");
    assert.ok(group !== undefined);
    env.gce.patchOutOfBand("instanceGroups", group.name, { instances: [] }, { scope: "us-central1-a" });
    runs.length = 0;
    const pass = await daemon.driftPass();
    assert.deepEqual(
      pass?.refreshed.map((finding) => [finding.stack, finding.reasons]),
      [
        [
          "cluster",
          [
            `instanceGroups/us-central1-a/${group.name}: instances: declared "projects/dccm-test/zones/us-central1-a/instances/node-a1", found nothing`,
          ],
        ],
        ["service.default.svc-002", [`forwardingRules/us-central1/${lb}: missing`]],
      ],
    );
    await daemon.idle();
    assert.deepEqual([...runs].sort(), [
      "preview service.default.svc-002",
      "refresh cluster",
      "refresh service.default.svc-002",
    ]);
    assert.equal(
      env.gce.listResources().filter((resource) => resource.kind === "forwardingRules" && resource.name === lb).length,
      1,
    );
    runs.length = 0;
    assert.deepEqual((await daemon.driftPass())?.refreshed, []);
    assert.deepEqual(runs, []);
  });
});
