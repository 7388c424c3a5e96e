/**
 * Informers for Nodes and Services. Trimmed copies are kept, so the model's input stays small and a
 * change that touches nothing we read (node heartbeats, status updates) is dropped on arrival.
 */
import { EventEmitter } from "node:events";
import { isDeepStrictEqual } from "node:util";
import * as k8s from "@kubernetes/client-node";
import {
  ANNOTATION_REFRESH_HANDLED,
  ANNOTATION_REFRESH_REQUESTED,
  type ClusterSnapshot,
  type NodeInfo,
  type ServiceInfo,
} from "../model";
import { KeepAliveAgents } from "../runtime/kube";
import { trimNode, trimService, trimWatchedNode, type WatchedNode } from "./trim";
import { backoffMs } from "../runtime/backoff";
import { LeanListWatch, type LeanListWatchOptions, type ListWatchHandlers } from "./listWatch";

/** What the daemon needs of a Service besides the model's view. */
export interface ServiceMeta {
  namespace: string;
  name: string;
  uid: string;
  type: string;
  /** Decides ownership before anything else: another class is another controller's. */
  loadBalancerClass?: string;
  finalizers: string[];
  ingress: string[];
  deleting: boolean;
  /** dccm.io/refresh-requested and dccm.io/refresh-handled (controllers/service/refreshRequest.ts); unset when absent. */
  refreshRequested?: string;
  refreshHandled?: string;
}

export interface WatcherOptions {
  /**
   * Period of the `resync` event: consumers look at everything again from the cache. Watches are
   * not restarted for it.
   * Undefined: no resync events.
   */
  resyncMs?: number;
  restartBackoffBaseMs: number;
  restartBackoffMaxMs: number;
  /** A watch that stayed up this long counts as healthy: its next failure starts the backoff over. Default 60 s. */
  healthyAfterMs?: number;
  /** Deadline of each list call (watches have none: they are long-lived by design). Default 60 s. */
  listTimeoutMs?: number;
  onWatchRestart?: (resource: "nodes" | "services", error: unknown, delayMs: number) => void;
  /** Objects per list page (default 100): the initial list and every relist come in pages this big. */
  pageSize?: number;
  /** What to watch. Default both; the node controller alone (tests, the benchmark) watches only Nodes. */
  resources?: readonly Resource[];
}

/** A failed watch restarts after 1 s: an apiserver restart is caught at once (the daemon's watches, and a node controller watching on its own)... */
export const WATCH_RESTART_BACKOFF_BASE_MS = 1000;
/** ...doubling to 1 min, so an apiserver that stays down is not hammered. */
export const WATCH_RESTART_BACKOFF_MAX_MS = 60_000;

/** A Node watch event as the node controller sees it: the object is the trimmed WatchedNode. */
export interface NodeEvent {
  readonly kind: "added" | "updated" | "deleted";
  readonly node: WatchedNode;
}

/** The Node cache the node controller reads: one watch, shared with the Service and cluster stacks. */
export interface NodeSource {
  /** Every add, update and delete from now on (after the cache holds it); returns the unsubscribe. */
  subscribeNodes(listener: (event: NodeEvent) => void): () => void;
  watchedNode(name: string): WatchedNode | undefined;
  watchedNodes(): WatchedNode[];
}

function annotationField<K extends string>(field: K, value: string | undefined): Partial<Record<K, string>> {
  return value === undefined ? {} : ({ [field]: value } as Partial<Record<K, string>>);
}

export function serviceMeta(service: k8s.V1Service): ServiceMeta {
  return {
    namespace: service.metadata?.namespace ?? "default",
    name: service.metadata?.name ?? "",
    uid: service.metadata?.uid ?? "",
    type: service.spec?.type ?? "ClusterIP",
    ...(typeof service.spec?.loadBalancerClass === "string" && service.spec.loadBalancerClass !== ""
      ? { loadBalancerClass: service.spec.loadBalancerClass }
      : {}),
    finalizers: [...(service.metadata?.finalizers ?? [])],
    ingress: (service.status?.loadBalancer?.ingress ?? [])
      .map((entry) => entry.ip ?? entry.hostname ?? "")
      .filter((ip) => ip !== ""),
    deleting: service.metadata?.deletionTimestamp !== undefined && service.metadata?.deletionTimestamp !== null,
    ...annotationField("refreshRequested", service.metadata?.annotations?.[ANNOTATION_REFRESH_REQUESTED]),
    ...annotationField("refreshHandled", service.metadata?.annotations?.[ANNOTATION_REFRESH_HANDLED]),
  };
}

