/**
 * One leak check: GCE listed first, then the ledger and the stacks (so whatever a running `up`
 * created before the listing is in its stack or the ledger by then), then classified, then each
 * leak confirmed by a GET (a run may have deleted it since the listing). Shared by the daemon's
 * monitor (report only) and `dccm gc`.
 */
import type { ClusterSnapshot } from "../model";
import { classOwnership } from "../model/removal";
import type { CallOptions } from "../gce";
import { classifyLeaks, type ClusterFacts, type Leak, type LeakConfig, type LedgerEntry } from "./classify";
import { exists, listObserved, type LeakCompute } from "../gce/listing";
import { readOwnership, type Ownership } from "./ownership";
import type { StackReader } from "../stacks/reader";

export interface DetectorDeps {
  compute: LeakCompute;
  project: string;
  /** The Shared VPC host, where the firewalls and routes are listed; absent: `project`. */
  networkProject?: string;
  region: string;
  config: LeakConfig;
  /** UID of this cluster's kube-system Namespace: a stack recording another one stops the check. */
  clusterUid: string;
  ledger: { read(): Promise<Map<string, LedgerEntry>> };
  /** The reader of the project's stacks (stacks/reader.ts). */
  reader: () => Pick<StackReader, "listStacks" | "exportStack">;
  cluster: () => Promise<ClusterFacts> | ClusterFacts;
  signal?: AbortSignal;
}

export interface Detection {
  leaks: Leak[];
  ownership: Ownership;
  /** How many ledger entries there were (all clusterIds). */
  ledgerEntries: number;
}

/** The evidence a snapshot of the cluster gives: Service UIDs (and whose class), Node UIDs. */
export function clusterFacts(snapshot: ClusterSnapshot, loadBalancerClasses: readonly string[]): ClusterFacts {
  return {
    services: new Map(
      snapshot.services.map((service) => [
        `${service.namespace}/${service.name}`,
        { uid: service.uid, foreign: classOwnership(service, loadBalancerClasses) === "foreign" },
      ]),
    ),
    nodes: new Map(snapshot.nodes.map((node) => [node.uid, node.name])),
  };
}

export async function detectLeaks(deps: DetectorDeps): Promise<Detection> {
  const opts: CallOptions = deps.signal !== undefined ? { signal: deps.signal } : {};
  const observed = await listObserved(deps.compute, deps, deps.region, opts);
  const ledger = await deps.ledger.read();
  const ownership = await readOwnership(deps.reader(), deps.clusterUid, deps.signal);
  const facts = await deps.cluster();
  const candidates = classifyLeaks(observed, ownership.owned, ledger, facts, deps.config);
  const leaks: Leak[] = [];
  for (const leak of candidates) if (await exists(deps.compute, deps, leak.resource, opts)) leaks.push(leak);
  return { leaks, ownership, ledgerEntries: ledger.size };
}
