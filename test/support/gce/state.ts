// The GCE emulator's one in-memory model: the Compute resources dccm manages (keyed by kind,
// project, scope and name), seeded instances, IP allocation, GCE's rules (names, conflicts,
// references that must exist, resources in use that cannot be deleted, immutable fields) and
// fault injection. The HTTP face (http.ts) and the Pulumi provider face (provider-api.ts,
// provider.ts) both work on this state.

import { createHash } from "node:crypto";
import * as net from "node:net";

import { canonical, clone, containsUnknown, deepEqual, isJsonObject, type Json, type JsonObject } from "./json";
import {
    defaultFor,
    forwardingRulePorts,
    type GceKind,
    healthCheckType,
    invalidNameMessage,
    kindOf,
    kindOfPath,
    NAME_RE,
    normalizeRef,
    parseResourcePath,
    type RefContext,
    type RefTarget,
    resourcePath,
    scopePath,
    specOf,
    validateInputs,
} from "./kinds";

export interface ResourceKey {
    readonly kind: GceKind;
    readonly project: string;
    /** region name for regional kinds, zone name for zonal kinds, "global" otherwise */
    readonly scope: string;
    readonly name: string;
}

export interface StoredResource extends ResourceKey {
    /** Pulumi-named properties for managed kinds; Compute REST fields for instances. */
    readonly properties: JsonObject;
}

const REASONS: Readonly<Record<number, string>> = {
    400: "invalid",
    401: "required",
    403: "forbidden",
    404: "notFound",
    409: "alreadyExists",
    412: "conditionNotMet",
    429: "rateLimitExceeded",
    500: "backendError",
    503: "backendError",
};

/** An error as the Compute API reports it: HTTP status, reason, message. */
export class GceError extends Error {
    readonly status: number;
    readonly reason: string;

    constructor(status: number, message: string, reason?: string, options?: ErrorOptions) {
        super(message, options);
        this.name = "GceError";
        this.status = status;
        this.reason = reason ?? REASONS[status] ?? "backendError";
    }

    /** The JSON body Google returns: `{"error":{"code","message","errors":[{"reason"}]}}`. */
    toBody(): JsonObject {
        return {
            error: {
                code: this.status,
                message: this.message,
                errors: [{ reason: this.reason }],
            },
        };
    }
}

export function notFound(path: string): GceError {
    return new GceError(404, `The resource '${path}' was not found`, "notFound");
}

export type FaultOperation = "create" | "update" | "delete" | "read" | "get";

export interface FaultSpec {
    /** A GceKind ("forwardingRules") or a Pulumi type token ("gcp:compute/forwardingRule:ForwardingRule"). */
    readonly kind: string;
    /** Only operations on this resource name; any name when absent. */
    readonly name?: string;
    readonly operation: FaultOperation;
    readonly status: number;
    readonly message: string;
    /** Defaults from the status (400 invalid, 404 notFound, 409 alreadyExists, 429 rateLimitExceeded, 5xx backendError). */
    readonly reason?: string;
    /** How many matching operations fail. Default 1. */
    readonly count?: number;
}

interface ActiveFault {
    readonly kind: GceKind;
    readonly name: string | undefined;
    readonly operation: FaultOperation;
    readonly status: number;
    readonly message: string;
    readonly reason: string | undefined;
    remaining: number;
}

export interface NetworkInterfaceSpec {
    readonly networkIP?: string;
    readonly ipv6Address?: string;
    readonly network?: string;
    /** One entry per external IP; an entry without natIP gets an ephemeral one. */
    readonly accessConfigs?: ReadonlyArray<{ readonly natIP?: string }>;
}

export interface InstanceSpec {
    /** Short name ("e2-standard-2") or URL. Default e2-standard-2. */
    readonly machineType?: string;
    /** Default RUNNING. */
    readonly status?: string;
    /** Default: one interface with an allocated internal IP and no external IP. */
    readonly networkInterfaces?: readonly NetworkInterfaceSpec[];
    readonly tags?: readonly string[];
    readonly labels?: Readonly<Record<string, string>>;
}

