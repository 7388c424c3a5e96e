/**
 * The load balancer ledger: ConfigMap kube-system/dccm-load-balancers, one data key per load
 * balancer name (`a<uid>`), its value `{"clusterId","service","uid"}`. The daemon writes an entry
 * before a Service stack's `up` creates anything under that name, and drops the Service's entries
 * only after its stack's destroy succeeded. It is kept in the cluster, not in the backend or GCE:
 * a cluster that never ran dccm for a Service has no entry for it, whatever a copied config file,
 * a shared backend or a look-alike name says, so an entry is the proof the leak detector and
 * `dccm gc` need before calling a load balancer resource ours.
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
