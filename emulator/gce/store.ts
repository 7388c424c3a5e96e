// The emulator's generic resource store: one map per kind of the resources GCE holds, keyed by
// project, scope and name, with the resource ids GCE assigns and the history of every change.
// It knows no kind's rules: state.ts runs those (rules/) around each write.

import { createHash } from "node:crypto";

import { canonical, clone, type Json, type JsonObject } from "./json";
import type { GceKind } from "./kinds";

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

/** One change of a resource, through any face (provider, REST, out of band, seeding). */
export interface HistoryEntry {
  /** When it happened, in ms since the epoch (the emulator's clock). */
  readonly at: number;
  readonly kind: GceKind;
  readonly scope: string;
  readonly name: string;
  readonly op: "create" | "update" | "delete";
}

export function keyString(k: ResourceKey): string {
  return `${k.kind}/${k.project}/${k.scope}/${k.name}`;
}

export function sameKey(a: ResourceKey, b: ResourceKey): boolean {
  return keyString(a) === keyString(b);
}

export function compareKeys(a: ResourceKey, b: ResourceKey): number {
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

export function fingerprintOf(v: Json): string {
  return createHash("sha256").update(canonical(v)).digest().subarray(0, 8).toString("base64");
}

/** A resource's fingerprint: over its properties except the per-run ones (id, timestamp, self link). */
export function resourceFingerprint(props: JsonObject): string {
  return fingerprintOf({ ...props, fingerprint: null, id: null, creationTimestamp: null, selfLink: null });
}

/** The key of a stored resource, without its properties. */
export function keyOfResource(r: ResourceKey): ResourceKey {
  return { kind: r.kind, project: r.project, scope: r.scope, name: r.name };
}

export class ResourceStore {
  private readonly byKind = new Map<GceKind, Map<string, StoredResource>>();
  private events: HistoryEntry[] = [];
  private nextId = 1n;

  constructor(private readonly now: () => Date) {}

  private kindMap(kind: GceKind): Map<string, StoredResource> {
    let map = this.byKind.get(kind);
    if (map === undefined) {
      map = new Map();
      this.byKind.set(kind, map);
    }
    return map;
  }

  has(key: ResourceKey): boolean {
    return this.byKind.get(key.kind)?.has(keyString(key)) ?? false;
  }

  /** The stored resource itself (not a copy): for reads inside the emulator that change nothing. */
  peek(key: ResourceKey): StoredResource | undefined {
    return this.byKind.get(key.kind)?.get(keyString(key));
  }

  /** A copy of the stored resource: callers may change it freely. */
  find(key: ResourceKey): StoredResource | undefined {
    const r = this.peek(key);
    return r === undefined ? undefined : { ...r, properties: clone(r.properties) };
  }

  /** The stored resources of one kind (not copies), in insertion order. */
  ofKind(kind: GceKind): StoredResource[] {
    return [...(this.byKind.get(kind)?.values() ?? [])];
  }

  /** Every stored resource (not copies). */
  all(): StoredResource[] {
    return [...this.byKind.values()].flatMap((map) => [...map.values()]);
  }

  /** Copies, sorted by kind, project, scope, name. */
  list(filter: { kind?: GceKind; project?: string; scope?: string } = {}): StoredResource[] {
    return (filter.kind === undefined ? this.all() : this.ofKind(filter.kind))
      .filter(
        (r) =>
          (filter.project === undefined || r.project === filter.project) &&
          (filter.scope === undefined || r.scope === filter.scope),
      )
      .sort(compareKeys)
      .map((r) => ({ ...r, properties: clone(r.properties) }));
  }

  /** Stores the resource's properties; `op` records the change in the history (none: GCE's own change). */
  put(key: ResourceKey, properties: JsonObject, op?: HistoryEntry["op"]): void {
    this.kindMap(key.kind).set(keyString(key), { ...key, properties });
    if (op !== undefined) {
      this.record(key, op);
    }
  }

  /** Removes the resource and records the delete; returns what was stored. */
  remove(key: ResourceKey): StoredResource | undefined {
    const map = this.byKind.get(key.kind);
    const gone = map?.get(keyString(key));
    map?.delete(keyString(key));
    this.record(key, "delete");
    return gone;
  }

  private record(key: ResourceKey, op: HistoryEntry["op"]): void {
    this.events.push({ at: this.now().getTime(), kind: key.kind, scope: key.scope, name: key.name, op });
  }

  /** Every create, update and delete so far (any face), oldest first. */
  history(): HistoryEntry[] {
    return this.events.map((e) => ({ ...e }));
  }

  clearHistory(): void {
    this.events = [];
  }

  /** A new resource id, unique for the emulator's life (a reset does not start them over). */
  newId(): string {
    const id = 1_000_000_000_000_000_000n + this.nextId;
    this.nextId += 1n;
    return id.toString();
  }

  /** Removes every resource and the history. */
  clear(): void {
    this.byKind.clear();
    this.events = [];
  }
}
