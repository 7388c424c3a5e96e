/**
 * Keeps the latest desired state of the watched cluster and tells which stacks it changed: each
 * stack's slice is hashed, so an update that changes nothing a stack declares triggers nothing.
 *
 * Incremental: the watcher's snapshot keeps the same object for an unchanged Node or Service and a
 * new one for a changed one, so an update reads each Service again only when its object is new. A
 * Service change plans that Service and hashes its stack; a Node change recomputes the Nodes' part
 * (model/desired.ts nodePart) and places again only the Services whose backends it moved; an
 * observation recomputes the Nodes' part and plans again the Services whose held deny rule it
 * changed, except one that moves only the NEGs' members (the NEG controller's, after each sync),
 * which places again only the Services of those NEGs. The pieces are model/desired.ts's, which desiredState composes from scratch: a property
 * test holds the two equal after every event.
 */
import * as crypto from "node:crypto";
import { CLUSTER_STACK, serviceKey, serviceStackName } from "./names";
import {
  NOTHING_OBSERVED,
  type ClusterDesired,
  type ClusterSnapshot,
  type Config,
  type DesiredState,
  type NegSpec,
  type NodeInfo,
  type ObservedCloud,
  type Rejection,
  type ServiceDesired,
  type ServiceInfo,
} from "./types";
import { hashedName } from "./subsets";
import {
  clusterDesired,
  compareRejections,
  lbNameTaken,
  locateNodes,
  negInput,
  nodePart,
  overInternalVmLimit,
  placeService,
  planService,
  sortNegs,
  stateWarnings,
  usesLegacyHealthCheck,
  type LocatedNode,
  type NodePart,
  type ServicePlan,
} from "./desired";

export interface StackChange {
  stack: string;
  /** Hash of what the stack declares now; undefined when the stack should no longer exist. */
  hash: string | undefined;
}

export function hashOf(value: unknown): string {
  return crypto.createHash("sha256").update(JSON.stringify(value)).digest("hex").slice(0, 32);
}

/** The stack a rejection is recorded on: its Service's. */
export function rejectionStack(rejection: Rejection): string {
  const [namespace, name] = rejection.service.split("/");
  return serviceStackName(namespace, name);
}

/** What a stack declares, hashed: its Service's rejections (sorted) when it has any, else its Service's desired state. */
function stackHash(service: ServiceDesired | undefined, rejections: readonly Rejection[]): string | undefined {
  if (rejections.length > 0) return hashOf({ rejected: rejections.map((r) => r.message) });
  return service === undefined ? undefined : hashOf(service);
}

/** Every stack's hash of a whole desired state (the reference for the incremental cache). */
export function stackHashes(desired: DesiredState): Map<string, string> {
  const hashes = new Map<string, string>();
  hashes.set(CLUSTER_STACK, hashOf(desired.cluster));
  const services = new Map<string, ServiceDesired>();
  for (const service of desired.services) services.set(service.stack, service);
  const rejections = new Map<string, Rejection[]>();
  for (const rejection of desired.rejected) {
    const stack = rejectionStack(rejection);
    rejections.set(stack, [...(rejections.get(stack) ?? []), rejection]);
  }
  for (const stack of new Set([...services.keys(), ...rejections.keys()])) {
    const hash = stackHash(services.get(stack), rejections.get(stack) ?? []);
    if (hash !== undefined) hashes.set(stack, hash);
  }
  return hashes;
}

export interface StackView {
  desired: DesiredState;
  service?: ServiceDesired;
  rejections: Rejection[];
  hash: string | undefined;
}

