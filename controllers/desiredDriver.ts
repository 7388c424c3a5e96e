/**
 * Drives the DesiredCache: watch events and observations of GCE or of the applied stacks become a
 * new desired state, and the stacks whose hash it changed are enqueued (flagged `changed`). Owns
 * the cache, the debounce of watch events, what the Service stacks point at (their references and
 * the cluster firewall's recorded place, folded into the observation) and the memory of Service
 * stack names (ServiceStackKeys), which every Service the cache is filled from passes through.
 */
import { isServiceStack, parseServiceKey, type ClusterSnapshot, type ObservedCloud } from "../model";
import type { DesiredCache } from "../model/desiredCache";
import type { EnqueueFlags } from "../runtime/queue";
import { ServiceStackKeys } from "../stacks/stackKeys";
import { withReferences, type ClusterReferences } from "./references";

/** The watcher as the driver sees it (watcher/informers.ts ClusterWatcher). */
export interface DesiredSource {
  on(event: "change" | "resync" | "serviceMeta", listener: (key: string) => void): unknown;
  snapshot(): ClusterSnapshot;
}

export interface DesiredDriverDeps {
  cache: DesiredCache;
  /** Watch events within this many ms cost one recompute. */
  debounceMs: number;
  /** Into the stack queue (runtime/queue.ts KeyedQueue). */
  enqueue: (stack: string, flags?: EnqueueFlags) => void;
  /** Into the NEG controller's queue: a Service whose NEGs or endpoints changed (controllers/neg/). */
  enqueueNegs?: (serviceKey: string) => void;
}

export class DesiredDriver {
  /** Service stacks back to their Service, for names shortened to fit Pulumi's limit. */
  readonly stackKeys = new ServiceStackKeys();
  private source: DesiredSource | undefined;
  /** Set once the first snapshot went into the cache; watch events before it are covered by it. */
  private filled = false;
  private debounce: NodeJS.Timeout | undefined;
  /** What the applied Service stacks point at, as last told (referencesChanged). */
  private references: ClusterReferences = { zones: [], legacyHealthCheck: false };
  /** The cluster stack recorded its node health-check firewall above deny rules (told before its first run since the start). */
  private clusterFirewallAboveDeny = false;

  constructor(private readonly deps: DesiredDriverDeps) {}

  get cache(): DesiredCache {
    return this.deps.cache;
  }

  /**
   * Listen before the first list: a change that lands anywhere between the lists and the end of
   * start-up must reach the cache. Until the cache is first filled the handlers do nothing,
   * because the first fill reads the watcher's cache as it is then.
   */
  attach(source: DesiredSource): void {
    this.source = source;
    source.on("change", () => this.scheduleRecompute());
    source.on("serviceMeta", (key: string) => {
      if (!this.filled) return;
      const ref = parseServiceKey(key);
      if (ref !== undefined) this.deps.enqueue(this.stackKeys.stackOf(ref.namespace, ref.name));
    });
    source.on("resync", () => {
      if (!this.filled) return;
      // Recompute, so a change whose event went missing is acted on; then look at every stack
      // again (stacks with unchanged desired state cost nothing).
      this.recompute();
      for (const stack of this.deps.cache.stacks()) this.deps.enqueue(stack);
    });
  }

  /** The first desired state, after the watcher's initial lists: every stack it names is enqueued as changed. */
  fill(): void {
    if (this.source === undefined) return;
    const changes = this.update(this.source);
    this.filled = true;
    for (const change of changes) this.deps.enqueue(change.stack, { changed: true });
    this.tellNegs();
  }

  /** As the Service controller's records start: with Service stacks known now, their references are unread until each is read. */
  startReferences(knownStacks: readonly string[]): void {
    this.references = {
      zones: [],
      legacyHealthCheck: false,
      ...(knownStacks.some(isServiceStack) ? { unread: true as const } : {}),
    };
  }

  /** The union of what the applied Service stacks point at changed. */
  referencesChanged(references: ClusterReferences): void {
    this.references = references;
    this.observe(withReferences(this.deps.cache.lastObserved(), references, this.clusterFirewallAboveDeny));
  }

  /** The cluster stack told where its node health-check firewall is recorded. */
  recordedFirewall(aboveDeny: boolean): void {
    this.clusterFirewallAboveDeny = aboveDeny;
    this.observe(withReferences(this.deps.cache.lastObserved(), this.references, aboveDeny));
  }

  /** A new observation of GCE or of the applied stacks: the stacks whose desired state it changes run. */
  observe(observed: ObservedCloud): void {
    for (const change of this.deps.cache.observe(observed)) this.deps.enqueue(change.stack, { changed: true });
    this.tellNegs();
  }

  /** What the NEGs hold now (the NEG controller's lists and calls), over what was known of the others; undefined: forgotten. */
  negMembers(members: Record<string, string[] | undefined>): void {
    for (const change of this.deps.cache.tellNegMembers(members)) this.deps.enqueue(change.stack, { changed: true });
    this.tellNegs();
  }

  /** The last observation with `patch` over it. */
  amend(patch: Partial<ObservedCloud>): void {
    this.observe({ ...this.deps.cache.lastObserved(), ...patch });
  }

  /** No recompute after this (shutdown, lost leadership). */
  stop(): void {
    if (this.debounce !== undefined) clearTimeout(this.debounce);
    this.debounce = undefined;
  }

  /** The desired state of the watcher's snapshot; every Service's stack name remembered (stackKeys). */
  private update(source: DesiredSource): ReturnType<DesiredCache["update"]> {
    const snapshot = source.snapshot();
    for (const service of snapshot.services) this.stackKeys.stackOf(service.namespace, service.name);
    return this.deps.cache.update(snapshot);
  }

  private scheduleRecompute(): void {
    if (this.debounce !== undefined) return;
    // Bursts of watch events cost one recompute; workers then read the cache, not the events.
    this.debounce = setTimeout(() => {
      this.debounce = undefined;
      this.recompute();
    }, this.deps.debounceMs);
  }

  private recompute(): void {
    if (!this.filled || this.source === undefined) return;
    for (const change of this.update(this.source)) this.deps.enqueue(change.stack, { changed: true });
    this.tellNegs();
  }

  private tellNegs(): void {
    const keys = this.deps.cache.takeNegChanges();
    for (const key of keys) this.deps.enqueueNegs?.(key);
  }
}
