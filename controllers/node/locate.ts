// Finds the GCE instance behind a Node while keeping Compute calls per Node far below one.
//
// A wave of reconciles (startup, a burst of new Nodes, the periodic address refresh) shares ONE
// aggregated list: the first lookup starts it, concurrent lookups await the same promise, and the
// result is reused for `ttlMs`. Absence from a list is never treated as "gone": a name missing
// from a snapshot taken before the lookup was asked for triggers one fresh list (shared too), and
// a providerID missing from the snapshot falls back to instances.get. Deletion decisions use
// confirmGone(), which always asks instances.get in the providerID's own zone.

import type { ComputeApi, Instance } from "../../gce";
import type { InstanceLookup, ProviderID } from "./decide";

export interface InstanceLocatorOptions {
  readonly project: string;
  readonly region: string;
  /** Zones to search by name. Default: the region's zones from regions.get (fetched once). */
  readonly zones?: readonly string[];
  /** How long one aggregated list answers lookups. Default 10 s. */
  readonly ttlMs?: number;
  readonly now?: () => number;
  readonly signal?: AbortSignal;
}

interface Snapshot {
  /** Sequence number of the fetch; a lookup accepts "absent" only from a fetch started after it. */
  readonly seq: number;
  readonly fetchedAt: number;
  readonly byName: ReadonlyMap<string, readonly Instance[]>;
  readonly zones: ReadonlySet<string>;
}

export class InstanceLocator {
  private readonly compute: ComputeApi;
  private readonly project: string;
  private readonly region: string;
  private readonly ttlMs: number;
  private readonly now: () => number;
  private readonly signal: AbortSignal | undefined;
  private zones: readonly string[] | undefined;
  private zonesPromise: Promise<readonly string[]> | undefined;
  private snapshot: Snapshot | undefined;
  private inflight: { seq: number; promise: Promise<Snapshot> } | undefined;
  private nextSeq = 1;

  constructor(compute: ComputeApi, opts: InstanceLocatorOptions) {
    this.compute = compute;
    this.project = opts.project;
    this.region = opts.region;
    this.zones = opts.zones;
    this.ttlMs = opts.ttlMs ?? 10_000;
    this.now = opts.now ?? Date.now;
    this.signal = opts.signal;
  }

  /** Drops the cached list so the next lookup sees fresh data (tests, and after a long pause). */
  invalidate(): void {
    this.snapshot = undefined;
  }

  /** Instance by name in the region's zones (Nodes whose kubelet did not set a providerID). */
  async byName(name: string): Promise<InstanceLookup> {
    const askedSeq = this.nextSeq;
    for (;;) {
      const snap = this.snapshot;
      if (snap !== undefined) {
        const hits = snap.byName.get(name) ?? [];
        const fresh = this.now() - snap.fetchedAt < this.ttlMs;
        if (hits.length > 0 && fresh) {
          return this.fromHits(name, hits, snap);
        }
        if (snap.seq >= askedSeq) {
          // Listed after we were asked, so a miss is a real miss (in these zones).
          return this.fromHits(name, hits, snap);
        }
      }
      const fetched = await this.awaitSnapshot();
      if (fetched.kind === "error" && fetched.seq >= askedSeq) {
        return { kind: "error", error: fetched.error };
      }
    }
  }

  /**
   * Instance by providerID for initialization and address refresh: served from the shared list
   * when the instance is in it, otherwise one instances.get.
   */
  async byProviderID(pid: ProviderID): Promise<InstanceLookup> {
    if (pid.project === this.project) {
      let snap = this.freshSnapshot();
      if (snap === undefined) {
        const fetched = await this.awaitSnapshot();
        snap = fetched.kind === "ok" ? fetched.snapshot : undefined;
      }
      if (snap !== undefined && snap.zones.has(pid.zone)) {
        const hit = (snap.byName.get(pid.name) ?? []).find((i) => i.zone === pid.zone);
        if (hit !== undefined) {
          return { kind: "found", instance: hit };
        }
      }
    }
    return this.confirmGone(pid);
  }