/** One Service object of the snapshot and what was computed from it. */
interface Entry {
  readonly info: ServiceInfo;
  /** serviceKey of the object as planService reads it (ObservedCloud denyRulesHeld). */
  readonly key: string;
  plan: ServicePlan;
  /** After uniqueness and placement: the desired state, or the rejections. */
  desired: ServiceDesired | undefined;
  rejections: Rejection[];
  /** The stack its desired state or rejections land on; undefined when ignored. */
  stack: string | undefined;
  /** Backend `neg`, placed: its NEGs with their endpoints (the NEG controller's). */
  negs: NegSpec[];
  /** hashedName(node, uid) of the nodes seen, for its subsets: computed once per node and UID. */
  nodeHashes: Map<string, string>;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function plannedOf(entry: Entry): ServiceDesired | undefined {
  return entry.plan.kind === "planned" ? entry.plan.desired : undefined;
}

export class DesiredCache {
  private snapshot: ClusterSnapshot | undefined;
  private observed: ObservedCloud = NOTHING_OBSERVED;
  /** observed.negMembers once tellNegMembers owns it (changed in place: a tell must not copy every NEG's list). */
  private ownedNegMembers: Record<string, readonly string[]> | undefined;
  private denyRulesHeld: ReadonlySet<string> = new Set();
  private nodes: NodePart | undefined;
  private nodeObjects = new Set<NodeInfo>();
  private cluster: ClusterDesired | undefined;
  private entries = new Map<ServiceInfo, Entry>();
  private byKey = new Map<string, Set<Entry>>();
  /** Planned entries by load balancer name: the first by key owns it. */
  private byLbName = new Map<string, Set<Entry>>();
  private byStack = new Map<string, Set<Entry>>();
  /** Entries whose desired state usesLegacyHealthCheck. */
  private legacyUsers = new Set<Entry>();
  /** Placed entries of backend `neg`. */
  private negUsers = new Set<Entry>();
  /** Service keys whose NEGs or endpoints changed since takeNegChanges. */
  private negChanges = new Set<string>();
  private hashes = new Map<string, string>();
  private assembled: DesiredState | undefined;

  constructor(private readonly config: Config) {}

  /** Recomputes from `snapshot` and returns the stacks whose hash changed (appeared, changed or vanished). */
  update(snapshot: ClusterSnapshot): StackChange[] {
    const first = this.snapshot === undefined;
    this.snapshot = snapshot;
    const dirty = new Set<string>();
    const lbNames = new Set<string>();
    const nodesChanged = this.nodesChanged(snapshot.nodes) || first;
    const replan = this.syncServices(snapshot.services, dirty, lbNames);
    return this.apply({ nodesChanged, replan, dirty, lbNames });
  }

  /** Recomputes with a new observation of GCE and of the applied stacks (before the first snapshot: kept for it). */
  observe(observed: ObservedCloud): StackChange[] {
    const previous = this.observed;
    const before = this.denyRulesHeld;
    this.observed = observed;
    this.denyRulesHeld = new Set(observed.denyRulesHeld);
    if (this.snapshot === undefined) return [];
    const negMembersOnly = negMembersMovedOnly(previous, observed);
    if (negMembersOnly !== undefined) {
      const placeAgain = new Set<Entry>();
      for (const key of negMembersOnly) for (const entry of this.negUsersOf(key)) placeAgain.add(entry);
      return this.apply({
        nodesChanged: false,
        replan: new Set(),
        placeAgain,
        dirty: new Set(),
        lbNames: new Set(),
      });
    }
    const replan = new Set<Entry>();
    for (const key of before)
      if (!this.denyRulesHeld.has(key)) for (const entry of this.byKey.get(key) ?? []) replan.add(entry);
    for (const key of this.denyRulesHeld)
      if (!before.has(key)) for (const entry of this.byKey.get(key) ?? []) replan.add(entry);
    return this.apply({ nodesChanged: true, replan, dirty: new Set(), lbNames: new Set() });
  }

  /**
   * The NEG controller's tell: what each NEG it listed or changed holds (`<zone>/<name>` → instance
   * names; undefined: forgotten). Only the users of NEGs whose members moved are placed again, and
   * a tell costs its own size, not the number of NEGs: a cold start tells once or twice per Service,
   * so copying or comparing every NEG's list on each would cost O(Services²).
   */
  tellNegMembers(changes: Readonly<Record<string, readonly string[] | undefined>>): StackChange[] {
    const members = this.ownNegMembers();
    const moved: string[] = [];
    for (const [key, list] of Object.entries(changes)) {
      const was = members[key];
      if (list === undefined) {
        if (was === undefined) continue;
        delete members[key];
      } else {
        if (was !== undefined && sameMembers(was, list)) continue;
        members[key] = list;
      }
      moved.push(key);
    }
    if (moved.length === 0 || this.snapshot === undefined) return [];
    const placeAgain = new Set<Entry>();
    for (const key of moved) for (const entry of this.negUsersOf(key)) placeAgain.add(entry);
    return this.apply({ nodesChanged: false, replan: new Set(), placeAgain, dirty: new Set(), lbNames: new Set() });
  }

  /**
   * The observation's NEG members as a record this cache may change in place: copied once when an
   * observation from elsewhere brought its own (observe()), kept across amended observations.
   */
  private ownNegMembers(): Record<string, readonly string[]> {
    if (this.ownedNegMembers === undefined || this.observed.negMembers !== this.ownedNegMembers) {
      this.ownedNegMembers = { ...this.observed.negMembers };
      this.observed = { ...this.observed, negMembers: this.ownedNegMembers };
    }
    return this.ownedNegMembers;
  }

