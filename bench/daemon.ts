/**
 * The daemon on the offline environment: latency from a Service event to the start of its stack's
 * `up` (and to its ingress IP), and `up` runs per burst of 50 updates to one Service.
 */
import * as k8s from "@kubernetes/client-node";
import { Daemon } from "../daemon/daemon";
import { parseConfig } from "../model";
import { realisticLimits } from "../emulator/gce";
import { daemonOptions, startTestEnv } from "../test/support/e2e/env";
import { eventually } from "../test/support/wait";
import { elapsedMs, median, round } from "./stats";

export interface DaemonFigures {
  eventToUpMedianMs: number;
  eventToIngressMedianMs: number;
  upRunsPerBurstMedian: number;
  burstUpdates: number;
}

const SAMPLES = 5;
const BURSTS = 3;
const BURST_UPDATES = 50;

export async function benchDaemon(): Promise<DaemonFigures> {
  const env = await startTestEnv();
  const upRuns = new Map<string, number>();
  const waiting = new Map<string, () => void>();
  const daemon = new Daemon(
    daemonOptions(
      env,
      parseConfig({
        project: "dccm-test",
        region: "us-central1",
        network: "k8s-net",
        nodeTags: ["k8s-node"],
        clusterName: "bench",
        clusterId: "b3nch",
      }),
      {
        logLevel: "error",
        resyncMs: 3_600_000,
        leaderElection: false,
        identity: "bench",
        onRunStart: (stack, operation) => {
          if (operation !== "up") return;
          upRuns.set(stack, (upRuns.get(stack) ?? 0) + 1);
          waiting.get(stack)?.();
        },
      },
    ),
  );
  const core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
  try {
    env.gce.putInstance("node-1", { zone: "us-central1-a" });
    await core.createNode({
      body: {
        metadata: { name: "node-1", labels: { "topology.kubernetes.io/zone": "us-central1-a" } },
        spec: { providerID: "gce://dccm-test/us-central1-a/node-1" },
      },
    });
    await daemon.start(() => undefined);
    await eventually("the cluster stack", () => (upRuns.get("cluster") !== undefined ? true : undefined));
    await daemon.idle();

    const toUp: number[] = [];
    const toIngress: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const name = `lat-${i}`;
      const stack = `service.default.${name}`;
      const upStarted = new Promise<void>((resolve) => waiting.set(stack, resolve));
      const start = process.hrtime.bigint();
      await core.createNamespacedService({
        namespace: "default",
        body: { metadata: { name }, spec: { type: "LoadBalancer", ports: [{ port: 80, protocol: "TCP" }] } },
      });
      await upStarted;
      toUp.push(elapsedMs(start));
      await eventually(
        `${name}'s ingress`,
        async () =>
          (await core.readNamespacedServiceStatus({ name, namespace: "default" })).status?.loadBalancer?.ingress?.[0]
            ?.ip,
        120_000,
        20,
      );
      toIngress.push(elapsedMs(start));
      await daemon.idle();
    }

    const runsPerBurst: number[] = [];
    for (let burst = 0; burst < BURSTS; burst++) {
      await daemon.idle();
      const before = upRuns.get("service.default.lat-0") ?? 0;
      for (let i = 0; i < BURST_UPDATES; i++) {
        await core.patchNamespacedService(
          {
            name: "lat-0",
            namespace: "default",
            body: { spec: { loadBalancerSourceRanges: [`10.${burst}.${i}.0/24`] } },
          },
          k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
        );
      }
      const last = `10.${burst}.${BURST_UPDATES - 1}.0/24`;
      await eventually("the burst's last range applied", () => {
        const firewall = env.gce
          .listResources()
          .find(
            (resource) =>
              resource.kind === "firewalls" &&
              JSON.stringify(resource.properties.sourceRanges) === JSON.stringify([last]),
          );
        return firewall !== undefined ? true : undefined;
      });
      await daemon.idle();
      runsPerBurst.push((upRuns.get("service.default.lat-0") ?? 0) - before);
    }
    return {
      eventToUpMedianMs: round(median(toUp), 0),
      eventToIngressMedianMs: round(median(toIngress), 0),
      upRunsPerBurstMedian: median(runsPerBurst),
      burstUpdates: BURST_UPDATES,
    };
  } finally {
    await daemon.stop();
    await env.stop();
  }
}

export interface RealisticIngressFigures {
  /** Service created → ingress written, with GCE's operation latencies (scale 1) and default limits. */
  eventToIngressRealisticMedianMs: number;
  /** The same Services' ingress with every operation DONE at once, measured alongside. */
  eventToIngressInstantMedianMs: number;
}

const REALISTIC_SAMPLES = 3;

/**
 * Time to ingress with GCE's operation latency (emulator/gce/limits.ts realisticLimits(1): a
 * forwarding rule 15 s, a backend service 10 s, …; GCE's quotas and rate quotas), beside the same
 * measurement with operations done at once: what the engine's waits add to a new Service.
 * `node --expose-gc dist/bench/run.js realisticIngress` runs only this part.
 */
export async function benchRealisticIngress(): Promise<RealisticIngressFigures> {
  return {
    eventToIngressRealisticMedianMs: await medianIngress(true),
    eventToIngressInstantMedianMs: await medianIngress(false),
  };
}

async function medianIngress(realistic: boolean): Promise<number> {
  const env = await startTestEnv(realistic ? { gce: { limits: realisticLimits(1) } } : {});
  const daemon = new Daemon(
    daemonOptions(
      env,
      parseConfig({
        project: "dccm-test",
        region: "us-central1",
        network: "k8s-net",
        nodeTags: ["k8s-node"],
        clusterName: "bench",
        clusterId: "b3nch",
      }),
      {
        logLevel: "error",
        resyncMs: 3_600_000,
        leaderElection: false,
        identity: "bench",
      },
    ),
  );
  const core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
  try {
    env.gce.putInstance("node-1", { zone: "us-central1-a" });
    await core.createNode({
      body: {
        metadata: { name: "node-1", labels: { "topology.kubernetes.io/zone": "us-central1-a" } },
        spec: { providerID: "gce://dccm-test/us-central1-a/node-1" },
      },
    });
    await daemon.start(() => undefined);
    await daemon.idle();
    const toIngress: number[] = [];
    for (let i = 0; i < REALISTIC_SAMPLES; i++) {
      const name = `real-${i}`;
      const start = process.hrtime.bigint();
      await core.createNamespacedService({
        namespace: "default",
        body: { metadata: { name }, spec: { type: "LoadBalancer", ports: [{ port: 80, protocol: "TCP" }] } },
      });
      await eventually(
        `${name}'s ingress`,
        async () =>
          (await core.readNamespacedServiceStatus({ name, namespace: "default" })).status?.loadBalancer?.ingress?.[0]
            ?.ip,
        600_000,
        50,
      );
      toIngress.push(elapsedMs(start));
      await daemon.idle();
    }
    return round(median(toIngress), 0);
  } finally {
    await daemon.stop();
    await env.stop();
  }
}
