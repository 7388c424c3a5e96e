/**
 * The load balancer ledger: ConfigMap kube-system/dccm-load-balancers, one data key per load
 * balancer name (`a<uid>`), its value `{"clusterId","service","uid"}`. The daemon writes an entry
 * before a Service stack's `up` creates anything under that name, and drops the Service's entries
 * only after its stack's destroy succeeded. It is kept in the cluster, not in the backend or GCE:
 * a cluster that never ran dccm for a Service has no entry for it, whatever a copied config file
 * or a shared backend says. An entry records a name dccm planned, not who made a resource under it
 * (the stock CCM's load balancer of the same Service has the same name), so it proves nothing on
 * its own: the leak check reports unmarked resources it names as this cluster's, unproven (the
 * proof is the owner marker, leaks/classify.ts). The ConfigMap also holds the clusterId claim.
 */
import * as k8s from "@kubernetes/client-node";
import { kubeError, kubeStatusCode } from "../controller/kube";
import type { LedgerEntry } from "./classify";

export const LEDGER_CONFIGMAP = { namespace: "kube-system", name: "dccm-load-balancers" } as const;

/** What the reconciler writes (daemon/reconciler.ts). */
export interface LedgerWriter {
  /** Before resources named for `lbName` are created for the Service. */
  record(lbName: string, service: { key: string; uid: string }): Promise<void>;
  /** After the Service's stack was destroyed: every entry of that Service (this clusterId's) goes. */
  forget(serviceKey: string): Promise<void>;
}

/** The value stored under a load balancer name; the key order is fixed so equal entries compare equal. */
export function ledgerValue(entry: LedgerEntry): string {
  return JSON.stringify({ clusterId: entry.clusterId, service: entry.service, uid: entry.uid });
}

/** The entries of a ConfigMap's data; a value that is not an entry (edited by hand) proves nothing and is left out. */
export function parseLedger(data: Readonly<Record<string, string>> | undefined): Map<string, LedgerEntry> {
  const entries = new Map<string, LedgerEntry>();
  for (const [lb, value] of Object.entries(data ?? {})) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      continue;
    }
    if (typeof parsed !== "object" || parsed === null) continue;
    const { clusterId, service, uid } = parsed as Record<string, unknown>;
    if (typeof clusterId === "string" && typeof service === "string" && typeof uid === "string") entries.set(lb, { clusterId, service, uid });
  }
  return entries;
}

/**
 * The annotation of the ledger ConfigMap naming the clusterId this cluster is managed under, written
 * by the daemon's first start. One cluster, one clusterId: every name dccm gives (instance groups,
 * health checks, the Pulumi project `dccm-<clusterId>`) depends on it, and a daemon under another
 * one would create a second set of resources for the same Nodes and Services.
 */
export const CLUSTER_ID_ANNOTATION = "dccm.io/cluster-id";

/** What the ledger ConfigMap says about who manages this cluster. */
export interface LedgerClaim {
  /** The annotation's clusterId; undefined before any daemon claimed the cluster (new, or written by an older dccm). */
  claimedBy: string | undefined;
  entries: ReadonlyMap<string, LedgerEntry>;
}

export type ClusterIdDecision = { kind: "ours" } | { kind: "claim" } | { kind: "refuse"; message: string };

/**
 * Whether a dccm under `clusterId` may manage this cluster (pure). The annotation decides once
 * written; before it (an install of an older dccm), ledger entries of other clusterIds say which
 * clusterId the cluster is managed under. Nothing of either: this daemon claims the cluster.
 */