  /** A Service's NEGs with their endpoints (none unless it is a placed `neg` Service). */
  negsOf(serviceKeyOf: string): readonly NegSpec[] {
    for (const entry of this.byKey.get(serviceKeyOf) ?? []) if (this.negUsers.has(entry)) return entry.negs;
    return [];
  }

  /** The Services whose NEGs or endpoints changed since the last call (placed, moved, or gone), sorted. */
  takeNegChanges(): string[] {
    const keys = [...this.negChanges].sort(compareText);
    this.negChanges.clear();
    return keys;
  }

  /** The `neg` Services whose NEG is `<zone>/<name>` (its name `<lb>` or `<lb>-<8 hex>`). */
  private negUsersOf(negKey: string): Entry[] {
    const name = negKey.slice(negKey.indexOf("/") + 1);
    const owners = [...(this.byLbName.get(name) ?? []), ...(this.byLbName.get(name.slice(0, -9)) ?? [])];
    return owners.filter((entry) => this.negUsers.has(entry));
  }

  lastObserved(): ObservedCloud {
    return this.observed;
  }

  /** Every Node whose instance is known, gone or not: what the daemon asks Compute about. */
  locatedNodes(): LocatedNode[] {
    return this.snapshot === undefined ? [] : locateNodes(this.snapshot.nodes, this.config);
  }

  desired(): DesiredState {
    if (this.cluster === undefined || this.nodes === undefined)
      throw new Error("desired state read before the first snapshot");
    if (this.assembled === undefined) {
      const services: ServiceDesired[] = [];
      const rejected: Rejection[] = [];
      for (const entry of this.entries.values()) {
        if (entry.desired !== undefined) services.push(entry.desired);
        rejected.push(...entry.rejections);
      }
      services.sort((a, b) => compareText(a.key, b.key));
      rejected.sort(compareRejections);
      const negs: NegSpec[] = [];
      for (const entry of this.negUsers) negs.push(...entry.negs);
      this.assembled = {
        cluster: this.cluster,
        services,
        rejected,
        warnings: stateWarnings(this.nodes, this.negUsers.size > 0),
        ...(negs.length > 0 ? { networkEndpointGroups: sortNegs(negs) } : {}),
      };
    }
    return this.assembled;
  }

  view(stack: string): StackView {
    const desired = this.desired();
    const { service, rejections } = this.stackContent(stack);
    return { desired, ...(service !== undefined ? { service } : {}), rejections, hash: this.hashes.get(stack) };
  }

  stacks(): string[] {
    return [...this.hashes.keys()].sort();
  }

  private nodesChanged(nodes: readonly NodeInfo[]): boolean {
    const changed = nodes.length !== this.nodeObjects.size || nodes.some((node) => !this.nodeObjects.has(node));
    if (changed) this.nodeObjects = new Set(nodes);
    return changed;
  }

  /** New Service objects become entries to plan; entries whose object left the snapshot are dropped (their stacks `dirty`, their load balancer names in `lbNames`). */
  private syncServices(services: readonly ServiceInfo[], dirty: Set<string>, lbNames: Set<string>): Set<Entry> {
    const present = new Set(services);
    for (const entry of [...this.entries.values()]) {
      if (present.has(entry.info)) continue;
      this.entries.delete(entry.info);
      removeFrom(this.byKey, entry.key, entry);
      this.unplace(entry, dirty, lbNames);
    }
    const added = new Set<Entry>();
    for (const info of services) {
      if (this.entries.has(info)) continue;
      const key = serviceKey(info.namespace, info.name);
      const entry: Entry = {
        info,
        key,
        plan: { kind: "ignored" },
        desired: undefined,
        rejections: [],
        stack: undefined,
        negs: [],
        nodeHashes: new Map(),
      };
      this.entries.set(info, entry);
      addTo(this.byKey, key, entry);
      added.add(entry);
    }
    return added;
  }

  /** Takes an entry's plan out of the indexes; its stack and its load balancer name's owners are marked. */
  private unplace(entry: Entry, dirty: Set<string>, lbNames: Set<string>): void {
    const planned = plannedOf(entry);
    if (planned !== undefined) {
      removeFrom(this.byLbName, planned.lbName, entry);
      lbNames.add(planned.lbName);
    }
    if (entry.stack !== undefined) {
      removeFrom(this.byStack, entry.stack, entry);
      dirty.add(entry.stack);
    }
    this.legacyUsers.delete(entry);
    this.dropNegs(entry);
    entry.plan = { kind: "ignored" };
    entry.desired = undefined;
    entry.rejections = [];
    entry.stack = undefined;
  }