export interface GceStateOptions {
    /** `http://127.0.0.1:PORT`: self links are `${endpoint}/compute/v1/projects/...`. */
    readonly endpoint: string;
    readonly project: string;
    readonly region: string;
    readonly zones: readonly string[];
    /** Clock for creationTimestamp. Default: the real clock. */
    readonly now?: () => Date;
}

/** A region's name from one of its zones' names (`us-central1-a` → `us-central1`). */
export function regionOfZone(zone: string): string {
    return zone.replace(/-[a-z]$/, "");
}

function ipToInt(ip: string): number {
    return ip.split(".").reduce((acc, part) => acc * 256 + Number(part), 0);
}

function intToIp(n: number): string {
    return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join(".");
}

/** Counts up through its ranges, skipping addresses in use; wraps around once exhausted. */
class IpPool {
    private readonly ranges: ReadonlyArray<readonly [number, number]>;
    private readonly size: number;
    private cursor = 0;

    constructor(
        readonly label: string,
        ranges: ReadonlyArray<readonly [string, string]>,
    ) {
        this.ranges = ranges.map(([a, b]) => [ipToInt(a), ipToInt(b)] as const);
        this.size = this.ranges.reduce((acc, [a, b]) => acc + b - a + 1, 0);
    }

    private at(index: number): string {
        let i = index;
        for (const [a, b] of this.ranges) {
            const n = b - a + 1;
            if (i < n) {
                return intToIp(a + i);
            }
            i -= n;
        }
        throw new Error(`IpPool ${this.label}: index ${index} out of range`);
    }

    allocate(inUse: ReadonlySet<string>): string {
        for (let step = 0; step < this.size; step++) {
            const index = (this.cursor + step) % this.size;
            const ip = this.at(index);
            if (!inUse.has(ip)) {
                this.cursor = index + 1;
                return ip;
            }
        }
        throw new GceError(400, `IP space of the ${this.label} pool is exhausted`, "ipSpaceExhausted");
    }

    reset(): void {
        this.cursor = 0;
    }
}

function keyString(k: ResourceKey): string {
    return `${k.kind}/${k.project}/${k.scope}/${k.name}`;
}

function compareKeys(a: ResourceKey, b: ResourceKey): number {
    for (const f of ["kind", "project", "scope", "name"] as const) {
        if (a[f] < b[f]) {
            return -1;
        }
        if (a[f] > b[f]) {
            return 1;
        }
    }
    return 0;
}

function asString(v: Json | undefined): string | undefined {
    return typeof v === "string" ? v : undefined;
}

function fingerprintOf(v: Json): string {
    return createHash("sha256").update(canonical(v)).digest().subarray(0, 8).toString("base64");
}

/**
 * Rewrites input shorthands that depend on a sibling input into a standalone form: a route's
 * bare `nextHopInstance` name plus `nextHopInstanceZone` becomes `zone/name`.
 */
export function expandShorthands(kind: GceKind, props: JsonObject): JsonObject {
    const hop = props.nextHopInstance;
    const zone = props.nextHopInstanceZone;
    if (kind === "routes" && typeof hop === "string" && typeof zone === "string" && /^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(hop)) {
        return { ...props, nextHopInstance: `${zone}/${hop}` };
    }
    return props;
}

/** A resource's fingerprint: over its properties except the per-run ones (id, timestamp, self link). */
function resourceFingerprint(props: JsonObject): string {
    return fingerprintOf({ ...props, fingerprint: null, id: null, creationTimestamp: null, selfLink: null });
}

/** Keys of stored properties that are computed by the emulator, never inputs. */
const COMPUTED = new Set(["id", "selfLink", "creationTimestamp", "fingerprint", "labelFingerprint", "size", "type"]);

export class GceState {
    readonly endpoint: string;
    readonly project: string;
    readonly region: string;
    readonly zones: readonly string[];
    private readonly now: () => Date;
    private readonly resources = new Map<string, StoredResource>();
    private faults: ActiveFault[] = [];
    private nextId = 1n;
    private readonly externalPool = new IpPool("EXTERNAL", [
        ["203.0.113.1", "203.0.113.254"],
        ["198.51.100.1", "198.51.100.254"],
    ]);
    private readonly internalPool = new IpPool("INTERNAL", [["10.128.0.2", "10.128.15.254"]]);

