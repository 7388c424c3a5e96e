// The node controller: initializes Nodes that kubelets registered with
// `--cloud-provider=external` (taint node.cloudprovider.kubernetes.io/uninitialized), keeps their
// addresses current, deletes NotReady Nodes whose instance is definitively gone, and mirrors the
// cluster stack's route state into the NetworkUnavailable condition.
//
// Shape (docs/ARCHITECTURE.md#queue-and-backoff): informer handlers only enqueue the Node name; one worker per name
// reconciles from the informer cache (never from the event payload); decisions come from the
// pure functions in decide.ts; this file only sequences lookups and writes and turns outcomes
// into typed ReconcileResults for the queue.

import { CoreV1Api, type KubeConfig, makeInformer, type V1Node } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { Registry } from "prom-client";

import type { ComputeApi } from "./compute";
import {
    desiredAddresses,
    hasUninitializedTaint,
    initializationMergePatch,
    initializationPatch,
    type NodeMergePatch,
    type InstanceLookup,
    parseProviderID,
    type ProviderID,
    readyStatus,
    routeCondition,
    type RouteStatus,
    sameAddresses,
    shouldDeleteNode,
} from "./decide";
import { EventRecorder, type EventTarget } from "../controller/events";
import { KeepAliveAgents } from "../controller/kube";
import { KeyedQueue, OK, type QueueOptions, type ReconcileResult } from "../controller/queue";
import { KubeConflictError, KubeNodeApi, type NodeApi } from "./kube";
import { InstanceLocator } from "./locate";
import { type NodeMetrics, nodeMetrics } from "./metrics";

/** Route state per Node, implemented by the daemon from the cluster stack's outputs. */
export interface RouteStatusSource {
    routeStatus(nodeName: string): RouteStatus;
}

/** The informer surface we use; @kubernetes/client-node's makeInformer() result satisfies it. */
export interface NodeInformer {
    on(verb: "add" | "update" | "delete", cb: (node: V1Node) => void): void;
    on(verb: "error", cb: (err?: unknown) => void): void;
    start(): Promise<void>;
    stop(): Promise<void>;
    get(name: string): V1Node | undefined;
    list(): ReadonlyArray<V1Node>;
}

export interface NodeControllerOptions {
    /** GCP project of the cluster's instances (name lookups and the aggregated list). */
    readonly project: string;
    /** Region whose zones are searched when a Node has no providerID. */
    readonly region: string;
    /** Zones to search by name; default: the region's zones from regions.get. */
    readonly zones?: readonly string[];
    readonly compute: ComputeApi;
    /** Source of the default NodeApi and informer; not needed when both are injected. */
    readonly kubeConfig?: KubeConfig;
    readonly api?: NodeApi;
    /** Called on every start(), so a controller restarted after a leadership change gets a fresh cache. */
    readonly informerFactory?: () => NodeInformer;
    readonly routes?: RouteStatusSource;
    readonly logger: Logger;
    readonly registry: Registry;
    /** Address refresh period. Default 5 min. */
    readonly addressRefreshMs?: number;
    /** How often NotReady Nodes are checked against Compute. Default 30 s. */
    readonly lifecycleCheckMs?: number;
    /** Concurrent reconciles. Default 10 (the work is I/O-bound). */
    readonly workers?: number;
    /** How long one aggregated instance list answers lookups. Default 10 s. */
    readonly lookupCacheMs?: number;
    /** Retry backoff per Node (doubles per failure). Defaults 1 s → 5 min. */
    readonly baseBackoffMs?: number;
    readonly maxBackoffMs?: number;
    /**
     * Deadline of the informer's Node list (as the daemon's watcher: 60 s). Without one, a list on a
     * blackholed connection never returns and start() never resolves. The watch itself has none.
     */
    readonly listTimeoutMs?: number;
    /** Event reportingInstance. Default: hostname. */
    readonly identity?: string;
    readonly now?: () => number;
}

/** source.component of our Node events. */
export const EVENT_COMPONENT = "dccm-node-controller";

const UPDATE_ATTEMPTS = 5;
const INFORMER_RESTART_MS = 5_000;
/** The daemon's list deadline (README: "lists 60 s"). */
const LIST_TIMEOUT_MS = 60_000;
const JUST_INITIALIZED_MS = 30_000;