export type Resource = "nodes" | "services";

/** One list-watch and its restart bookkeeping. */
interface Watched {
  resource: Resource;
  listWatch: LeanListWatch<k8s.KubernetesObject>;
  /** Consecutive failures without a healthy span in between; drives the backoff. */
  failures: number;
  /** Since when the watch has been (re)connected without an error. */
  upSince: number | undefined;
  /** The one pending restart, if any. */
  restartTimer: NodeJS.Timeout | undefined;
}

/** Emits `change` (no payload: consumers read the cache) whenever the trimmed snapshot changed. */
export class ClusterWatcher extends EventEmitter implements NodeSource {
  private readonly nodes = new Map<string, NodeInfo>();
  /**
   * The node controller's view of each Node (labels shared with `nodes`). Kept from the start: no
   * full Node is kept to build it from later, and it is small (addresses, taints, two conditions).
   */
  private readonly watchedNodeMap = new Map<string, WatchedNode>();
  private readonly nodeListeners = new Set<(event: NodeEvent) => void>();
  private readonly services = new Map<string, ServiceInfo>();
  private readonly metas = new Map<string, ServiceMeta>();
  private readonly watched: Watched[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private agents: KeepAliveAgents | undefined;
  private stopped = false;

  constructor(
    private readonly kubeConfig: k8s.KubeConfig,
    private readonly options: WatcherOptions,
  ) {
    super();
  }

  /** Resolves once the initial lists are in the cache (or failed: a restart with backoff follows). */
  async start(): Promise<void> {
    this.agents = new KeepAliveAgents(this.kubeConfig, { requestTimeoutMs: this.options.listTimeoutMs ?? 60_000 });
    const core = this.agents.makeApiClient(k8s.CoreV1Api);
    const watch = new k8s.Watch(this.kubeConfig);
    const resources = this.options.resources ?? ["nodes", "services"];
    const add = (
      resource: Resource,
      path: string,
      list: LeanListWatchOptions<k8s.KubernetesObject>["list"],
      handlers: Pick<ListWatchHandlers<k8s.KubernetesObject>, "put" | "remove">,
    ): void => {
      const listWatch: LeanListWatch<k8s.KubernetesObject> = new LeanListWatch({
        path,
        list,
        watch,
        ...(this.options.pageSize === undefined ? {} : { pageSize: this.options.pageSize }),
        handlers: {
          ...handlers,
          failed: (error) => this.restart(watched, error),
          // Opening a list or a watch proves nothing about health: it only starts the span that
          // restart() measures. A watch the server ends normally reopens without an error, which
          // keeps the span going.
          connecting: () => {
            watched.upSince ??= Date.now();
          },
        },
      });
      const watched: Watched = { resource, listWatch, failures: 0, upSince: undefined, restartTimer: undefined };
      this.watched.push(watched);
    };
    if (resources.includes("nodes")) {
      add("nodes", "/api/v1/nodes", (page) => core.listNode(page), {
        put: (node, kind) => this.putNode(node, kind),
        remove: (name) => this.removeNode(name),
      });
    }
    if (resources.includes("services")) {
      add("services", "/api/v1/services", (page) => core.listServiceForAllNamespaces(page), {
        put: (service) => this.putService(service),
        remove: (key) => this.removeService(key),
      });
    }
    await Promise.all(this.watched.map(({ listWatch }) => listWatch.start()));
    if (this.options.resyncMs !== undefined) this.scheduleResync(this.options.resyncMs);
  }

  /**
   * Restarts a failed list or watch after a backoff; it resumes from the last resourceVersion
   * (lists again only if there is none, or the apiserver answers 410). A failed list-watch does
   * nothing until restarted, so at most one restart is pending per resource.
   */
  private restart(watched: Watched, error: unknown): void {
    // Our own stop() aborts the watches: that error is not a failure.
    if (this.stopped) return;
    if (watched.restartTimer !== undefined) return;
    const healthyAfterMs = this.options.healthyAfterMs ?? 60_000;
    if (watched.upSince !== undefined && Date.now() - watched.upSince >= healthyAfterMs) watched.failures = 0;
    watched.upSince = undefined;
    watched.failures++;
    const delay = backoffMs(watched.failures, this.options.restartBackoffBaseMs, this.options.restartBackoffMaxMs);
    this.options.onWatchRestart?.(watched.resource, error, delay);
    watched.restartTimer = this.later(delay, () => {
      watched.restartTimer = undefined;
      void watched.listWatch.start();
    });
  }

  private scheduleResync(resyncMs: number): void {
    this.later(resyncMs, () => {
      // The list-watches keep the cache current through their watches (and relist on their own when
      // a watch cannot resume); a resync only has consumers look at all of it again.
      this.emit("resync");
      this.scheduleResync(resyncMs);
    });
  }

  private later(ms: number, fn: () => void): NodeJS.Timeout {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!this.stopped) fn();
    }, ms);
    timer.unref();
    this.timers.add(timer);
    return timer;
  }

  private putNode(node: k8s.V1Node, kind: "added" | "updated"): void {
    const trimmed = trimNode(node);
    const same = isDeepStrictEqual(this.nodes.get(trimmed.name), trimmed);
    if (!same) this.nodes.set(trimmed.name, trimmed);
    // The node controller sees every event, as from an informer of its own: even one that changed
    // nothing here moved the resourceVersion its next write must carry.
    const watched = trimWatchedNode(node, this.nodes.get(trimmed.name));
    this.watchedNodeMap.set(watched.name, watched);
    this.notifyNodes({ kind, node: watched });
    if (!same) this.emit("change");
  }

  private removeNode(name: string): void {
    const watched = this.watchedNodeMap.get(name);
    if (watched !== undefined) {
      this.watchedNodeMap.delete(name);
      this.notifyNodes({ kind: "deleted", node: watched });
    }
    if (this.nodes.delete(name)) this.emit("change");
  }

  private notifyNodes(event: NodeEvent): void {
    for (const listener of this.nodeListeners) listener(event);
  }

  subscribeNodes(listener: (event: NodeEvent) => void): () => void {
    this.nodeListeners.add(listener);
    return () => {
      this.nodeListeners.delete(listener);
    };
  }

  watchedNode(name: string): WatchedNode | undefined {
    return this.watchedNodeMap.get(name);
  }

  watchedNodes(): WatchedNode[] {
    return [...this.watchedNodeMap.values()];
  }

  private putService(service: k8s.V1Service): void {
    const trimmed = trimService(service);
    const meta = serviceMeta(service);
    const key = `${trimmed.namespace}/${trimmed.name}`;
    const sameModel = isDeepStrictEqual(this.services.get(key), trimmed);
    const sameMeta = isDeepStrictEqual(this.metas.get(key), meta);
    // An unchanged Service keeps its object, so consumers can tell what changed by identity.
    if (!sameModel) this.services.set(key, trimmed);
    this.metas.set(key, meta);
    if (!sameModel) this.emit("change");
    else if (!sameMeta) this.emit("serviceMeta", key);
  }

  private removeService(key: string): void {
    this.metas.delete(key);
    if (this.services.delete(key)) this.emit("change");
  }

  snapshot(): ClusterSnapshot {
    return { nodes: [...this.nodes.values()], services: [...this.services.values()] };
  }

  /** One Service as the model reads it, by key (no snapshot copied). */
  service(namespace: string, name: string): ServiceInfo | undefined {
    return this.services.get(`${namespace}/${name}`);
  }

  meta(namespace: string, name: string): ServiceMeta | undefined {
    return this.metas.get(`${namespace}/${name}`);
  }

  /** Every Service's metadata, as the watch cache holds it now. */
  serviceMetas(): ServiceMeta[] {
    return [...this.metas.values()];
  }

  nodeCount(): number {
    return this.nodes.size;
  }

  /** Aborts the watches and closes the list connections; no restart follows. */
  stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const watched of this.watched) watched.restartTimer = undefined;
    for (const watched of this.watched) watched.listWatch.stop();
    this.agents?.destroy();
    return Promise.resolve();
  }
}