  /**
   * The definitive lookup used before deleting a Node: instances.get on the providerID's own
   * project and zone. Only its 404 yields `notFound` with scope `instance`.
   */
  async confirmGone(pid: ProviderID): Promise<InstanceLookup> {
    try {
      const res = await this.compute.getInstance(pid.project, pid.zone, pid.name, this.callOpts());
      if (res.kind === "found") {
        return { kind: "found", instance: res.instance };
      }
      return { kind: "notFound", scope: "instance", project: res.project, zone: res.zone, name: res.name };
    } catch (err) {
      return { kind: "error", error: asError(err) };
    }
  }

  /**
   * A cached instance for `pid` if the current snapshot is fresh and has it; no Compute call.
   * Lets the lifecycle check skip instances.get for NotReady Nodes whose instance is listed.
   */
  cachedByProviderID(pid: ProviderID): Instance | undefined {
    const snap = this.freshSnapshot();
    if (snap === undefined || pid.project !== this.project) {
      return undefined;
    }
    return (snap.byName.get(pid.name) ?? []).find((i) => i.zone === pid.zone);
  }

  private freshSnapshot(): Snapshot | undefined {
    const snap = this.snapshot;
    return snap !== undefined && this.now() - snap.fetchedAt < this.ttlMs ? snap : undefined;
  }

  private fromHits(name: string, hits: readonly Instance[], snap: Snapshot): InstanceLookup {
    const [first, ...rest] = hits;
    if (first === undefined) {
      return { kind: "notFound", scope: "region", name, zones: [...snap.zones].sort() };
    }
    if (rest.length > 0) {
      // Instance names are unique per zone only; guessing would label the Node wrongly.
      return { kind: "ambiguous", name, zones: hits.map((i) => i.zone).sort() };
    }
    return { kind: "found", instance: first };
  }

  /** Joins the fetch in flight, or starts one. Never rejects. */
  private async awaitSnapshot(): Promise<
    { kind: "ok"; snapshot: Snapshot } | { kind: "error"; seq: number; error: Error }
  > {
    let inflight = this.inflight;
    if (inflight === undefined) {
      const seq = this.nextSeq++;
      const promise = this.fetch(seq);
      inflight = { seq, promise };
      this.inflight = inflight;
      const clear = (): void => {
        if (this.inflight === inflight) {
          this.inflight = undefined;
        }
      };
      promise.then(clear, clear);
    }
    try {
      return { kind: "ok", snapshot: await inflight.promise };
    } catch (err) {
      return { kind: "error", seq: inflight.seq, error: asError(err) };
    }
  }

  private async fetch(seq: number): Promise<Snapshot> {
    const zones = new Set(await this.regionZones());
    const instances = await this.compute.aggregatedListInstances(this.project, undefined, this.callOpts());
    const byName = new Map<string, Instance[]>();
    for (const inst of instances) {
      if (!zones.has(inst.zone)) {
        continue;
      }
      const list = byName.get(inst.name);
      if (list === undefined) {
        byName.set(inst.name, [inst]);
      } else {
        list.push(inst);
      }
    }
    const snapshot: Snapshot = { seq, fetchedAt: this.now(), byName, zones };
    // A slow older fetch must not replace a newer one.
    if (this.snapshot === undefined || this.snapshot.seq < seq) {
      this.snapshot = snapshot;
    }
    return snapshot;
  }

  private async regionZones(): Promise<readonly string[]> {
    if (this.zones !== undefined) {
      return this.zones;
    }
    if (this.zonesPromise === undefined) {
      const p = this.compute.getRegion(this.project, this.region, this.callOpts()).then((r) => {
        this.zones = r.zones;
        return r.zones;
      });
      this.zonesPromise = p;
      // A failed regions.get is retried by the next fetch rather than cached forever.
      p.catch(() => {
        if (this.zonesPromise === p) {
          this.zonesPromise = undefined;
        }
      });
    }
    return this.zonesPromise;
  }

  private callOpts(): { signal?: AbortSignal } {
    return this.signal === undefined ? {} : { signal: this.signal };
  }
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new Error(String(err));
}
