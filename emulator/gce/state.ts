// The GCE emulator's one in-memory model, as the faces see it: the HTTP face (http.ts) and the
// Pulumi provider face (provider-api.ts, provider.ts) both work on a GceState. It puts together
// the generic store (store.ts), IP management (ipam.ts), networks (networks.ts), seeded instances
// (instances.ts) and fault injection (faults.ts), and runs each kind's rules (rules/) around every
// write: GCE's names, conflicts, references that must exist, resources in use that cannot be
// deleted and immutable fields.

import * as net from "node:net";

import { GceError, notFound } from "./errors";
import { type FaultOperation, Faults, type FaultSpec } from "./faults";
import { Permissions } from "./permissions";
import { type InstanceEnv, type InstanceSpec, putInstance, setInstanceStatus } from "./instances";
import { Ipam } from "./ipam";
import { canonical, clone, containsUnknown, deepEqual, isJsonObject, type Json, type JsonObject } from "./json";
import {
  defaultFor,
  type GceKind,
  invalidNameMessage,
  kindOf,
  kindOfPath,
  NAME_RE,
  normalizeRef,
  parseResourcePath,
  type RefContext,
  regionOfZone,
  resourcePath,
  scopePath,
  specOf,
} from "./kinds";
import { type NetworkSpec, Networks } from "./networks";
import {
  changedEndpoints,
  type EndpointRequest,
  expandShorthands,
  INSTANCE_GROUP_MAX_INSTANCES,
  NEG_ENDPOINTS,
  rulesOf,
  type StoredEndpoint,
  storedEndpoints,
} from "./rules";
import {
  compareKeys,
  fingerprintOf,
  type HistoryEntry,
  keyOfResource,
  keyString,
  type ResourceKey,
  ResourceStore,
  resourceFingerprint,
  type StoredResource,
} from "./store";
import { validateInputs } from "./validation";

export interface GceStateOptions {
  /** `http://127.0.0.1:PORT`: self links are `${endpoint}/compute/v1/projects/...`. */
  readonly endpoint: string;
  readonly project: string;
  readonly region: string;
  readonly zones: readonly string[];
  /** Clock for creationTimestamp. Default: the real clock. */
  readonly now?: () => Date;
  /**
   * VPC networks of the default project. Default: the `default` auto-mode network a new project
   * has, with its subnetwork `default` (10.128.0.0/20) in the region.
   */
  readonly networks?: readonly NetworkSpec[];
  /** The network of seeded instances whose interfaces name none. Default `default`. */
  readonly instanceNetwork?: string;
  /**
   * TEST ONLY: instances one unmanaged instance group may hold. Default
   * INSTANCE_GROUP_MAX_INSTANCES, GCE's documented limit; lowered only to prove at small scale
   * what a zone beyond the limit does.
   */
  readonly instanceGroupMaxInstances?: number;
}

/** Where an out-of-band insert lands: project and region/zone (default: the emulator's). */
export interface OutOfBandWhere {
  readonly project?: string;
  readonly scope?: string;
}

/** A check before a create (GceState.setCreateGuard): the key, its inputs, everything stored. */
export type CreateGuard = (key: ResourceKey, properties: JsonObject, existing: readonly StoredResource[]) => void;

/** Keys of stored properties that are computed by the emulator, never inputs. */
const COMPUTED = new Set(["id", "selfLink", "creationTimestamp", "fingerprint", "labelFingerprint", "size", "type"]);

function asString(v: Json | undefined): string | undefined {
  return typeof v === "string" ? v : undefined;
}

export class GceState {
  readonly endpoint: string;
  readonly project: string;
  readonly region: string;
  readonly zones: readonly string[];
  private readonly now: () => Date;
  private readonly store: ResourceStore;
  private readonly ipam = new Ipam();
  private readonly networks: Networks;
  private readonly faults = new Faults();
  private readonly permissions = new Permissions();
  /** What the rules (rules/) and instance seeding (instances.ts) see of this state. */
  private readonly env: InstanceEnv;
  /** Asked before every create with what exists (limits.ts: project quotas); throws to refuse it. */
  private createGuard: CreateGuard | undefined;

