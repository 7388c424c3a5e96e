/** `kubectl get nodes,services -A -o json` (a v1 List) → ClusterSnapshot. */
import type { ClusterSnapshot } from "../model";
import { clusterIdFromConfigMap } from "./clusterId";
import { trimNode, trimService } from "./trim";
import { isRecord } from "../runtime/guards";

export class SnapshotError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "SnapshotError";
  }
}

export interface DumpContents {
  snapshot: ClusterSnapshot;
  /** From ConfigMap kube-system/ingress-uid when the dump includes it. */
  clusterId?: string;
}

export function snapshotFromKubectlJson(text: string, source: string): DumpContents {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new SnapshotError(`${source}: not JSON (expected the output of kubectl get nodes,services -A -o json)`, {
      cause: error,
    });
  }
  if (!isRecord(parsed) || !Array.isArray(parsed.items)) {
    throw new SnapshotError(
      `${source}: expected a Kubernetes List with an "items" array (kubectl get nodes,services -A -o json)`,
    );
  }
  const listKind = typeof parsed.kind === "string" ? parsed.kind : "";
  const snapshot: ClusterSnapshot = { nodes: [], services: [] };
  let clusterId: string | undefined;
  parsed.items.forEach((item: unknown, index: number) => {
    if (!isRecord(item)) throw new SnapshotError(`${source}: items[${index}] is not an object`);
    const kind = typeof item.kind === "string" ? item.kind : listKind.replace(/List$/, "");
    const meta = isRecord(item.metadata) ? item.metadata : {};
    if (typeof meta.name !== "string" || meta.name === "")
      throw new SnapshotError(`${source}: items[${index}] (${kind || "unknown kind"}) has no metadata.name`);
    if (kind === "Node") snapshot.nodes.push(trimNode(item));
    else if (kind === "Service") snapshot.services.push(trimService(item));
    else if (kind === "ConfigMap") clusterId = clusterIdFromConfigMap(item) ?? clusterId;
  });
  return { snapshot, ...(clusterId !== undefined ? { clusterId } : {}) };
}
