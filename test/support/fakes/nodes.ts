// In-memory stand-ins for the apiserver's Node API and the daemon's Node cache (a NodeSource, as
// ClusterWatcher is one), shared by the unit tests and the benchmark (bench/nodes.ts) when no real
// apiserver is around. They keep the semantics the controller relies on: resourceVersion bumps on
// every write, 409 on a stale update or a failed delete precondition, status written only through
// the status methods, Nodes trimmed by the watcher's own trimWatchedNode, and watch events
// delivered asynchronously (as from a real watch) to every source.

import type { CoreV1Event, V1Node, V1NodeAddress, V1NodeCondition } from "@kubernetes/client-node";

import type { CallOptions, ComputeApi, GetInstanceResult, Instance, Region } from "../../../gce";
import { applyNodeMergePatch, type NodeMergePatch } from "../../../controllers/node/decide";
import { KubeConflictError, type NodeApi } from "../../../controllers/node/kube";
import type { NodeEvent, NodeSource } from "../../../watcher/informers";
import { trimNode, trimWatchedNode, type WatchedNode } from "../../../watcher/trim";

type Verb = "add" | "update" | "delete";

export class MemoryNodeApi implements NodeApi {
  private readonly nodes = new Map<string, V1Node>();
  private rv = 1;
  private readonly sources = new Set<MemoryNodeSource>();
  readonly events: CoreV1Event[] = [];
  /** Counts of calls by method, for assertions and the benchmark. */
  readonly calls = new Map<string, number>();
  /** Makes the next N patchNode calls fail with a conflict (tests the retry). */
  conflictsToInject = 0;

  /** Creates or replaces a Node as a kubelet would (no conflict check). */
  put(node: V1Node): V1Node {
    const name = node.metadata?.name ?? "";
    const existing = this.nodes.get(name);
    const stored = this.store({
      ...clone(node),
      metadata: { ...clone(node.metadata ?? {}), uid: existing?.metadata?.uid ?? node.metadata?.uid ?? `uid-${name}` },
    });
    this.emit(existing === undefined ? "add" : "update", stored);
    return clone(stored);
  }

  remove(name: string): void {
    const existing = this.nodes.get(name);
    if (existing !== undefined) {
      this.nodes.delete(name);
      this.emit("delete", existing);
    }
  }

  peek(name: string): V1Node | undefined {
    const n = this.nodes.get(name);
    return n === undefined ? undefined : clone(n);
  }

  list(): V1Node[] {
    return [...this.nodes.values()].map(clone);
  }

  /** A Node cache filled from what the API holds now and kept current until close(). */
  source(): MemoryNodeSource {
    return new MemoryNodeSource(this);
  }

  async getNode(name: string): Promise<V1Node | undefined> {
    this.count("getNode");
    return this.peek(name);
  }

  async patchNode(name: string, resourceVersion: string, patch: NodeMergePatch): Promise<V1Node> {
    this.count("patchNode");
    const existing = this.nodes.get(name);
    if (existing === undefined) {
      throw Object.assign(new Error(`nodes "${name}" not found`), { code: 404 });
    }
    if (this.conflictsToInject > 0) {
      this.conflictsToInject--;
      throw new KubeConflictError(`patch node ${name}: conflict (injected)`);
    }
    if (resourceVersion !== existing.metadata?.resourceVersion) {
      throw new KubeConflictError(`patch node ${name}: conflict`);
    }
    const stored = this.store(applyNodeMergePatch(clone(existing), patch));
    this.emit("update", stored);
    return clone(stored);
  }

  async setNodeAddresses(name: string, addresses: readonly V1NodeAddress[]): Promise<V1Node> {
    this.count("setNodeAddresses");
    const existing = this.mustGet(name);
    const stored = this.store({
      ...existing,
      status: { ...(existing.status ?? {}), addresses: addresses.map((a) => ({ ...a })) },
    });
    this.emit("update", stored);
    return clone(stored);
  }

  async setNodeCondition(name: string, condition: V1NodeCondition): Promise<void> {
    this.count("setNodeCondition");
    const existing = this.mustGet(name);
    const others = (existing.status?.conditions ?? []).filter((c) => c.type !== condition.type);
    const stored = this.store({
      ...existing,
      status: { ...(existing.status ?? {}), conditions: [...others, { ...condition }] },
    });
    this.emit("update", stored);
  }

  async deleteNode(
    name: string,
    pre: { uid: string; resourceVersion: string },
  ): Promise<"deleted" | "gone" | "conflict"> {
    this.count("deleteNode");
    const existing = this.nodes.get(name);
    if (existing === undefined) {
      return "gone";
    }
    if (existing.metadata?.uid !== pre.uid || existing.metadata?.resourceVersion !== pre.resourceVersion) {
      return "conflict";
    }
    this.remove(name);
    return "deleted";
  }

  async createEvent(_namespace: string, event: CoreV1Event): Promise<void> {
    this.count("createEvent");
    this.events.push(clone(event));
  }

