/** Helpers for end-to-end tests of the daemon: cluster objects, events and metrics. */
import * as k8s from "@kubernetes/client-node";
import { eventually } from "../wait";
import type { NodeInfo, RawConfig } from "../../../model";

export const E2E_CONFIG: RawConfig = {
  project: "dccm-test",
  region: "us-central1",
  network: "k8s-net",
  nodeTags: ["k8s-node"],
  clusterName: "e2e",
  clusterId: "e2e0cafe",
};

/** The one Node of the suites that run a stack program without a daemon: a VM the emulator need not hold. */
export const E2E_NODE: NodeInfo = {
  name: "node-1",
  uid: "n0000000-0000-4000-8000-000000000001",
  providerID: "gce://dccm-test/us-central1-a/node-1",
  labels: {},
  taints: [],
  deleting: false,
  podCIDRs: [],
};

export async function createNode(core: k8s.CoreV1Api, name: string, zone: string): Promise<void> {
  await core.createNode({
    body: {
      metadata: { name, labels: { "topology.kubernetes.io/zone": zone } },
      spec: { providerID: `gce://dccm-test/${zone}/${name}` },
    },
  });
}

export function lbService(
  name: string,
  extra: Partial<k8s.V1ServiceSpec> = {},
  annotations: Record<string, string> = {},
): k8s.V1Service {
  return {
    metadata: { name, namespace: "default", annotations },
    spec: {
      type: "LoadBalancer",
      selector: { app: name },
      ports: [{ name: "http", protocol: "TCP", port: 80, targetPort: 8080 }],
      ...extra,
    },
  };
}

export async function eventReasons(core: k8s.CoreV1Api, name: string): Promise<{ reason: string; message: string }[]> {
  const events = await core.listNamespacedEvent({
    namespace: "default",
    fieldSelector: `involvedObject.name=${name},involvedObject.kind=Service`,
  });
  return events.items
    .filter((event) => event.reportingComponent === "dccm")
    .sort(
      (a, b) =>
        (a.firstTimestamp?.getTime() ?? 0) - (b.firstTimestamp?.getTime() ?? 0) ||
        (a.metadata?.name ?? "").localeCompare(b.metadata?.name ?? ""),
    )
    .map((event) => ({ reason: event.reason ?? "", message: event.message ?? "" }));
}

const UNINITIALIZED_TAINT = "node.cloudprovider.kubernetes.io/uninitialized";

/** A Node as the kubelet of an external cloud provider registers it: tainted until a CCM initializes it. */
export async function createTaintedNode(core: k8s.CoreV1Api, name: string, podCIDR: string): Promise<void> {
  await core.createNode({
    body: {
      metadata: { name },
      spec: {
        podCIDR,
        podCIDRs: [podCIDR],
        taints: [{ key: UNINITIALIZED_TAINT, value: "true", effect: "NoSchedule" }],
      },
    },
  });
}

/** The Node once it is initialized (taint gone) and its route reported (NetworkUnavailable: RouteCreated). */
export async function initializedWithRoute(core: k8s.CoreV1Api, name: string): Promise<k8s.V1Node> {
  let last: k8s.V1Node | undefined;
  return eventually(
    () =>
      `${name} initialized with its route condition; last seen ${JSON.stringify({ spec: last?.spec, labels: last?.metadata?.labels, conditions: last?.status?.conditions })}`,
    async () => {
      const read = await core.readNode({ name });
      last = read;
      const condition = read.status?.conditions?.find((entry) => entry.type === "NetworkUnavailable");
      const tainted = (read.spec?.taints ?? []).some((taint) => taint.key === UNINITIALIZED_TAINT);
      return !tainted && condition?.reason === "RouteCreated" ? read : undefined;
    },
  );
}