  private dropNegs(entry: Entry): void {
    this.negUsers.delete(entry);
    if (entry.negs.length > 0) {
      this.negChanges.add(entry.key);
      this.assembled = undefined;
    }
    entry.negs = [];
  }

  /**
   * `replan`: entries whose Service is read again; `dirty`: stacks to hash again; `lbNames`: load
   * balancer names whose owner may have changed (a removed Service's).
   */
  private apply(change: {
    nodesChanged: boolean;
    replan: ReadonlySet<Entry>;
    /** Entries to place again with their plan as it is (their NEGs' members moved). */
    placeAgain?: ReadonlySet<Entry>;
    dirty: Set<string>;
    lbNames: Set<string>;
  }): StackChange[] {
    const { dirty, lbNames } = change;
    const previous = this.nodes;
    if (change.nodesChanged || this.nodes === undefined)
      this.nodes = nodePart(this.snapshot?.nodes ?? [], this.config, this.observed);
    const nodes = this.nodes;
    const zonesMoved =
      previous === undefined ||
      JSON.stringify([previous.backends.zones, previous.backendGroupRefs]) !==
        JSON.stringify([nodes.backends.zones, nodes.backendGroupRefs]);
    const instancesMoved =
      previous === undefined ||
      JSON.stringify(previous.backends.instances) !== JSON.stringify(nodes.backends.instances);
    const vmLimitCrossed = previous === undefined || overInternalVmLimit(previous) !== overInternalVmLimit(nodes);

    const place = new Set<Entry>();
    for (const entry of change.replan) {
      this.unplace(entry, dirty, lbNames);
      entry.plan = planService(entry.info, this.config, this.denyRulesHeld);
      const planned = plannedOf(entry);
      if (planned !== undefined) {
        addTo(this.byLbName, planned.lbName, entry);
        lbNames.add(planned.lbName);
      }
      place.add(entry);
    }
    for (const lbName of lbNames) for (const entry of this.byLbName.get(lbName) ?? []) place.add(entry);
    for (const entry of change.placeAgain ?? []) place.add(entry);
    if (zonesMoved || instancesMoved || vmLimitCrossed || change.nodesChanged) {
      for (const entry of this.entries.values()) {
        const planned = plannedOf(entry);
        const backend = planned?.backend;
        if (
          (backend === "backend-service" && (zonesMoved || (vmLimitCrossed && planned?.scheme === "INTERNAL"))) ||
          (backend === "target-pool" && instancesMoved) ||
          // A NEG holds the Service's subset of the nodes: the Nodes' part, or its observation, moved it.
          (backend === "neg" && change.nodesChanged)
        )
          place.add(entry);
      }
    }
    for (const entry of place) this.place(entry, nodes, dirty);

    const changes: StackChange[] = [];
    for (const stack of dirty) {
      const { service, rejections } = this.stackContent(stack);
      const hash = stackHash(service, rejections);
      if (hash === this.hashes.get(stack)) continue;
      if (hash === undefined) this.hashes.delete(stack);
      else this.hashes.set(stack, hash);
      changes.push({ stack, hash });
    }
    const legacyUsed = this.legacyUsers.size > 0;
    if (
      change.nodesChanged ||
      previous === undefined ||
      this.cluster === undefined ||
      this.cluster.legacyNodeHealthCheck !== (this.observed.legacyHealthCheckReferenced || legacyUsed)
    ) {
      this.assembled = undefined;
      this.cluster = clusterDesired(this.config, nodes, this.observed, legacyUsed);
      const hash = hashOf(this.cluster);
      if (hash !== this.hashes.get(CLUSTER_STACK)) {
        this.hashes.set(CLUSTER_STACK, hash);
        changes.push({ stack: CLUSTER_STACK, hash });
      }
    }
    // Warnings move with the Nodes alone; a Service placed again may be equal and yet a new object.
    if (change.nodesChanged || place.size > 0 || dirty.size > 0) this.assembled = undefined;
    return changes.sort((a, b) => compareText(a.stack, b.stack));
  }