export class NodeController {
    private readonly opts: NodeControllerOptions;
    private readonly api: NodeApi;
    private readonly log: Logger;
    private readonly metrics: NodeMetrics;
    private readonly events: EventRecorder;
    private readonly now: () => number;
    private readonly addressRefreshMs: number;
    private readonly lifecycleCheckMs: number;
    private readonly queue: KeyedQueue;
    /** Per-Node bookkeeping (in memory: after a restart every Node is simply due once). */
    private readonly lastAddressSync = new Map<string, number>();
    private readonly lastLifecycleCheck = new Map<string, number>();
    /**
     * Nodes we just initialized, by name → uid and time. Until the informer delivers our own
     * update, its cache still shows the taint; re-initializing from that stale copy would cost a
     * conflict and a fresh read per Node for nothing.
     */
    private readonly justInitialized = new Map<string, { uid: string; at: number }>();
    private informer: NodeInformer | undefined;
    private locator: InstanceLocator | undefined;
    private abort: AbortController | undefined;
    private tickers: NodeJS.Timeout[] = [];
    private restartTimer: NodeJS.Timeout | undefined;
    private running = false;
    /** Connections of the informer's list calls (each carries the list deadline). */
    private listAgents: KeepAliveAgents | undefined;

    constructor(opts: NodeControllerOptions) {
        this.opts = opts;
        if (opts.api !== undefined) {
            this.api = opts.api;
        } else if (opts.kubeConfig !== undefined) {
            this.api = new KubeNodeApi(opts.kubeConfig);
        } else {
            throw new Error("NodeController needs kubeConfig or api");
        }
        if (opts.informerFactory === undefined && opts.kubeConfig === undefined) {
            throw new Error("NodeController needs kubeConfig or informerFactory");
        }
        this.log = opts.logger.child({ controller: "nodes" });
        this.metrics = nodeMetrics(opts.registry);
        this.now = opts.now ?? Date.now;
        const eventOpts: { reportingInstance?: string; now: () => number } = { now: this.now };
        if (opts.identity !== undefined) {
            eventOpts.reportingInstance = opts.identity;
        }
        this.events = new EventRecorder(this.api, this.log, EVENT_COMPONENT, eventOpts);
        this.addressRefreshMs = opts.addressRefreshMs ?? 5 * 60_000;
        this.lifecycleCheckMs = opts.lifecycleCheckMs ?? 30_000;
        const queueOpts: QueueOptions = {
            parallelism: opts.workers ?? 10,
            // Nothing runs before start(); the queue is started again after each stop().
            paused: true,
            onResult: (item, result, failures) => this.logResult(item.key, result, failures),
            ...(opts.baseBackoffMs === undefined ? {} : { backoffBaseMs: opts.baseBackoffMs }),
            ...(opts.maxBackoffMs === undefined ? {} : { backoffMaxMs: opts.maxBackoffMs }),
        };
        this.queue = new KeyedQueue((item) => this.reconcileSafely(item.key), queueOpts);
    }

    /** Starts watching Nodes and reconciling. Resolves once the informer's first list is in. */
    async start(): Promise<void> {
        if (this.running) {
            return;
        }
        this.running = true;
        this.abort = new AbortController();
        const locatorOpts: ConstructorParameters<typeof InstanceLocator>[1] = {
            project: this.opts.project,
            region: this.opts.region,
            now: this.now,
            signal: this.abort.signal,
            ...(this.opts.zones === undefined ? {} : { zones: this.opts.zones }),
            ...(this.opts.lookupCacheMs === undefined ? {} : { ttlMs: this.opts.lookupCacheMs }),
        };
        this.locator = new InstanceLocator(this.opts.compute, locatorOpts);
        const informer = this.makeInformer();
        this.informer = informer;
        const enqueue = (node: V1Node): void => {
            const name = node.metadata?.name;
            if (name !== undefined) {
                this.queue.enqueue(name);
            }
        };
        informer.on("add", enqueue);
        informer.on("update", enqueue);
        informer.on("delete", enqueue);
        informer.on("error", (err) => this.onInformerError(informer, err));
        this.queue.start();
        this.tickers = [
            setInterval(() => this.enqueueAll(() => true), this.addressRefreshMs),
            // NotReady Nodes produce no events once the kubelet is gone, so they are polled.
            setInterval(() => this.enqueueAll((n) => readyStatus(n) !== "True"), this.lifecycleCheckMs),
        ];
        for (const t of this.tickers) {
            t.unref();
        }
        await informer.start();
        this.log.info({ project: this.opts.project, region: this.opts.region }, "node controller started");
    }

