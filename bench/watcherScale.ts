/**
 * The watcher at scale: 5,000 Nodes as a kubelet reports them (status with
 * conditions, addresses, capacity and allocatable, node info, a 20-image list) and 10,000 Services
 * on a real apiserver; the watcher's time to its initial lists, its heap and its process's RSS
 * with every object cached, and one recompute of the desired state from them. The watcher runs in
 * a process of its own (bench/watcherScaleChild.ts), so the RSS is the watcher's, not that of
 * this process, which made the 15,000 objects.
 *
 * DCCM_BENCH_WATCHER_BASELINE=<another build's watcher/informers.js> measures that watcher too,
 * on the same apiserver in the same run (`scaleBaselineWatcher*`), for a before/after ratio.
 */
import { execFile } from "node:child_process";
import * as path from "node:path";
import { promisify } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { startKube } from "../test/support/e2e/kube";
import { round, runAlone } from "./stats";
import type { ChildFigures } from "./watcherScaleChild";

const execFileAsync = promisify(execFile);

export interface WatcherScaleFigures {
  scaleWatchedNodes: number;
  scaleWatchedServices: number;
  scaleWatcherSyncMs: number;
  scaleWatcherHeapMb: number;
  scaleWatcherRssMb: number;
  scaleRecomputeMs: number;
  scaleBaselineWatcherHeapMb?: number;
  scaleBaselineWatcherRssMb?: number;
}

const NODES = Number(process.env.DCCM_BENCH_WATCH_NODES ?? "5000");
const SERVICES = Number(process.env.DCCM_BENCH_WATCH_SERVICES ?? "10000");
const CREATE_CONCURRENCY = 50;
const ZONES = ["us-central1-a", "us-central1-b", "us-central1-c"];

/** Starts a watcher in a fresh process on `kubeconfigPath` and returns what it measured. */
async function measureWatcher(kubeconfigPath: string, informersModule: string): Promise<ChildFigures> {
  const child = path.join(__dirname, "watcherScaleChild.js");
  const { stdout } = await execFileAsync(process.execPath, ["--expose-gc", child, kubeconfigPath, informersModule], {
    maxBuffer: 1024 * 1024,
  });
  return JSON.parse(stdout) as ChildFigures;
}

/** A Node's status as the kubelet writes it on a GCE VM. */
function kubeletStatus(i: number, name: string): k8s.V1NodeStatus {
  const now = new Date();
  const condition = (type: string, status: string, reason: string): k8s.V1NodeCondition => ({
    type,
    status,
    reason,
    message: `kubelet reports ${reason}`,
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  });
  return {
    conditions: [
      condition("MemoryPressure", "False", "KubeletHasSufficientMemory"),
      condition("DiskPressure", "False", "KubeletHasNoDiskPressure"),
      condition("PIDPressure", "False", "KubeletHasSufficientPID"),
      condition("Ready", "True", "KubeletReady"),
    ],
    addresses: [
      { type: "InternalIP", address: `10.128.${Math.floor(i / 250)}.${(i % 250) + 2}` },
      {
        type: "ExternalIP",
        address: `34.${100 + Math.floor(i / 65_000)}.${Math.floor(i / 250) % 256}.${(i % 250) + 2}`,
      },
      { type: "Hostname", address: name },
    ],
    capacity: { cpu: "4", memory: "16393916Ki", pods: "110", "ephemeral-storage": "101203600Ki", "hugepages-2Mi": "0" },
    allocatable: {
      cpu: "3920m",
      memory: "13747388Ki",
      pods: "110",
      "ephemeral-storage": "46291729149",
      "hugepages-2Mi": "0",
    },
    nodeInfo: {
      machineID: `m${i}`,
      systemUUID: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
      bootID: `b${i}`,
      kernelVersion: "6.1.0-28-cloud-amd64",
      osImage: "Debian GNU/Linux 12 (bookworm)",
      containerRuntimeVersion: "containerd://1.7.24",
      kubeletVersion: "v1.31.4",
      kubeProxyVersion: "v1.31.4",
      operatingSystem: "linux",
      architecture: "amd64",
    },
    images: Array.from({ length: 20 }, (_, image) => ({
      names: [
        `registry.example.com/team-${image}/app@sha256:${String(image).padStart(64, "0")}`,
        `registry.example.com/team-${image}/app:v1.${image}.0`,
      ],
      sizeBytes: 50_000_000 + image,
    })),
  };
}

async function inParallel(count: number, create: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < count) await create(next++);
  };
  await Promise.all(Array.from({ length: CREATE_CONCURRENCY }, worker));
}

export async function benchWatcherScale(): Promise<WatcherScaleFigures> {
  const kube = await startKube();
  const core = kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
  try {
    await inParallel(NODES, async (i) => {
      const zone = ZONES[i % ZONES.length];
      const name = `node-${i}`;
      await core.createNode({
        body: {
          metadata: {
            name,
            labels: {
              "topology.kubernetes.io/zone": zone,
              "kubernetes.io/hostname": name,
              "node.kubernetes.io/instance-type": "e2-standard-4",
              "kubernetes.io/os": "linux",
            },
          },
          spec: {
            providerID: `gce://bench-project/${zone}/${name}`,
            podCIDR: `10.${64 + Math.floor(i / 256)}.${i % 256}.0/24`,
          },
        },
      });
      await core.replaceNodeStatus({ name, body: { metadata: { name }, status: kubeletStatus(i, name) } });
    });
    await inParallel(SERVICES, (i) =>
      core.createNamespacedService({
        namespace: "default",
        body: {
          metadata: { name: `svc-${i}`, labels: { app: `app-${i}` } },
          spec: {
            // 5,000 LoadBalancer Services would need more node ports than the apiserver's range holds (30000-32767).
            ...(i % 2 === 0 ? { type: "LoadBalancer", allocateLoadBalancerNodePorts: false } : { type: "ClusterIP" }),
            selector: { app: `app-${i}` },
            ports: [{ name: "http", protocol: "TCP", port: 80, targetPort: 8080 }],
          },
        },
      }),
    );
    const measured = await measureWatcher(kube.kubeconfigPath, path.join(__dirname, "..", "watcher", "informers.js"));
    const baselineModule = process.env.DCCM_BENCH_WATCHER_BASELINE;
    const baseline =
      baselineModule === undefined || baselineModule === ""
        ? undefined
        : await measureWatcher(kube.kubeconfigPath, path.resolve(baselineModule));
    return {
      scaleWatchedNodes: NODES,
      scaleWatchedServices: SERVICES,
      scaleWatcherSyncMs: round(measured.syncMs, 0),
      scaleWatcherHeapMb: round(measured.heapBytes / 1024 / 1024, 1),
      scaleWatcherRssMb: round(measured.rssBytes / 1024 / 1024, 1),
      scaleRecomputeMs: round(measured.recomputeMs, 0),
      ...(baseline === undefined
        ? {}
        : {
            scaleBaselineWatcherHeapMb: round(baseline.heapBytes / 1024 / 1024, 1),
            scaleBaselineWatcherRssMb: round(baseline.rssBytes / 1024 / 1024, 1),
          }),
    };
  } finally {
    await kube.stop();
  }
}

if (require.main === module) runAlone(() => benchWatcherScale());