  constructor(opts: GceStateOptions) {
    this.endpoint = opts.endpoint.replace(/\/+$/, "");
    this.project = opts.project;
    this.region = opts.region;
    this.zones = [...opts.zones];
    this.now = opts.now ?? (() => new Date());
    this.store = new ResourceStore(this.now);
    this.networks = new Networks(
      this.endpoint,
      this.project,
      this.region,
      opts.networks ?? [{ name: "default", autoCreateSubnetworks: true }],
    );
    this.env = {
      store: this.store,
      networks: this.networks,
      ipam: this.ipam,
      groupMaxInstances: opts.instanceGroupMaxInstances ?? INSTANCE_GROUP_MAX_INSTANCES,
      now: this.now,
      instanceNetwork: opts.instanceNetwork ?? "default",
      path: (key) => this.path(key),
      keyOfPath: (link) => this.keyOfPath(link),
      ipsInUse: (except) => this.ipam.inUse(this.store.all(), except),
      resolveAddress: (link) => this.resolveAddress(link),
      requireExists: (link) => this.requireExists(link),
      refContext: (key) => this.refContext(key),
      selfLink: (key) => this.selfLink(key),
      scopeLink: (project, scopeType, scope) => this.scopeLink(project, scopeType, scope),
    };
  }

  /** Sets the check every create passes (quotas, limits.ts), through any face. */
  setCreateGuard(guard: CreateGuard | undefined): void {
    this.createGuard = guard;
  }

  /** Creates (or replaces) a VPC network and its subnetworks (test seeding, like instances). */
  putNetwork(spec: NetworkSpec): void {
    this.networks.put(spec);
  }

  /** `projects.enableXpnHost` (networks.ts). */
  enableXpnHost(project: string): void {
    this.networks.enableXpnHost(project);
  }

  /** `projects.enableXpnResource` on `host` for the service project `service` (networks.ts). */
  enableXpnResource(host: string, service: string): void {
    this.networks.enableXpnResource(host, service);
  }

  /** `projects.getXpnHost`: the host `service` is attached to. */
  xpnHostOf(service: string): string | undefined {
    return this.networks.xpnHostOf(service);
  }

  // ---- addressing --------------------------------------------------------------------------

  /** `projects/P/regions/R/forwardingRules/N` */
  path(key: ResourceKey): string {
    return resourcePath(key.kind, key.project, key.scope, key.name);
  }

  selfLink(key: ResourceKey): string {
    return `${this.endpoint}/compute/v1/${this.path(key)}`;
  }

  /** Self link of a zone or region (`scopeType` "zone"/"region") of a project. */
  scopeLink(project: string, scopeType: "region" | "zone", scope: string): string {
    return `${this.endpoint}/compute/v1/projects/${project}/${scopePath(scopeType, scope)}`;
  }

  /** The key a Pulumi resource ID or self link designates, if it is of a modelled kind. */
  keyOfPath(pathOrLink: string): ResourceKey | undefined {
    const p = parseResourcePath(pathOrLink);
    if (p === undefined) {
      return undefined;
    }
    const kind = kindOfPath(p);
    return kind === undefined ? undefined : { kind, project: p.project, scope: p.scope, name: p.name };
  }

  /**
   * The key of a resource from its Pulumi-named properties (project, region/zone, name), filling in
   * the emulator's default project/region/zone for absent ones.
   */
  keyOf(kindOrToken: string, props: JsonObject): ResourceKey {
    const kind = kindOf(kindOrToken);
    const spec = specOf(kind);
    const name = props.name;
    if (typeof name !== "string") {
      throw new GceError(400, "Invalid value for field 'resource.name': ''. Must be specified.", "invalid");
    }
    const project = asString(props.project) ?? this.project;
    let scope = "global";
    if (spec.scope === "region") {
      scope = asString(props.region) ?? this.region;
    } else if (spec.scope === "zone") {
      scope = asString(props.zone) ?? this.zones[0] ?? `${this.region}-a`;
    }
    return { kind, project, scope, name };
  }

  refContext(key: ResourceKey): RefContext {
    const spec = specOf(key.kind);
    return {
      endpoint: this.endpoint,
      project: key.project,
      region: spec.scope === "region" ? key.scope : spec.scope === "zone" ? regionOfZone(key.scope) : this.region,
      zone: spec.scope === "zone" ? key.scope : undefined,
    };
  }

  // ---- reads -------------------------------------------------------------------------------

  find(key: ResourceKey): StoredResource | undefined {
    return this.store.find(key);
  }

