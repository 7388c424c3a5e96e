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
import { kubeError, kubeStatusCode } from "../runtime/kube";
import type { LedgerEntry } from "./classify";

export const LEDGER_CONFIGMAP = { namespace: "kube-system", name: "dccm-load-balancers" } as const;

/** What the reconciler writes (controllers/reconciler.ts). */
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
    if (typeof clusterId === "string" && typeof service === "string" && typeof uid === "string")
      entries.set(lb, { clusterId, service, uid });
  }
  return entries;
}

/**
 * The prefix of the ledger ConfigMap's claim annotations: `claim.dccm.io/<clusterId>`, value the JSON
 * list of the load balancer classes that clusterId's daemon handles, written at its first start. One
 * set of Services, one clusterId: every name dccm gives (instance groups, health checks, the Pulumi
 * project `dccm-<clusterId>`) depends on it, and a daemon under another one would create a second
 * set of resources for the same Nodes and Services. Daemons of disjoint classes (test/e2e/safety)
 * share a cluster under their own clusterIds.
 */
export const CLAIM_ANNOTATION_PREFIX = "claim.dccm.io/";

/** What the ledger ConfigMap says about who manages this cluster's Services. */
export interface LedgerClaim {
  /** clusterId → the load balancer classes its daemon claimed (none before any daemon of this version started). */
  claims: ReadonlyMap<string, readonly string[]>;
  entries: ReadonlyMap<string, LedgerEntry>;
}

/** A daemon's identity for the claim: its clusterId and the classes of the Services it handles. */
export interface Claimant {
  clusterId: string;
  loadBalancerClasses: readonly string[];
}

export type ClusterIdDecision = { kind: "ours" } | { kind: "claim" } | { kind: "refuse"; message: string };

/**
 * Whether a dccm of `claimant` may manage this cluster's Services (pure). Another clusterId holds
 * them when its claim shares a load balancer class with ours, or (installs of an older dccm, which
 * wrote no claim) when its ledger entry records a Service that is still here and that we would handle
 * (`services`: `ns/name` → its spec.loadBalancerClass, undefined for none). Otherwise this daemon
 * claims them, unless its claim is already there.
 */
export function decideClusterId(
  ledger: LedgerClaim,
  claimant: Claimant,
  clusterUid: string,
  services: ReadonlyMap<string, string | undefined>,
): ClusterIdDecision {
  const where = `ConfigMap ${LEDGER_CONFIGMAP.namespace}/${LEDGER_CONFIGMAP.name}`;
  const handled = (key: string): boolean =>
    services.has(key) &&
    (services.get(key) === undefined || claimant.loadBalancerClasses.includes(services.get(key) ?? ""));
  const evidence = new Map<string, string>();
  for (const [clusterId, classes] of [...ledger.claims].sort(([a], [b]) => a.localeCompare(b))) {
    const shared = classes.filter((name) => claimant.loadBalancerClasses.includes(name));
    if (clusterId !== claimant.clusterId && shared.length > 0)
      evidence.set(
        clusterId,
        `annotation ${CLAIM_ANNOTATION_PREFIX}${clusterId} of ${where}, load balancer class ${shared.join(", ")}`,
      );
  }
  for (const [lb, entry] of [...ledger.entries].sort(([a], [b]) => a.localeCompare(b))) {
    if (entry.clusterId === claimant.clusterId || evidence.has(entry.clusterId) || !handled(entry.service)) continue;
    evidence.set(entry.clusterId, `its ledger ${where} records load balancer ${lb} of Service ${entry.service} for it`);
  }
  if (evidence.size > 0) {
    const under = [...evidence.keys()].sort();
    return {
      kind: "refuse",
      message:
        `this cluster (kube-system UID ${clusterUid}) is managed by dccm under clusterId ${under.join(", ")} (${under.map((id) => evidence.get(id)).join("; ")}), not ${claimant.clusterId}: ` +
        `changing a clusterId is a migration, not a restart (every GCE name and the Pulumi project depend on it); start dccm with clusterId ${under.join(", ")}`,
    };
  }
  const ours = ledger.claims.get(claimant.clusterId);
  return ours !== undefined &&
    ours.length === claimant.loadBalancerClasses.length &&
    ours.every((name, index) => name === claimant.loadBalancerClasses[index])
    ? { kind: "ours" }
    : { kind: "claim" };
}

/** The claims among a ConfigMap's annotations; a value that is not a list of strings claims nothing. */
export function parseClaims(annotations: Readonly<Record<string, string>> | undefined): Map<string, string[]> {
  const claims = new Map<string, string[]>();
  for (const [key, value] of Object.entries(annotations ?? {})) {
    if (!key.startsWith(CLAIM_ANNOTATION_PREFIX)) continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      continue;
    }
    if (Array.isArray(parsed) && parsed.every((name): name is string => typeof name === "string"))
      claims.set(key.slice(CLAIM_ANNOTATION_PREFIX.length), parsed);
  }
  return claims;
}

/** A daemon or `dccm gc` under a clusterId other than the one this cluster's Services are managed under. */
export class ClusterIdRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ClusterIdRefusedError";
  }
}

/** Every Service of the cluster, `ns/name` → its spec.loadBalancerClass (undefined: none), listed when needed. */
export type ServiceClasses = () => Promise<ReadonlyMap<string, string | undefined>>;