export function decideClusterId(ledger: LedgerClaim, clusterId: string, clusterUid: string): ClusterIdDecision {
  const where = `ConfigMap ${LEDGER_CONFIGMAP.namespace}/${LEDGER_CONFIGMAP.name}`;
  let managedUnder: string;
  let evidence: string;
  if (ledger.claimedBy !== undefined) {
    if (ledger.claimedBy === clusterId) return { kind: "ours" };
    managedUnder = ledger.claimedBy;
    evidence = `annotation ${CLUSTER_ID_ANNOTATION} of ${where}`;
  } else {
    const others = [...new Set([...ledger.entries.values()].map((entry) => entry.clusterId).filter((id) => id !== clusterId))].sort();
    if (others.length === 0) return { kind: "claim" };
    managedUnder = others.join(", ");
    evidence = `the load balancers its ledger ${where} records`;
  }
  return {
    kind: "refuse",
    message:
      `this cluster (kube-system UID ${clusterUid}) is managed by dccm under clusterId ${managedUnder} (${evidence}), not ${clusterId}: ` +
      `changing a clusterId is a migration, not a restart (every GCE name and the Pulumi project depend on it); start dccm with clusterId ${managedUnder}`,
  };
}

/** A daemon or `dccm gc` under a clusterId other than the one this cluster is managed under. */
export class ClusterIdRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ClusterIdRefusedError";
  }
}

const mergePatch = (): ReturnType<typeof k8s.setHeaderOptions> => k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);

/**
 * The ledger over the apiserver. Entries are added and removed with JSON merge patches of single
 * data keys, which the apiserver applies atomically: two writers (another dccm of this cluster, a
 * new leader) never lose each other's entries.
 */
export class ConfigMapLedger implements LedgerWriter {
  /** lbName → value, as last read or written by us; record() skips a write it would repeat. */
  private known: Map<string, string> | undefined;

  constructor(
    private readonly core: k8s.CoreV1Api,
    private readonly clusterId: string,
  ) {}

  /** Every entry, read now (empty when the ConfigMap does not exist). */
  async read(): Promise<Map<string, LedgerEntry>> {
    let configMap: k8s.V1ConfigMap;
    try {
      configMap = await this.core.readNamespacedConfigMap(LEDGER_CONFIGMAP);
    } catch (error) {
      if (kubeStatusCode(error) !== 404) throw kubeError(`reading ConfigMap ${LEDGER_CONFIGMAP.namespace}/${LEDGER_CONFIGMAP.name}`, error);
      this.known = new Map();
      return new Map();
    }
    const entries = parseLedger(configMap.data);
    this.known = new Map([...entries].map(([lb, entry]) => [lb, ledgerValue(entry)]));
    return entries;
  }

  /**
   * Writes the entry unless it is there already. An entry another clusterId wrote is never
   * rewritten: it is read again right before the write, so one written since our last read counts.
   */
  /** What the ConfigMap says about the clusterId this cluster is managed under (nothing when it does not exist). */
  private async readClaim(): Promise<LedgerClaim & { resourceVersion: string | undefined }> {
    let configMap: k8s.V1ConfigMap;
    try {
      configMap = await this.core.readNamespacedConfigMap(LEDGER_CONFIGMAP);
    } catch (error) {
      if (kubeStatusCode(error) !== 404) throw kubeError(`reading ConfigMap ${LEDGER_CONFIGMAP.namespace}/${LEDGER_CONFIGMAP.name}`, error);
      return { claimedBy: undefined, entries: new Map(), resourceVersion: undefined };
    }
    return { claimedBy: configMap.metadata?.annotations?.[CLUSTER_ID_ANNOTATION], entries: parseLedger(configMap.data), resourceVersion: configMap.metadata?.resourceVersion };
  }

  /** `dccm gc`: refuses (ClusterIdRefusedError) when this cluster is managed under another clusterId; writes nothing. */
  async verifyClusterId(clusterUid: string): Promise<void> {
    const decision = decideClusterId(await this.readClaim(), this.clusterId, clusterUid);
    if (decision.kind === "refuse") throw new ClusterIdRefusedError(decision.message);
  }