    /** Stops watching, aborts Compute calls in flight and waits for running reconciles. */
    async stop(): Promise<void> {
        if (!this.running) {
            return;
        }
        this.running = false;
        for (const t of this.tickers) {
            clearInterval(t);
        }
        this.tickers = [];
        if (this.restartTimer !== undefined) {
            clearTimeout(this.restartTimer);
            this.restartTimer = undefined;
        }
        this.abort?.abort(new Error("node controller stopping"));
        const informer = this.informer;
        this.informer = undefined;
        await Promise.all([informer?.stop(), this.queue.drain()]);
        this.api.close?.();
        this.listAgents?.destroy();
        this.listAgents = undefined;
        this.lastAddressSync.clear();
        this.lastLifecycleCheck.clear();
        this.justInitialized.clear();
        this.log.info("node controller stopped");
    }

    /** The cluster stack's routes changed: re-check every Node's NetworkUnavailable condition. */
    onRoutesChanged(): void {
        this.enqueueAll(() => true);
    }

    /** Resolves when no reconcile is queued or running (tests and the benchmark use it). */
    idle(): Promise<void> {
        return this.queue.idle();
    }

    private makeInformer(): NodeInformer {
        if (this.opts.informerFactory !== undefined) {
            return this.opts.informerFactory();
        }
        const kc = this.opts.kubeConfig as KubeConfig;
        this.listAgents?.destroy();
        this.listAgents = new KeepAliveAgents(kc, { requestTimeoutMs: this.opts.listTimeoutMs ?? LIST_TIMEOUT_MS });
        const core = this.listAgents.makeApiClient(CoreV1Api);
        return makeInformer<V1Node>(kc, "/api/v1/nodes", () => core.listNode());
    }

    private onInformerError(informer: NodeInformer, err: unknown): void {
        if (!this.running || this.informer !== informer) {
            return;
        }
        // ListWatch does not restart itself after an error; the cache it holds stays usable.
        this.log.warn({ err }, `node watch failed; restarting in ${INFORMER_RESTART_MS} ms`);
        this.restartTimer = setTimeout(() => {
            this.restartTimer = undefined;
            if (this.running && this.informer === informer) {
                informer.start().catch((e: unknown) => this.onInformerError(informer, e));
            }
        }, INFORMER_RESTART_MS);
        this.restartTimer.unref();
    }

    private enqueueAll(pred: (node: V1Node) => boolean): void {
        for (const node of this.informer?.list() ?? []) {
            const name = node.metadata?.name;
            if (name !== undefined && pred(node)) {
                this.queue.enqueue(name);
            }
        }
    }

    private async reconcileSafely(name: string): Promise<ReconcileResult> {
        try {
            return await this.reconcile(name);
        } catch (err) {
            if (this.abort?.signal.aborted === true) {
                // Shutdown interrupted us; the next leader redoes the work.
                return OK;
            }
            return { kind: "retry", error: err instanceof Error ? err : new Error(String(err)) };
        }
    }

    private async reconcile(name: string): Promise<ReconcileResult> {
        const node = this.informer?.get(name);
        if (node === undefined) {
            this.lastAddressSync.delete(name);
            this.lastLifecycleCheck.delete(name);
            this.justInitialized.delete(name);
            this.queue.forget(name);
            return OK;
        }
        if (node.metadata?.deletionTimestamp !== undefined && node.metadata.deletionTimestamp !== null) {
            return OK;
        }
        const pid = parseProviderID(node.spec?.providerID);
        const ready = readyStatus(node);
        if (pid !== undefined && ready !== undefined && ready !== "True") {
            const gone = await this.checkLifecycle(node, pid);
            if (gone !== undefined) {
                return gone;
            }
        }
        if (hasUninitializedTaint(node)) {
            const recent = this.justInitialized.get(name);
            if (recent !== undefined && recent.uid === node.metadata?.uid && this.now() - recent.at < JUST_INITIALIZED_MS) {
                // Our update's watch event is on its way and will enqueue the Node again.
                return OK;
            }
            return this.initialize(node, pid);
        }
        this.justInitialized.delete(name);
        const addresses = await this.refreshAddresses(node, pid);
        const route = await this.syncRouteCondition(node);
        return worst(addresses, route);
    }