  /** An entry's desired state or rejections from its plan: uniqueness of its load balancer name, then the backends. */
  private place(entry: Entry, nodes: NodePart, dirty: Set<string>): void {
    if (entry.stack !== undefined) {
      removeFrom(this.byStack, entry.stack, entry);
      dirty.add(entry.stack);
    }
    this.legacyUsers.delete(entry);
    const negsBefore = entry.negs;
    this.negUsers.delete(entry);
    entry.negs = [];
    entry.desired = undefined;
    entry.rejections = [];
    const plan = entry.plan;
    if (plan.kind === "rejected") entry.rejections = [...plan.rejections].sort(compareRejections);
    else if (plan.kind === "planned") {
      const owner = this.ownerOf(plan.desired.lbName);
      if (owner !== entry) entry.rejections = [lbNameTaken(plan.desired, owner?.key ?? "")];
      else {
        // Nodes come and go: the memo is dropped when it holds many more than there are.
        if (entry.nodeHashes.size > 2 * nodes.negNodes.length + 64) entry.nodeHashes.clear();
        const placed = placeService(
          plan.desired,
          nodes,
          negInput(this.config, this.observed, plan, this.hasher(entry)),
        );
        if (placed.ok) {
          entry.desired = placed.desired;
          entry.negs = placed.negs;
          if (placed.desired.backend === "neg") this.negUsers.add(entry);
        } else entry.rejections = [placed.rejection];
      }
    }
    if (JSON.stringify(negsBefore) !== JSON.stringify(entry.negs)) {
      this.negChanges.add(entry.key);
      this.assembled = undefined;
    }
    if (entry.desired !== undefined && usesLegacyHealthCheck(entry.desired)) this.legacyUsers.add(entry);
    entry.stack = entry.rejections.length > 0 ? rejectionStack(entry.rejections[0]) : entry.desired?.stack;
    if (entry.stack !== undefined) {
      addTo(this.byStack, entry.stack, entry);
      dirty.add(entry.stack);
    }
  }

  /** hashedName(node, uid) for an entry's subsets, memoized on the entry (its UID is fixed: a new UID is a new object). */
  private hasher(entry: Entry): (node: string) => string {
    return (node) => {
      let hash = entry.nodeHashes.get(node);
      if (hash === undefined) {
        hash = hashedName(node, entry.info.uid);
        entry.nodeHashes.set(node, hash);
      }
      return hash;
    };
  }

  /** The planned entry that keeps a load balancer name: the first by key. */
  private ownerOf(lbName: string): Entry | undefined {
    let owner: Entry | undefined;
    for (const entry of this.byLbName.get(lbName) ?? [])
      if (owner === undefined || compareText(entry.key, owner.key) < 0) owner = entry;
    return owner;
  }

  /** A stack's Service (the last by key, as one pass over the sorted Services would keep) and its rejections, sorted. */
  private stackContent(stack: string): { service: ServiceDesired | undefined; rejections: Rejection[] } {
    let service: ServiceDesired | undefined;
    const rejections: Rejection[] = [];
    for (const entry of this.byStack.get(stack) ?? []) {
      if (entry.desired !== undefined && (service === undefined || compareText(entry.desired.key, service.key) >= 0))
        service = entry.desired;
      rejections.push(...entry.rejections);
    }
    return { service, rejections: rejections.sort(compareRejections) };
  }
}

function addTo<K, V>(index: Map<K, Set<V>>, key: K, value: V): void {
  const set = index.get(key) ?? new Set<V>();
  set.add(value);
  index.set(key, set);
}

function removeFrom<K, V>(index: Map<K, Set<V>>, key: K, value: V): void {
  const set = index.get(key);
  if (set === undefined) return;
  set.delete(value);
  if (set.size === 0) index.delete(key);
}

/** Re-exported: the stack name rules live with the other names (model/names.ts). */
export { parseServiceStack } from "../model";

/**
 * The NEG keys whose members moved when nothing else of the observation did (every other field the
 * same object: the NEG controller amends the last observation), else undefined.
 */
function negMembersMovedOnly(before: ObservedCloud, after: ObservedCloud): string[] | undefined {
  const fields = new Set([...Object.keys(before), ...Object.keys(after)] as (keyof ObservedCloud)[]);
  fields.delete("negMembers");
  for (const field of fields) if (before[field] !== after[field]) return undefined;
  const was = before.negMembers ?? {};
  const now = after.negMembers ?? {};
  if (was === now) return [];
  const keys = new Set([...Object.keys(was), ...Object.keys(now)]);
  // A tell carries the lists it did not change over by reference: only its own are compared. A NEG
  // listed empty is not one never listed (placeNegService: negsPending).
  return [...keys].filter((key) => was[key] !== now[key] && JSON.stringify(was[key]) !== JSON.stringify(now[key]));
}

function sameMembers(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((member, i) => member === b[i]);
}