    constructor(opts: GceStateOptions) {
        this.endpoint = opts.endpoint.replace(/\/+$/, "");
        this.project = opts.project;
        this.region = opts.region;
        this.zones = [...opts.zones];
        this.now = opts.now ?? (() => new Date());
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
        const r = this.resources.get(keyString(key));
        return r === undefined ? undefined : { ...r, properties: clone(r.properties) };
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
        return [...this.resources.values()]
            .filter(
                (r) =>
                    (filter.kind === undefined || r.kind === filter.kind) &&
                    (filter.project === undefined || r.project === filter.project) &&
                    (filter.scope === undefined || r.scope === filter.scope),
            )
            .sort(compareKeys)
            .map((r) => ({ ...r, properties: clone(r.properties) }));
    }

    // ---- faults ------------------------------------------------------------------------------

    injectFault(fault: FaultSpec): void {
        const count = fault.count ?? 1;
        if (!Number.isInteger(count) || count < 1) {
            throw new Error(`injectFault: count must be a positive integer, got ${count}`);
        }
        if (!Number.isInteger(fault.status) || fault.status < 400 || fault.status > 599) {
            throw new Error(`injectFault: status must be an HTTP error status, got ${fault.status}`);
        }
        this.faults.push({
            kind: kindOf(fault.kind),
            name: fault.name,
            operation: fault.operation,
            status: fault.status,
            message: fault.message,
            reason: fault.reason,
            remaining: count,
        });
    }

    /** Throws the injected error if a fault matches this operation (and uses it up). */
    checkFault(kind: GceKind, name: string | undefined, operation: FaultOperation): void {
        const fault = this.faults.find(
            (f) => f.kind === kind && f.operation === operation && (f.name === undefined || f.name === name),
        );
        if (fault === undefined) {
            return;
        }
        fault.remaining -= 1;
        if (fault.remaining <= 0) {
            this.faults = this.faults.filter((f) => f !== fault);
        }
        throw new GceError(fault.status, fault.message, fault.reason);
    }

    clearFaults(): void {
        this.faults = [];
    }

    // ---- writes ------------------------------------------------------------------------------

    /** GCE insert. `props` are Pulumi-named inputs including name/project/region/zone. */
    create(kindOrToken: string, props: JsonObject): StoredResource {
        const key = this.keyOf(kindOrToken, props);
        if (!NAME_RE.test(key.name)) {
            throw new GceError(400, invalidNameMessage(key.name), "invalid");
        }
        this.validate(key.kind, props);
        this.checkFault(key.kind, key.name, "create");
        if (this.resources.has(keyString(key))) {
            throw new GceError(409, `The resource '${this.path(key)}' already exists`, "alreadyExists");
        }
        const properties = this.materialize(key, props, undefined);
        const stored: StoredResource = { ...key, properties };
        this.resources.set(keyString(key), stored);
        return this.get(key);
    }

    /**
     * GCE update/patch/set* of a managed resource to the given complete inputs. Immutable fields
     * must be unchanged (400 otherwise).
     */
    update(key: ResourceKey, props: JsonObject): StoredResource {
        const prev = this.get(key);
        this.validate(key.kind, props);
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
        const properties = this.materialize(key, props, prev);
        this.resources.set(keyString(key), { ...key, properties });
        return this.get(key);
    }

    /** GCE delete: refuses (400 resourceInUseByAnotherResource) while another resource uses it. */
    delete(key: ResourceKey): void {
        this.get(key);
        this.checkFault(key.kind, key.name, "delete");
        const user = this.usersOf(key)[0];
        if (user !== undefined) {
            throw new GceError(
                400,
                `The ${specOf(key.kind).resourceWord} resource '${this.path(key)}' is already being used by '${this.path(user)}'`,
                "resourceInUseByAnotherResource",
            );
        }
        this.resources.delete(keyString(key));
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
        this.resources.set(keyString(key), { ...key, properties: props });
        return this.get(key);
    }