  async patchEvent(
    _namespace: string,
    name: string,
    patch: { count: number; lastTimestamp: Date; message: string },
  ): Promise<"ok" | "gone"> {
    this.count("patchEvent");
    const ev = this.events.find((e) => e.metadata.name === name);
    if (ev === undefined) {
      return "gone";
    }
    ev.count = patch.count;
    ev.lastTimestamp = patch.lastTimestamp;
    ev.message = patch.message;
    return "ok";
  }

  /** @internal */
  attach(source: MemoryNodeSource): void {
    this.sources.add(source);
  }

  /** @internal */
  detach(source: MemoryNodeSource): void {
    this.sources.delete(source);
  }

  private mustGet(name: string): V1Node {
    const n = this.nodes.get(name);
    if (n === undefined) {
      throw Object.assign(new Error(`nodes "${name}" not found`), { code: 404 });
    }
    return clone(n);
  }

  private store(node: V1Node): V1Node {
    const name = node.metadata?.name ?? "";
    const stored: V1Node = {
      ...node,
      metadata: { ...(node.metadata ?? {}), name, resourceVersion: String(++this.rv) },
    };
    this.nodes.set(name, stored);
    return stored;
  }

  private emit(verb: Verb, node: V1Node): void {
    for (const source of this.sources) {
      source.deliver(verb, clone(node));
    }
  }

  private count(method: string): void {
    this.calls.set(method, (this.calls.get(method) ?? 0) + 1);
  }
}

/** The daemon's Node cache in memory: what ClusterWatcher's Node subscription offers, trimmed alike. */
export class MemoryNodeSource implements NodeSource {
  private readonly api: MemoryNodeApi;
  private readonly cache = new Map<string, WatchedNode>();
  private readonly listeners = new Set<(event: NodeEvent) => void>();
  private open = true;

  constructor(api: MemoryNodeApi) {
    this.api = api;
    api.attach(this);
    for (const node of api.list()) {
      this.apply("add", node);
    }
  }

  subscribeNodes(listener: (event: NodeEvent) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  watchedNode(name: string): WatchedNode | undefined {
    return this.cache.get(name);
  }

  watchedNodes(): WatchedNode[] {
    return [...this.cache.values()];
  }

  close(): void {
    this.open = false;
    this.api.detach(this);
  }

  /** @internal Watch events arrive on a later tick, as they would over the network. */
  deliver(verb: Verb, node: V1Node): void {
    setImmediate(() => {
      if (this.open) {
        this.apply(verb, node);
      }
    });
  }

  private apply(verb: Verb, node: V1Node): void {
    // As ClusterWatcher: the labels are the model's NodeInfo's.
    const watched = trimWatchedNode(node, trimNode(node));
    if (verb === "delete") {
      this.cache.delete(watched.name);
    } else {
      this.cache.set(watched.name, watched);
    }
    const kind = verb === "add" ? "added" : verb === "update" ? "updated" : "deleted";
    for (const listener of this.listeners) {
      listener({ kind, node: watched });
    }
  }
}

/** An in-memory ComputeApi that records its calls (get, list, aggregatedList, region). */
export class MemoryCompute implements ComputeApi {
  readonly instances: Instance[] = [];
  readonly calls: string[] = [];
  /** Errors to throw, by call name (consumed one per call). */
  readonly failures = new Map<string, Error[]>();
  /** Delay of aggregatedList, to let lookups pile up behind one call. */
  listDelayMs = 5;

  add(project: string, zone: string, name: string, ip = "10.0.0.1"): Instance {
    const inst: Instance = {
      name,
      project,
      zone,
      machineType: "e2-medium",
      networkInterfaces: [{ networkIP: ip, accessConfigs: [], ipv6AccessConfigs: [] }],
    };
    this.instances.push(inst);
    return inst;
  }

  remove(zone: string, name: string): void {
    const i = this.instances.findIndex((x) => x.zone === zone && x.name === name);
    if (i >= 0) {
      this.instances.splice(i, 1);
    }
  }

  count(call: string): number {
    return this.calls.filter((c) => c === call).length;
  }

  private maybeFail(call: string): void {
    this.calls.push(call);
    const errs = this.failures.get(call);
    const e = errs?.shift();
    if (e !== undefined) {
      throw e;
    }
  }

  async getInstance(project: string, zone: string, name: string, _opts?: CallOptions): Promise<GetInstanceResult> {
    this.maybeFail("get");
    const hit = this.instances.find((i) => i.project === project && i.zone === zone && i.name === name);
    return hit === undefined ? { kind: "notFound", project, zone, name } : { kind: "found", instance: hit };
  }

  async listInstances(project: string, zone: string, _opts?: CallOptions): Promise<Instance[]> {
    this.maybeFail("list");
    return this.instances.filter((i) => i.project === project && i.zone === zone);
  }

  async aggregatedListInstances(project: string, _filter?: string, _opts?: CallOptions): Promise<Instance[]> {
    this.maybeFail("aggregatedList");
    const snapshot = this.instances.filter((i) => i.project === project);
    await new Promise((r) => setTimeout(r, this.listDelayMs));
    return snapshot;
  }

  async getRegion(_project: string, region: string, _opts?: CallOptions): Promise<Region> {
    this.maybeFail("region");
    return { name: region, zones: ["a", "b", "c"].map((z) => `${region}-${z}`) };
  }
}

function clone<T>(v: T): T {
  return structuredClone(v);
}