  get(key: ResourceKey): StoredResource {
    const r = this.find(key);
    if (r === undefined) {
      throw notFound(this.path(key));
    }
    return r;
  }

  /** Sorted by kind, project, scope, name. */
  list(filter: { kind?: GceKind; project?: string; scope?: string } = {}): StoredResource[] {
    return this.store.list(filter);
  }

  // ---- faults ------------------------------------------------------------------------------

  injectFault(fault: FaultSpec): void {
    this.faults.inject(fault);
  }

  /** Throws the injected error if a fault matches this operation (and uses it up). */
  checkFault(kind: GceKind, name: string | undefined, operation: FaultOperation): void {
    this.faults.check(kind, name, operation);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  // ---- permissions (permissions.ts) -------------------------------------------------------

  /** Whether the daemon's credential may write `project` (every project may, until a test says not). */
  setProjectWritable(project: string, writable: boolean): void {
    this.permissions.set(project, writable);
  }

  readOnlyProjects(): string[] {
    return this.permissions.refused();
  }

  // ---- writes ------------------------------------------------------------------------------

  /**
   * GCE insert. `props` are Pulumi-named inputs including name/project/region/zone. `faults: false`
   * for a create that is not a Compute call of the code under test (out-of-band seeding).
   */
  create(kindOrToken: string, props: JsonObject, opts: { readonly faults?: boolean } = {}): StoredResource {
    const key = this.keyOf(kindOrToken, props);
    if (!NAME_RE.test(key.name)) {
      throw new GceError(400, invalidNameMessage(key.name), "invalid");
    }
    this.validate(key.kind, props);
    rulesOf(key.kind).requireUrls?.(props);
    if (opts.faults !== false) {
      this.permissions.check(key.kind, key.project, "create", this.path(key));
      this.checkFault(key.kind, key.name, "create");
    }
    if (this.store.has(key)) {
      throw new GceError(409, `The resource '${this.path(key)}' already exists`, "alreadyExists");
    }
    this.createGuard?.(key, props, this.store.all());
    this.store.put(key, this.materialize(key, props, undefined), "create");
    return this.get(key);
  }

  /**
   * A create by another tool calling the Compute API (the stock CCM, gcloud), not through Pulumi:
   * GCE's rules as \`create\` (names, 409, references, IP allocation and ownership), no faults.
   * `props` use the kind's @pulumi/gcp input names, as the emulator stores them.
   */
  insertOutOfBand(kindOrToken: string, props: JsonObject, where: OutOfBandWhere = {}): StoredResource {
    const kind = kindOf(kindOrToken);
    const spec = specOf(kind);
    if (kind === "instances") {
      throw new GceError(400, "instances are seeded with putInstance, not inserted out of band", "invalid");
    }
    const known = new Set(["name", "project", "region", "zone", ...spec.inputs]);
    const unknown = Object.keys(props).find((k) => !known.has(k));
    if (unknown !== undefined) {
      throw new GceError(400, `${unknown} is not a property of ${spec.typeName}`, "invalid");
    }
    const full: JsonObject = { ...props };
    if (where.project !== undefined) {
      full.project = where.project;
    }
    if (where.scope !== undefined) {
      if (spec.scope === "global") {
        if (where.scope !== "global") {
          throw new GceError(
            400,
            `${spec.typeName} is global: its scope is "global", not ${JSON.stringify(where.scope)}`,
            "invalid",
          );
        }
      } else {
        full[spec.scope] = where.scope;
      }
    }
    return this.create(kind, full, { faults: false });
  }

  /**
   * GCE update/patch/set* of a managed resource to the given complete inputs. Immutable fields
   * must be unchanged (400 otherwise).
   */
  update(key: ResourceKey, props: JsonObject): StoredResource {
    const prev = this.get(key);
    this.validate(key.kind, props);
    rulesOf(key.kind).requireUrls?.(props);
    this.permissions.check(key.kind, key.project, "update", this.path(key));
    this.checkFault(key.kind, key.name, "update");
    const newKey = this.keyOf(key.kind, { ...props, name: props.name ?? key.name });
    if (keyString(newKey) !== keyString(key)) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.name': '${newKey.name}'. The name, project, region and zone of '${this.path(key)}' cannot be changed.`,
        "invalid",
      );
    }
    const field = this.immutableFields(key.kind, prev.properties, props)[0];
    if (field !== undefined) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.${field}': ${JSON.stringify(props[field] ?? null)}. Field '${field}' of '${this.path(key)}' cannot be changed.`,
        "invalid",
      );
    }
    this.store.put(key, this.materialize(key, props, prev), "update");
    return this.get(key);
  }

  /**
   * Adds or removes members of a target pool or an unmanaged instance group (targetPools.addInstance
   * / removeInstance, instanceGroups.addInstances / removeInstances: "Adds/Removes ... instances"
   * from the `instances` of the request body, each an instance URL). The group's rules hold as on
   * update (same zone and network, the group size limit); a link already in (add) or not in
   * (remove) the list changes nothing. Recorded as an update, like any change of the resource.
   */
  changeMembers(key: ResourceKey, links: readonly string[], add: boolean): StoredResource {
    const prev = this.get(key);
    const ctx = this.refContext(key);
    const named = links.map((link) => normalizeRef(link, { collection: "instances", scope: "zone" }, ctx));
    const current = Array.isArray(prev.properties.instances)
      ? prev.properties.instances.filter((l): l is string => typeof l === "string")
      : [];
    const next = add
      ? [...current, ...named.filter((l, i) => !current.includes(l) && named.indexOf(l) === i)]
      : current.filter((l) => !named.includes(l));
    const inputs: JsonObject = {};
    for (const [k, v] of Object.entries(prev.properties)) {
      if (!COMPUTED.has(k)) {
        inputs[k] = v;
      }
    }
    return this.update(key, { ...inputs, instances: next });
  }

  /**
   * networkEndpointGroups.attachNetworkEndpoints / detachNetworkEndpoints ("Attach a list of network
   * endpoints to the specified network endpoint group", "Detach a list of network endpoints from
   * the specified network endpoint group"): the NEG's rules (rules/networkEndpointGroups.ts
   * changedEndpoints) on the request's endpoints. Recorded as an update of the NEG when its
   * endpoints change, like any change of the resource.
   */
  changeEndpoints(key: ResourceKey, requests: readonly EndpointRequest[], attach: boolean): StoredResource {
    const prev = this.get(key);
    this.permissions.check(key.kind, key.project, "update", this.path(key));
    this.checkFault(key.kind, key.name, "update");
    const asJson = (list: readonly StoredEndpoint[]): Json[] =>
      list.map((e) => ({ instance: e.instance, ipAddress: e.ipAddress }));
    const next = asJson(changedEndpoints(this.env, key, prev, requests, attach));
    if (canonical(next) === canonical(asJson(storedEndpoints(prev)))) {
      return prev;
    }
    const properties: JsonObject = { ...prev.properties, [NEG_ENDPOINTS]: next, size: next.length };
    properties.fingerprint = resourceFingerprint(properties);
    this.store.put(key, properties, "update");
    return this.get(key);
  }

  /** The endpoints of a NEG (networkEndpointGroups.listNetworkEndpoints), in the order attached. */
  endpointsOf(key: ResourceKey): StoredEndpoint[] {
    return storedEndpoints(this.get(key));
  }

  /**
   * GCE delete: refuses (400 resourceInUseByAnotherResource) while another resource uses it, except
   * an address: deleting an address a forwarding rule uses releases the reservation and the rule
   * keeps the IP, now ephemeral (cloud.google.com/vpc/docs/reserve-static-external-ip-address,
   * "Release a static external IP address", and …/reserve-static-internal-ip-address). The stock
   * CCM relies on it for every load balancer it makes: kubernetes/cloud-provider-gcp
   * gce_loadbalancer_external.go, "It is safe to release the static IP (which just demotes it to
   * ephemeral) now that it is attached", and gce_loadbalancer_internal.go, "Now that the controller
   * knows the forwarding rule exists, we can release the address"; so does ingress-gce's L4
   * (pkg/loadbalancers/l4.go, l4netlb.go: "If the forwarding rule was successfully created, the
   * ephemeral IP is not needed anymore"). The rule's IP then goes back to Google's pool only when
   * the rule is deleted (rules/forwardingRules.ts, afterRemove).
   */
  delete(key: ResourceKey): void {
    this.get(key);
    this.permissions.check(key.kind, key.project, "delete", this.path(key));
    this.checkFault(key.kind, key.name, "delete");
    const user = key.kind === "addresses" ? undefined : this.usersOf(key)[0];
    if (user !== undefined) {
      throw new GceError(
        400,
        `The ${specOf(key.kind).resourceWord} resource '${this.path(key)}' is already being used by '${this.path(user)}'`,
        "resourceInUseByAnotherResource",
      );
    }
    this.remove(key);
  }

  /** Removes a resource, then lets its kind's rules do what GCE does after such a removal. */
  private remove(key: ResourceKey): void {
    const gone = this.store.remove(key);
    if (gone !== undefined) {
      rulesOf(gone.kind).afterRemove?.(this.env, gone);
    }
  }

  /** Every create, update and delete so far (any face), oldest first. */
  history(): HistoryEntry[] {
    return this.store.history();
  }

  clearHistory(): void {
    this.store.clearHistory();
  }

  /** Out-of-band change (someone editing in the console): merges top-level properties, null removes. */
  patchOutOfBand(key: ResourceKey, patch: JsonObject): StoredResource {
    const prev = this.get(key);
    const props: JsonObject = { ...prev.properties };
    for (const [k, v] of Object.entries(patch)) {
      if (["name", "project", "region", "zone", "selfLink", "id"].includes(k)) {
        throw new GceError(400, `Invalid value for field 'resource.${k}': it cannot be patched`, "invalid");
      }
      if (v === null) {
        delete props[k];
      } else {
        props[k] = clone(v);
      }
    }
    if (key.kind !== "instances") {
      props.fingerprint = resourceFingerprint(props);
    }
    this.store.put(key, props, "update");
    return this.get(key);
  }

  /** Out-of-band delete: bypasses in-use rules and faults. Throws 404 when absent. */
  deleteOutOfBand(key: ResourceKey): void {
    this.get(key);
    this.remove(key);
  }

  /** Removes every resource, fault and allocation. */
  reset(): void {
    this.store.clear();
    this.faults.clear();
    this.permissions.clear();
    this.ipam.reset();
    this.networks.reset();
  }

  /** Creates or replaces an instance (test seeding). */
  putInstance(project: string, zone: string, name: string, spec: InstanceSpec = {}): StoredResource {
    return this.get(putInstance(this.env, project, zone, name, spec));
  }

  /**
   * A stop, start, suspend or resume (instances.stop/start/suspend/resume): the status changes,
   * nothing else (addresses and alias ranges stay, as they do for a VM that keeps its interfaces).
   */
  setInstanceStatus(project: string, zone: string, name: string, status: string): StoredResource {
    return this.get(setInstanceStatus(this.env, project, zone, name, status));
  }

  // ---- rules -------------------------------------------------------------------------------

  private validate(kind: GceKind, props: JsonObject): void {
    const failure = validateInputs(kind, props)[0];
    if (failure !== undefined) {
      throw new GceError(400, failure.reason, "invalid");
    }
  }

  /** Immutable inputs whose new value differs from the stored one. */
  immutableFields(kind: GceKind, stored: JsonObject, news: JsonObject): string[] {
    const spec = specOf(kind);
    news = expandShorthands(kind, news);
    const key = this.keyOf(kind, { ...news, name: news.name ?? stored.name ?? null });
    const ctx = this.refContext(key);
    const changed = spec.immutable.filter((field) => {
      const nv = news[field] ?? defaultFor(kind, field);
      if (nv === undefined) {
        return false;
      }
      return !this.sameValue(kind, field, nv, stored[field], ctx);
    });
    return changed;
  }

  /** Resources that use `key` (and so block its deletion; an address's rules do not, see delete). */
  usersOf(key: ResourceKey): ResourceKey[] {
    const usedBy = rulesOf(key.kind).usedBy;
    if (usedBy === undefined) {
      return [];
    }
    const link = this.selfLink(key);
    return this.store
      .all()
      .filter((r) => usedBy(link, r))
      .map(keyOfResource)
      .sort(compareKeys);
  }

  /**
   * Whether a new input value means the same as a stored (normalized) one: references compared
   * as self links, sets unordered, a forwarding rule's address reference by its IP.
   */
  sameValue(kind: GceKind, field: string, newValue: Json, storedValue: Json | undefined, ctx: RefContext): boolean {
    if (containsUnknown(newValue)) {
      return false;
    }
    return deepEqual(
      this.comparable(kind, field, newValue, ctx, true),
      this.comparable(kind, field, storedValue ?? null, ctx, false),
    );
  }

  private comparable(kind: GceKind, field: string, v: Json, ctx: RefContext, resolve: boolean): Json {
    const spec = specOf(kind);
    let out = this.normalizeField(kind, field, v, ctx);
    const compare = rulesOf(kind).comparable;
    if (compare !== undefined && resolve) {
      out = compare(this.env, field, out);
    }
    if (spec.setFields.includes(field) && Array.isArray(out)) {
      out = [...out].sort((a, b) => canonical(a).localeCompare(canonical(b)));
    }
    if ((field === "allows" || field === "denies" || field === "backends") && Array.isArray(out)) {
      out = out
        .map((rule) => {
          if (!isJsonObject(rule)) {
            return rule;
          }
          const r: JsonObject = { ...rule };
          if (typeof r.protocol === "string") {
            r.protocol = r.protocol.toLowerCase();
          }
          if (Array.isArray(r.ports)) {
            r.ports = [...r.ports].sort((a, b) => canonical(a).localeCompare(canonical(b)));
          }
          return r;
        })
        .sort((a, b) => canonical(a).localeCompare(canonical(b)));
    }
    return out;
  }

  /** Normalizes references inside one input to self links. */
  normalizeField(kind: GceKind, field: string, v: Json, ctx: RefContext): Json {
    const special = rulesOf(kind).normalizeField?.(field, v, ctx);
    if (special !== undefined) {
      return special;
    }
    const ref = specOf(kind).refs[field];
    if (ref !== undefined) {
      if (typeof v === "string") {
        return normalizeRef(v, ref, ctx);
      }
      if (Array.isArray(v)) {
        return v.map((e) => (typeof e === "string" ? normalizeRef(e, ref, ctx) : e));
      }
    }
    return v;
  }

  /** The IP of the address a self link designates, or undefined. */
  private resolveAddress(link: string): string | undefined {
    if (net.isIP(link) !== 0) {
      return link;
    }
    const key = this.keyOfPath(link);
    if (key === undefined || key.kind !== "addresses") {
      return undefined;
    }
    return asString(this.store.peek(key)?.properties.address);
  }

  private requireExists(link: Json | undefined): void {
    if (typeof link !== "string") {
      return;
    }
    const key = this.keyOfPath(link);
    if (key !== undefined && !this.store.has(key)) {
      throw notFound(this.path(key));
    }
  }

  /** Stored properties from inputs: normalized references, GCE defaults, the kind's rules, computed fields. */
  private materialize(key: ResourceKey, inputs: JsonObject, prev: StoredResource | undefined): JsonObject {
    const spec = specOf(key.kind);
    const ctx = this.refContext(key);
    const props: JsonObject = {};
    for (const [k, v] of Object.entries(expandShorthands(key.kind, inputs))) {
      if (v === null || COMPUTED.has(k) || k === "name" || k === "project" || k === "region" || k === "zone") {
        continue;
      }
      if (containsUnknown(v)) {
        throw new GceError(400, `Invalid value for field 'resource.${k}': the value is not known`, "invalid");
      }
      props[k] = this.normalizeField(key.kind, k, clone(v), ctx);
    }
    for (const field of spec.inputs) {
      if (props[field] === undefined) {
        const d = defaultFor(key.kind, field);
        if (d !== undefined) {
          props[field] = d;
        }
      }
    }
    for (const field of ["network", "subnetwork"]) this.networks.requireSameProjectOrShared(key, field, props[field]);
    rulesOf(key.kind).materialize?.(this.env, key, props, prev);

    const out: JsonObject = {
      ...props,
      name: key.name,
      project: key.project,
    };
    if (spec.scope === "region") {
      out.region = key.scope;
    } else if (spec.scope === "zone") {
      out.zone = key.scope;
    }
    if (spec.labels) {
      out.labelFingerprint = fingerprintOf(props.labels ?? {});
    }
    out.id = prev?.properties.id ?? this.store.newId();
    out.creationTimestamp = prev?.properties.creationTimestamp ?? this.now().toISOString();
    out.selfLink = this.selfLink(key);
    out.fingerprint = resourceFingerprint(out);
    return out;
  }
}