    /** Out-of-band delete: bypasses in-use rules and faults. Throws 404 when absent. */
    deleteOutOfBand(key: ResourceKey): void {
        this.get(key);
        this.resources.delete(keyString(key));
    }

    /** Removes every resource, fault and allocation. */
    reset(): void {
        this.resources.clear();
        this.faults = [];
        this.externalPool.reset();
        this.internalPool.reset();
    }

    /** Creates or replaces an instance (test seeding). */
    putInstance(project: string, zone: string, name: string, spec: InstanceSpec = {}): StoredResource {
        if (!NAME_RE.test(name)) {
            throw new GceError(400, invalidNameMessage(name), "invalid");
        }
        const key: ResourceKey = { kind: "instances", project, scope: zone, name };
        const prev = this.find(key);
        const ctx = this.refContext(key);
        const machineType = spec.machineType ?? "e2-standard-2";
        const inUse = this.ipsInUse(prev === undefined ? undefined : key);
        const nics: Json[] = (spec.networkInterfaces ?? [{}]).map((nic, i) => {
            const networkIP = nic.networkIP ?? this.internalPool.allocate(inUse);
            inUse.add(networkIP);
            const out: JsonObject = {
                name: `nic${i}`,
                network: normalizeRef(nic.network ?? "default", { collection: "networks", scope: "global" }, ctx),
                networkIP,
            };
            if (nic.ipv6Address !== undefined) {
                out.ipv6Address = nic.ipv6Address;
            }
            out.accessConfigs = (nic.accessConfigs ?? []).map((ac) => {
                const natIP = ac.natIP ?? this.externalPool.allocate(inUse);
                inUse.add(natIP);
                return { kind: "compute#accessConfig", type: "ONE_TO_ONE_NAT", name: "External NAT", natIP };
            });
            return out;
        });
        const tags: JsonObject = { fingerprint: fingerprintOf([...(spec.tags ?? [])]) };
        if (spec.tags !== undefined && spec.tags.length > 0) {
            tags.items = [...spec.tags];
        }
        const properties: JsonObject = {
            kind: "compute#instance",
            id: prev !== undefined ? (prev.properties.id ?? this.newId()) : this.newId(),
            creationTimestamp: prev?.properties.creationTimestamp ?? this.now().toISOString(),
            name,
            zone: this.scopeLink(project, "zone", zone),
            machineType: /^https?:\/\//.test(machineType)
                ? machineType
                : `${this.scopeLink(project, "zone", zone)}/machineTypes/${machineType}`,
            status: spec.status ?? "RUNNING",
            networkInterfaces: nics,
            tags,
            selfLink: this.selfLink(key),
        };
        if (spec.labels !== undefined) {
            properties.labels = { ...spec.labels };
        }
        this.resources.set(keyString(key), { ...key, properties });
        return this.get(key);
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
            const nv = news[field] ?? defaultFor(kind, field, news);
            if (nv === undefined) {
                return false;
            }
            return !this.sameValue(kind, field, nv, stored[field], ctx);
        });
        if (kind === "healthChecks") {
            const t = healthCheckType(news);
            if (t !== undefined && t !== stored.type) {
                changed.push("type");
            }
        }
        return changed;
    }

    /** Resources that use `key` (and so block its deletion). */
    usersOf(key: ResourceKey): ResourceKey[] {
        const link = this.selfLink(key);
        const target = this.resources.get(keyString(key));
        const users: ResourceKey[] = [];
        for (const r of this.resources.values()) {
            const p = r.properties;
            let uses = false;
            switch (key.kind) {
                case "addresses":
                    uses =
                        r.kind === "forwardingRules" &&
                        r.project === key.project &&
                        r.scope === key.scope &&
                        target !== undefined &&
                        p.ipAddress === target.properties.address;
                    break;
                case "backendServices":
                    uses = r.kind === "forwardingRules" && p.backendService === link;
                    break;
                case "targetPools":
                    uses = (r.kind === "forwardingRules" && p.target === link) || (r.kind === "targetPools" && p.backupPool === link);
                    break;
                case "healthChecks":
                case "httpHealthChecks":
                    uses = (r.kind === "backendServices" || r.kind === "targetPools") && p.healthChecks === link;
                    break;
                case "instanceGroups":
                    uses =
                        r.kind === "backendServices" &&
                        Array.isArray(p.backends) &&
                        p.backends.some((b) => isJsonObject(b) && b.group === link);
                    break;
                case "forwardingRules":
                    uses = r.kind === "routes" && p.nextHopIlb === link;
                    break;
                default:
                    uses = false;
            }
            if (uses) {
                users.push({ kind: r.kind, project: r.project, scope: r.scope, name: r.name });
            }
        }
        return users.sort(compareKeys);
    }

    /**
     * Whether a new input value means the same as a stored (normalized) one: references compared
     * as self links, sets unordered, a forwarding rule's address reference by its IP.
     */
    sameValue(kind: GceKind, field: string, newValue: Json, storedValue: Json | undefined, ctx: RefContext): boolean {
        if (containsUnknown(newValue)) {
            return false;
        }
        return deepEqual(this.comparable(kind, field, newValue, ctx, true), this.comparable(kind, field, storedValue ?? null, ctx, false));
    }

    private comparable(kind: GceKind, field: string, v: Json, ctx: RefContext, resolve: boolean): Json {
        const spec = specOf(kind);
        let out = this.normalizeField(kind, field, v, ctx);
        if (kind === "forwardingRules" && field === "ipAddress" && typeof out === "string" && resolve) {
            out = this.resolveAddress(out) ?? out;
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
        const spec = specOf(kind);
        if (kind === "forwardingRules" && field === "ipAddress") {
            if (typeof v !== "string" || net.isIP(v) !== 0 || containsUnknown(v)) {
                return v;
            }
            return normalizeRef(v, { collection: "addresses", scope: "region" }, ctx);
        }
        if (kind === "routes" && field === "nextHopIlb") {
            if (typeof v !== "string" || net.isIP(v) !== 0) {
                return v;
            }
            return normalizeRef(v, { collection: "forwardingRules", scope: "region" }, ctx);
        }
        if (kind === "routes" && field === "nextHopInstance") {
            return typeof v === "string" ? normalizeRef(v, { collection: "instances", scope: "zone" }, ctx) : v;
        }
        if (kind === "backendServices" && field === "backends" && Array.isArray(v)) {
            const group: RefTarget = { collection: "instanceGroups", scope: "zone" };
            return v.map((b) =>
                isJsonObject(b) && typeof b.group === "string" ? { ...b, group: normalizeRef(b.group, group, ctx) } : b,
            );
        }
        const ref = spec.refs[field];
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
        return asString(this.resources.get(keyString(key))?.properties.address);
    }

    private requireExists(link: Json | undefined): void {
        if (typeof link !== "string") {
            return;
        }
        const key = this.keyOfPath(link);
        if (key !== undefined && !this.resources.has(keyString(key))) {
            throw notFound(this.path(key));
        }
    }

    /**
     * Two forwarding rules of one project and region cannot share [IPAddress, IPProtocol] with
     * overlapping ports. Checked after the rule's own IP is known (see materialize).
     */
    private requireNoPortConflict(key: ResourceKey, props: JsonObject): void {
        const ip = typeof props.ipAddress === "string" && net.isIP(props.ipAddress) === 0 ? this.resolveAddress(props.ipAddress) : props.ipAddress;
        if (typeof ip !== "string") {
            return;
        }
        const protocol = props.ipProtocol ?? "TCP";
        const mine = forwardingRulePorts(props);
        for (const other of this.resources.values()) {
            if (other.kind !== "forwardingRules" || other.project !== key.project || other.scope !== key.scope || other.name === key.name) {
                continue;
            }
            const o = other.properties;
            if (o.ipAddress !== ip || (o.ipProtocol ?? "TCP") !== protocol) {
                continue;
            }
            const overlap = forwardingRulePorts(o).some(([a, b]) => mine.some(([c, d]) => a <= d && c <= b));
            if (overlap) {
                throw new GceError(
                    400,
                    `Invalid value for field 'resource.IPAddress': '${ip}'. Specified IP address is in-use and would result in a conflict: forwarding rule '${this.path(other)}' already uses ${String(protocol)} on overlapping ports.`,
                    "invalid",
                );
            }
        }
    }

    private ipsInUse(except?: ResourceKey): Set<string> {
        const used = new Set<string>();
        for (const r of this.resources.values()) {
            if (except !== undefined && keyString(r) === keyString(except)) {
                continue;
            }
            const p = r.properties;
            for (const v of [p.address, p.ipAddress]) {
                if (typeof v === "string") {
                    used.add(v);
                }
            }
            if (Array.isArray(p.networkInterfaces)) {
                for (const nic of p.networkInterfaces) {
                    if (!isJsonObject(nic)) {
                        continue;
                    }
                    if (typeof nic.networkIP === "string") {
                        used.add(nic.networkIP);
                    }
                    if (Array.isArray(nic.accessConfigs)) {
                        for (const ac of nic.accessConfigs) {
                            if (isJsonObject(ac) && typeof ac.natIP === "string") {
                                used.add(ac.natIP);
                            }
                        }
                    }
                }
            }
        }
        return used;
    }

    private newId(): string {
        const id = 1_000_000_000_000_000_000n + this.nextId;
        this.nextId += 1n;
        return id.toString();
    }

    /** Stored properties from inputs: normalized references, GCE defaults, computed fields. */
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
                const d = defaultFor(key.kind, field, props);
                if (d !== undefined) {
                    props[field] = d;
                }
            }
        }

        switch (key.kind) {
            case "addresses":
                if (props.address === undefined) {
                    props.address =
                        prev?.properties.address ??
                        (props.addressType === "INTERNAL" ? this.internalPool : this.externalPool).allocate(
                            this.ipsInUse(prev === undefined ? undefined : key),
                        );
                }
                break;
            case "forwardingRules": {
                this.requireExists(props.backendService);
                this.requireExists(props.target);
                this.requireNoPortConflict(key, props);
                const ip = props.ipAddress;
                if (typeof ip === "string" && net.isIP(ip) === 0) {
                    const resolved = this.resolveAddress(ip);
                    if (resolved === undefined) {
                        const addrKey = this.keyOfPath(ip);
                        throw notFound(addrKey === undefined ? ip : this.path(addrKey));
                    }
                    props.ipAddress = resolved;
                } else if (ip === undefined) {
                    const scheme = props.loadBalancingScheme;
                    const internal = typeof scheme === "string" && scheme.startsWith("INTERNAL");
                    props.ipAddress =
                        prev?.properties.ipAddress ??
                        (internal ? this.internalPool : this.externalPool).allocate(
                            this.ipsInUse(prev === undefined ? undefined : key),
                        );
                }
                break;
            }
            case "backendServices":
                this.requireExists(props.healthChecks);
                if (Array.isArray(props.backends)) {
                    for (const b of props.backends) {
                        if (isJsonObject(b)) {
                            this.requireExists(b.group);
                        }
                    }
                }
                break;
            case "targetPools":
                this.requireExists(props.healthChecks);
                this.requireExists(props.backupPool);
                if (Array.isArray(props.instances)) {
                    props.instances.forEach((i) => this.requireExists(i));
                }
                break;
            case "healthChecks": {
                const t = healthCheckType(props);
                if (t !== undefined) {
                    props.type = t;
                }
                break;
            }
            case "instanceGroups":
                if (Array.isArray(props.instances)) {
                    props.instances.forEach((i) => this.requireExists(i));
                }
                props.size = Array.isArray(props.instances) ? props.instances.length : 0;
                break;
            case "routes":
                this.requireExists(props.nextHopInstance);
                break;
            default:
                break;
        }

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
        out.id = prev?.properties.id ?? this.newId();
        out.creationTimestamp = prev?.properties.creationTimestamp ?? this.now().toISOString();
        out.selfLink = this.selfLink(key);
        out.fingerprint = resourceFingerprint(out);
        return out;
    }
}
