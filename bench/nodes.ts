/**
 * Node initialization throughput: 500 Nodes registered with the uninitialized taint (no
 * providerID, as kubelets with --cloud-provider=external register on GCE), the controller started,
 * timed until the last taint is gone. Compute is the GCE emulator's REST face through the real
 * ComputeClient; Kubernetes is a real kube-apiserver + etcd from .testenv when its binaries are
 * there, otherwise the in-memory Node API (test/support/fakes/nodes.ts) — stderr says which.
 */
import { CoreV1Api, PatchStrategy, setHeaderOptions, type V1Node } from "@kubernetes/client-node";
import pino from "pino";
import { Registry } from "prom-client";

import { ComputeClient } from "../gce";
import { type NodeControllerOptions, NodeController } from "../controllers/node/controller";
import { UNINITIALIZED_TAINT } from "../controllers/node/decide";
import { MemoryNodeApi } from "../test/support/fakes/nodes";
import { type GceEmulator, startGceEmulator } from "../emulator/gce";
import { type KubeEnv, startKube } from "../test/support/e2e/kube";
import { elapsedMs, round } from "./stats";

export interface NodeInitFigures {
  nodeInitPerSecond: number;
  computeCallsPerNode: number;
  nodes: number;
}

const NODES = 500;
const CREATE_CONCURRENCY = 25;
const TIMEOUT_MS = 300_000;

function tainted(name: string): V1Node {
  return {
    metadata: { name, labels: { "kubernetes.io/hostname": name } },
    spec: { taints: [{ key: UNINITIALIZED_TAINT, value: "true", effect: "NoSchedule" }] },
  };
}

async function inBatches(n: number, concurrency: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        await fn(i);
      }
    }),
  );
}

export async function benchNodeInit(opts: { workers?: number } = {}): Promise<NodeInitFigures> {
  const gce: GceEmulator = await startGceEmulator();
  let kube: KubeEnv | undefined;
  let controller: NodeController | undefined;
  try {
    try {
      kube = await startKube();
    } catch (err) {
      process.stderr.write(
        `nodes bench: no kube-apiserver (${err instanceof Error ? err.message.split("\n")[0] : String(err)}); using the in-memory Node API\n`,
      );
    }
    const names = Array.from({ length: NODES }, (_, i) => `bench-node-${String(i).padStart(4, "0")}`);
    names.forEach((name, i) => gce.putInstance(name, { zone: gce.zones[i % gce.zones.length] ?? "us-central1-a" }));

    const registry = new Registry();
    let computeCalls = 0;
    const compute = new ComputeClient({
      endpoint: gce.computeEndpoint,
      registry,
      onAttempt: () => {
        computeCalls++;
      },
    });
    const common: Omit<NodeControllerOptions, "api" | "kubeConfig" | "nodeSource"> = {
      project: gce.project,
      region: gce.region,
      compute,
      logger: pino({ level: "warn" }),
      registry,
      ...(opts.workers === undefined ? {} : { workers: opts.workers }),
    };

    // Registration happens before the controller starts, so the figure is the controller's
    // throughput, not the benchmark's node creation rate.
    let remaining: () => Promise<number>;
    if (kube !== undefined) {
      const core = kube.kubeConfig.makeApiClient(CoreV1Api);
      const merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
      await inBatches(NODES, CREATE_CONCURRENCY, async (i) => {
        const name = names[i] ?? "";
        await core.createNode({ body: tainted(name) });
        await core.patchNodeStatus(
          { name, body: { status: { addresses: [{ type: "Hostname", address: name }] } } },
          merge,
        );
      });
      controller = new NodeController({ ...common, kubeConfig: kube.kubeConfig });
      remaining = async () =>
        (await core.listNode()).items.filter((n) => (n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED_TAINT))
          .length;
    } else {
      const api = new MemoryNodeApi();
      for (const name of names) {
        api.put({ ...tainted(name), status: { addresses: [{ type: "Hostname", address: name }] } });
      }
      controller = new NodeController({ ...common, api, nodeSource: api.source() });
      remaining = () =>
        Promise.resolve(
          api.list().filter((n) => (n.spec?.taints ?? []).some((t) => t.key === UNINITIALIZED_TAINT)).length,
        );
    }

    // Progress comes from the controller's own counter (bumped right after the taint-removing
    // update succeeded) so that polling does not load the apiserver being measured.
    const initialized = async (): Promise<number> =>
      (await registry.getSingleMetric("dccm_node_initializations_total")?.get())?.values.find(
        (v) => v.labels["result"] === "ok",
      )?.value ?? 0;
    const start = process.hrtime.bigint();
    await controller.start();
    const deadline = Date.now() + TIMEOUT_MS;
    while ((await initialized()) < NODES) {
      if (Date.now() > deadline) {
        throw new Error(
          `nodes bench: ${NODES - (await initialized())} of ${NODES} Nodes not initialized after ${TIMEOUT_MS} ms`,
        );
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    const ms = elapsedMs(start);
    const left = await remaining();
    if (left !== 0) {
      throw new Error(
        `nodes bench: the controller counted ${NODES} initializations but ${left} Nodes still carry the taint`,
      );
    }
    process.stderr.write(
      `nodes bench: ${NODES} Nodes initialized in ${round(ms, 0)} ms against ${kube === undefined ? "in-memory Node API" : "kube-apiserver"} + GCE emulator; ${computeCalls} Compute calls\n`,
    );
    return {
      nodeInitPerSecond: round(NODES / (ms / 1000), 1),
      computeCallsPerNode: round(computeCalls / NODES, 3),
      nodes: NODES,
    };
  } finally {
    await controller?.stop();
    await Promise.all([kube?.stop(), gce.stop()]);
  }
}

if (require.main === module) {
  const workers = process.env["DCCM_BENCH_NODE_WORKERS"];
  benchNodeInit(workers === undefined ? {} : { workers: Number(workers) }).then(
    (figures) => process.stdout.write(`${JSON.stringify(figures)}\n`),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