/** The Services of the cluster through the apiserver, for the claim's decision. */
export function listServiceClasses(core: k8s.CoreV1Api): ServiceClasses {
  return async () => {
    let list: k8s.V1ServiceList;
    try {
      list = await core.listServiceForAllNamespaces();
    } catch (error) {
      throw kubeError("listing Services for the clusterId claim", error);
    }
    return new Map(
      list.items.map((service) => [
        `${service.metadata?.namespace ?? ""}/${service.metadata?.name ?? ""}`,
        service.spec?.loadBalancerClass,
      ]),
    );
  };
}

const mergePatch = (): ReturnType<typeof k8s.setHeaderOptions> =>
  k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);

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
      if (kubeStatusCode(error) !== 404)
        throw kubeError(`reading ConfigMap ${LEDGER_CONFIGMAP.namespace}/${LEDGER_CONFIGMAP.name}`, error);
      this.known = new Map();
      return new Map();
    }
    const entries = parseLedger(configMap.data);
    this.known = new Map([...entries].map(([lb, entry]) => [lb, ledgerValue(entry)]));
    return entries;
  }

  /** What the ConfigMap says about who manages this cluster's Services (nothing when it does not exist). */
  private async readClaim(): Promise<LedgerClaim & { resourceVersion: string | undefined }> {
    let configMap: k8s.V1ConfigMap;
    try {
      configMap = await this.core.readNamespacedConfigMap(LEDGER_CONFIGMAP);
    } catch (error) {
      if (kubeStatusCode(error) !== 404)
        throw kubeError(`reading ConfigMap ${LEDGER_CONFIGMAP.namespace}/${LEDGER_CONFIGMAP.name}`, error);
      return { claims: new Map(), entries: new Map(), resourceVersion: undefined };
    }
    return {
      claims: parseClaims(configMap.metadata?.annotations),
      entries: parseLedger(configMap.data),
      resourceVersion: configMap.metadata?.resourceVersion,
    };
  }

  /** The decision on what the ConfigMap says now; the Services are listed only when another clusterId wrote entries. */
  private async decide(
    claim: LedgerClaim,
    loadBalancerClasses: readonly string[],
    clusterUid: string,
    services: ServiceClasses,
  ): Promise<ClusterIdDecision> {
    const others = [...claim.entries.values()].some((entry) => entry.clusterId !== this.clusterId);
    return decideClusterId(
      claim,
      { clusterId: this.clusterId, loadBalancerClasses },
      clusterUid,
      others ? await services() : new Map(),
    );
  }

  /** `dccm gc`, `dccm adopt`: refuses (ClusterIdRefusedError) when this cluster's Services are managed under another clusterId; writes nothing. */
  async verifyClusterId(
    loadBalancerClasses: readonly string[],
    clusterUid: string,
    services: ServiceClasses,
  ): Promise<void> {
    const decision = await this.decide(await this.readClaim(), loadBalancerClasses, clusterUid, services);
    if (decision.kind === "refuse") throw new ClusterIdRefusedError(decision.message);
  }

  /**
   * The daemon's start, before anything is created: refuses (ClusterIdRefusedError) when this
   * cluster's Services are managed under another clusterId, else writes our claim. The write is
   * conditional on the version read, so of two daemons claiming at once one reads the other's claim.
   */
  async claimClusterId(
    loadBalancerClasses: readonly string[],
    clusterUid: string,
    services: ServiceClasses,
  ): Promise<void> {
    const where = `ConfigMap ${LEDGER_CONFIGMAP.namespace}/${LEDGER_CONFIGMAP.name}`;
    const what = `claiming this cluster's Services for clusterId ${this.clusterId} in ${where}`;
    for (let attempt = 0; attempt < 3; attempt++) {
      const claim = await this.readClaim();
      const decision = await this.decide(claim, loadBalancerClasses, clusterUid, services);
      if (decision.kind === "refuse") throw new ClusterIdRefusedError(decision.message);
      if (decision.kind === "ours") return;
      const annotations = { [`${CLAIM_ANNOTATION_PREFIX}${this.clusterId}`]: JSON.stringify(loadBalancerClasses) };
      try {
        if (claim.resourceVersion === undefined) {
          await this.core.createNamespacedConfigMap({
            namespace: LEDGER_CONFIGMAP.namespace,
            body: { metadata: { ...LEDGER_CONFIGMAP, annotations } },
          });
        } else {
          await this.core.patchNamespacedConfigMap(
            { ...LEDGER_CONFIGMAP, body: { metadata: { annotations, resourceVersion: claim.resourceVersion } } },
            mergePatch(),
          );
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
    const gone = [...entries]
      .filter(([, entry]) => entry.service === serviceKey && entry.clusterId === this.clusterId)
      .map(([lb]) => lb);
    if (gone.length === 0) return;
    await this.patch(
      Object.fromEntries(gone.map((lb) => [lb, null])),
      `dropping the load balancers of Service ${serviceKey}`,
    );
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
      const added = Object.fromEntries(
        Object.entries(data).filter((entry): entry is [string, string] => entry[1] !== null),
      );
      if (Object.keys(added).length === 0) return;
      try {
        await this.core.createNamespacedConfigMap({
          namespace: LEDGER_CONFIGMAP.namespace,
          body: { metadata: { ...LEDGER_CONFIGMAP }, data: added },
        });
        return;
      } catch (error) {
        // Created meanwhile by another writer: patch it.
        if (kubeStatusCode(error) !== 409) throw kubeError(`${what}: creating ${where}`, error);
      }
    }
    throw new Error(`${what} in ${where}: it was deleted and re-created on 3 attempts`);
  }
}