    /** Returns a result when the Node was (or is being) deleted, undefined to carry on. */
    private async checkLifecycle(node: V1Node, pid: ProviderID): Promise<ReconcileResult | undefined> {
        const name = node.metadata?.name ?? "";
        const last = this.lastLifecycleCheck.get(name);
        // Update events of a NotReady Node (conditions, our own writes) must not each cost a
        // Compute call; the lifecycle ticker brings it back every period.
        if (last !== undefined && this.now() - last < this.lifecycleCheckMs / 2) {
            return undefined;
        }
        const locator = this.requireLocator();
        const cached = locator.cachedByProviderID(pid);
        const lookup: InstanceLookup = cached !== undefined ? { kind: "found", instance: cached } : await locator.confirmGone(pid);
        this.lastLifecycleCheck.set(name, this.now());
        const decision = shouldDeleteNode(node, lookup);
        if (!decision.delete) {
            if (lookup.kind === "error") {
                this.log.warn({ node: name, err: lookup.error }, `keeping NotReady node: ${decision.reason}`);
            } else {
                this.log.debug({ node: name }, `keeping NotReady node: ${decision.reason}`);
            }
            return undefined;
        }
        const uid = node.metadata?.uid ?? "";
        const resourceVersion = node.metadata?.resourceVersion ?? "";
        const res = await this.api.deleteNode(name, { uid, resourceVersion });
        switch (res) {
            case "deleted":
                // Recorded after the fact: a delete refused by its preconditions is no news.
                await this.events.record(nodeTarget(name), "Normal", "DeletingNode", `Deleting node ${name} because ${decision.reason}`);
                this.metrics.deletions.inc();
                this.log.info({ node: name, providerID: node.spec?.providerID }, `deleted node: ${decision.reason}`);
                return OK;
            case "gone":
                return OK;
            case "conflict":
                // It changed since we looked (maybe Ready again): decide again on fresh data.
                this.lastLifecycleCheck.delete(name);
                return { kind: "retry", error: new Error(`delete node ${name}: precondition failed, node changed`) };
        }
    }

    private async initialize(node: V1Node, pid: ProviderID | undefined): Promise<ReconcileResult> {
        const name = node.metadata?.name ?? "";
        const locator = this.requireLocator();
        const lookup = pid !== undefined ? await locator.byProviderID(pid) : await locator.byName(name);
        if (lookup.kind !== "found") {
            this.metrics.initializations.inc({ result: "error" });
            return { kind: "retry", error: lookupError(name, pid, lookup) };
        }
        const patch = initializationPatch(node, lookup.instance);
        try {
            // Addresses first: once the taint is gone Pods land on the Node, and they (and
            // kube-proxy) need its IPs. The status subresource cannot ride in the same update.
            // The patch returns the Node at its new resourceVersion: updating from the cache copy
            // would be a guaranteed conflict plus a re-read.
            const base = sameAddresses(node.status?.addresses, patch.addresses) ? node : await this.api.setNodeAddresses(name, patch.addresses);
            const outcome = await this.patchWithRetry(base, (current) => initializationMergePatch(current, patch));
            if (outcome === "gone") {
                return OK;
            }
            this.lastAddressSync.set(name, this.now());
            this.justInitialized.set(name, { uid: node.metadata?.uid ?? "", at: this.now() });
            if (outcome === "unchanged") {
                // A stale cache entry of a Node we already initialized: nothing to announce.
                return OK;
            }
        } catch (err) {
            this.metrics.initializations.inc({ result: "error" });
            return { kind: "retry", error: new Error(`initialize node ${name}`, { cause: err }) };
        }
        this.metrics.initializations.inc({ result: "ok" });
        this.log.info({ node: name, providerID: patch.providerID ?? node.spec?.providerID, zone: lookup.instance.zone }, "node initialized");
        await this.events.record(nodeTarget(name), "Normal", "Synced", "Node synced successfully");
        return OK;
    }

    /**
     * Retry-on-conflict: the patch is computed from the freshest copy we have and carries its
     * resourceVersion; after a conflict the Node is re-read from the apiserver (not the cache,
     * which may lag) and the patch recomputed.
     */
    private async patchWithRetry(
        start: V1Node,
        compute: (node: V1Node) => NodeMergePatch | undefined,
    ): Promise<"updated" | "unchanged" | "gone"> {
        const name = start.metadata?.name ?? "";
        let current: V1Node = start;
        for (let attempt = 1; ; attempt++) {
            const patch = compute(current);
            if (patch === undefined) {
                return "unchanged";
            }
            try {
                await this.api.patchNode(name, current.metadata?.resourceVersion ?? "", patch);
                return "updated";
            } catch (err) {
                if (!(err instanceof KubeConflictError) || attempt >= UPDATE_ATTEMPTS) {
                    throw err;
                }
            }
            const fresh = await this.api.getNode(name);
            if (fresh === undefined) {
                return "gone";
            }
            current = fresh;
        }
    }