  /**
   * The daemon's start, before anything is created: refuses (ClusterIdRefusedError) when this
   * cluster is managed under another clusterId, else claims it for ours. The claim is conditional
   * on the version read, so of two daemons claiming at once one reads the other's claim.
   */
  async claimClusterId(clusterUid: string): Promise<void> {
    const where = `ConfigMap ${LEDGER_CONFIGMAP.namespace}/${LEDGER_CONFIGMAP.name}`;
    const what = `claiming this cluster for clusterId ${this.clusterId} in ${where}`;
    for (let attempt = 0; attempt < 3; attempt++) {
      const claim = await this.readClaim();
      const decision = decideClusterId(claim, this.clusterId, clusterUid);
      if (decision.kind === "refuse") throw new ClusterIdRefusedError(decision.message);
      if (decision.kind === "ours") return;
      const annotations = { [CLUSTER_ID_ANNOTATION]: this.clusterId };
      try {
        if (claim.resourceVersion === undefined) {
          await this.core.createNamespacedConfigMap({ namespace: LEDGER_CONFIGMAP.namespace, body: { metadata: { ...LEDGER_CONFIGMAP, annotations } } });
        } else {
          await this.core.patchNamespacedConfigMap({ ...LEDGER_CONFIGMAP, body: { metadata: { annotations, resourceVersion: claim.resourceVersion } } }, mergePatch());
        }
        return;
      } catch (error) {
        // 409: created or changed since our read (404: deleted since): decide again on what is there now.
        const status = kubeStatusCode(error);
        if (status !== 409 && status !== 404) throw kubeError(what, error);
      }
    }
    throw new Error(`${what}: it changed under each of 3 attempts`);
  }

  async record(lbName: string, service: { key: string; uid: string }): Promise<void> {
    const value = ledgerValue({ clusterId: this.clusterId, service: service.key, uid: service.uid });
    if (this.known?.get(lbName) === value) return;
    const what = `recording load balancer ${lbName} of Service ${service.key}`;
    const entries = await this.read();
    const existing = entries.get(lbName);
    if (existing !== undefined && existing.clusterId !== this.clusterId) {
      throw new Error(
        `${what} in ConfigMap ${LEDGER_CONFIGMAP.namespace}/${LEDGER_CONFIGMAP.name}: it is recorded for Service ${existing.service} under clusterId ${existing.clusterId}, ` +
          `not ${this.clusterId}; dccm never rewrites another clusterId's entry`,
      );
    }
    if (this.known?.get(lbName) === value) return;
    await this.patch({ [lbName]: value }, what);
    this.known?.set(lbName, value);
  }

  async forget(serviceKey: string): Promise<void> {
    const entries = await this.read();
    const gone = [...entries].filter(([, entry]) => entry.service === serviceKey && entry.clusterId === this.clusterId).map(([lb]) => lb);
    if (gone.length === 0) return;
    await this.patch(Object.fromEntries(gone.map((lb) => [lb, null])), `dropping the load balancers of Service ${serviceKey}`);
    for (const lb of gone) this.known?.delete(lb);
  }

  private async patch(data: Record<string, string | null>, what: string): Promise<void> {
    const where = `ConfigMap ${LEDGER_CONFIGMAP.namespace}/${LEDGER_CONFIGMAP.name}`;
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await this.core.patchNamespacedConfigMap({ ...LEDGER_CONFIGMAP, body: { data } }, mergePatch());
        return;
      } catch (error) {
        if (kubeStatusCode(error) !== 404) throw kubeError(`${what} in ${where}`, error);
      }
      // Removing from a ConfigMap that does not exist: nothing to remove.
      const added = Object.fromEntries(Object.entries(data).filter((entry): entry is [string, string] => entry[1] !== null));
      if (Object.keys(added).length === 0) return;
      try {
        await this.core.createNamespacedConfigMap({ namespace: LEDGER_CONFIGMAP.namespace, body: { metadata: { ...LEDGER_CONFIGMAP }, data: added } });
        return;
      } catch (error) {
        // Created meanwhile by another writer: patch it.
        if (kubeStatusCode(error) !== 409) throw kubeError(`${what}: creating ${where}`, error);
      }
    }
    throw new Error(`${what} in ${where}: it was deleted and re-created on 3 attempts`);
  }
}