    private async refreshAddresses(node: V1Node, pid: ProviderID | undefined): Promise<ReconcileResult> {
        const name = node.metadata?.name ?? "";
        const last = this.lastAddressSync.get(name);
        // Half a period of slack: the ticker fires every period, and the previous sync happened
        // a little after the previous tick.
        if (last !== undefined && this.now() - last < this.addressRefreshMs / 2) {
            return OK;
        }
        const locator = this.requireLocator();
        const lookup = pid !== undefined ? await locator.byProviderID(pid) : await locator.byName(name);
        if (lookup.kind === "error") {
            return { kind: "retry", error: new Error(`refresh addresses of node ${name}`, { cause: lookup.error }) };
        }
        this.lastAddressSync.set(name, this.now());
        if (lookup.kind !== "found") {
            // Not ours to describe (or gone: the lifecycle check deals with that).
            return OK;
        }
        const want = desiredAddresses(node, lookup.instance);
        if (want.length === 0 || sameAddresses(node.status?.addresses, want)) {
            return OK;
        }
        try {
            await this.api.setNodeAddresses(name, want);
            this.log.info({ node: name, addresses: want }, "node addresses updated");
            return OK;
        } catch (err) {
            this.lastAddressSync.delete(name);
            return { kind: "retry", error: err instanceof Error ? err : new Error(String(err)) };
        }
    }

    private async syncRouteCondition(node: V1Node): Promise<ReconcileResult> {
        const routes = this.opts.routes;
        if (routes === undefined) {
            return OK;
        }
        const name = node.metadata?.name ?? "";
        const change = routeCondition(node, routes.routeStatus(name), new Date(this.now()));
        if (change === undefined) {
            return OK;
        }
        try {
            await this.api.setNodeCondition(name, change.condition);
        } catch (err) {
            return { kind: "retry", error: err instanceof Error ? err : new Error(String(err)) };
        }
        if (change.warning !== undefined) {
            await this.events.record(nodeTarget(name), "Warning", "FailedToCreateRoute", change.warning);
        }
        return OK;
    }

    private requireLocator(): InstanceLocator {
        if (this.locator === undefined) {
            throw new Error("node controller is not started");
        }
        return this.locator;
    }

    private logResult(name: string, result: ReconcileResult, failures: number): void {
        switch (result.kind) {
            case "ok":
            case "retryAfter":
                return;
            case "retry":
                // The first few failures are usually transient (a conflict, a 503 burst).
                if (failures >= 3) {
                    this.log.error({ node: name, err: result.error, failures }, "node reconcile failing");
                } else {
                    this.log.warn({ node: name, err: result.error, failures }, "node reconcile failed; will retry");
                }
                return;
            case "giveUp":
                this.log.error({ node: name, reason: result.reason }, "node reconcile gave up");
                return;
        }
    }
}

/** Node events carry the Node's name as involvedObject.uid, as kubelet's do: `kubectl describe node` matches on it. */
function nodeTarget(name: string): EventTarget {
    return { kind: "Node", name, uid: name };
}

/** The most urgent of several results: retry before retryAfter before giveUp before ok. */
function worst(...results: ReconcileResult[]): ReconcileResult {
    const rank = { retry: 3, retryAfter: 2, giveUp: 1, ok: 0 } as const;
    return results.reduce((a, b) => (rank[b.kind] > rank[a.kind] ? b : a), OK);
}

function lookupError(name: string, pid: ProviderID | undefined, lookup: Exclude<InstanceLookup, { kind: "found" }>): Error {
    const target = pid !== undefined ? `instance ${pid.project}/${pid.zone}/${pid.name}` : `an instance named ${name}`;
    switch (lookup.kind) {
        case "error":
            return new Error(`initialize node ${name}: looking up ${target} failed`, { cause: lookup.error });
        case "ambiguous":
            return new Error(`initialize node ${name}: ${target} exists in several zones (${lookup.zones.join(", ")}); set the kubelet's --provider-id`);
        case "notFound":
            return lookup.scope === "instance"
                ? new Error(`initialize node ${name}: ${target} does not exist`)
                : new Error(`initialize node ${name}: no ${target.replace(/^an /, "")} in zones ${lookup.zones.join(", ")}`);
    }
}
