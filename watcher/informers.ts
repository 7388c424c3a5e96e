/**
 * Informers for Nodes and Services. Trimmed copies are kept, so the model's input stays small and a
 * change that touches nothing we read (node heartbeats, status updates) is dropped on arrival.
 */
import { EventEmitter } from "node:events";
import { isDeepStrictEqual } from "node:util";
import * as k8s from "@kubernetes/client-node";
import type { ClusterSnapshot, NodeInfo, ServiceInfo } from "../model";
import { trimNode, trimService } from "./trim";

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
}

export interface WatcherOptions {
  /** Full relist period, so a missed event heals. */
  resyncMs: number;
  restartBackoffBaseMs: number;
  restartBackoffMaxMs: number;
  onWatchRestart?: (resource: "nodes" | "services", error: unknown) => void;
}

export function serviceMeta(service: k8s.V1Service): ServiceMeta {
  return {
    namespace: service.metadata?.namespace ?? "default",
    name: service.metadata?.name ?? "",
    uid: service.metadata?.uid ?? "",
    type: service.spec?.type ?? "ClusterIP",
    ...(typeof service.spec?.loadBalancerClass === "string" && service.spec.loadBalancerClass !== "" ? { loadBalancerClass: service.spec.loadBalancerClass } : {}),
    finalizers: [...(service.metadata?.finalizers ?? [])],
    ingress: (service.status?.loadBalancer?.ingress ?? []).map((entry) => entry.ip ?? entry.hostname ?? "").filter((ip) => ip !== ""),
    deleting: service.metadata?.deletionTimestamp !== undefined && service.metadata?.deletionTimestamp !== null,
  };
}

type Resource = "nodes" | "services";

/** Emits `change` (no payload: consumers read the cache) whenever the trimmed snapshot changed. */
export class ClusterWatcher extends EventEmitter {
  private readonly nodes = new Map<string, NodeInfo>();
  private readonly services = new Map<string, ServiceInfo>();
  private readonly metas = new Map<string, ServiceMeta>();
  private readonly informers: { resource: Resource; informer: k8s.Informer<k8s.KubernetesObject> & k8s.ObjectCache<k8s.KubernetesObject> }[] = [];
  private readonly restartFailures = new Map<Resource, number>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(
    private readonly kubeConfig: k8s.KubeConfig,
    private readonly options: WatcherOptions,
  ) {
    super();
  }

  /** Resolves once both initial lists are in the cache. */
  async start(): Promise<void> {
    const core = this.kubeConfig.makeApiClient(k8s.CoreV1Api);
    const nodeInformer = k8s.makeInformer<k8s.V1Node>(this.kubeConfig, "/api/v1/nodes", () => core.listNode());
    const serviceInformer = k8s.makeInformer<k8s.V1Service>(this.kubeConfig, "/api/v1/services", () => core.listServiceForAllNamespaces());
    for (const verb of [k8s.ADD, k8s.UPDATE] as const) {
      nodeInformer.on(verb, (node) => this.putNode(node));
      serviceInformer.on(verb, (service) => this.putService(service));
    }
    nodeInformer.on(k8s.DELETE, (node) => this.removeNode(node.metadata?.name ?? ""));
    serviceInformer.on(k8s.DELETE, (service) => this.removeService(`${service.metadata?.namespace}/${service.metadata?.name}`));
    this.informers.push(
      { resource: "nodes", informer: nodeInformer as unknown as (typeof this.informers)[number]["informer"] },
      { resource: "services", informer: serviceInformer as unknown as (typeof this.informers)[number]["informer"] },
    );
    for (const { resource, informer } of this.informers) {
      informer.on(k8s.ERROR, (error) => this.restart(resource, informer, error));
      informer.on(k8s.CONNECT, () => this.restartFailures.set(resource, 0));
    }
    await Promise.all([nodeInformer.start(), serviceInformer.start()]);
    this.scheduleResync();
  }

  private restart(resource: Resource, informer: { start(): Promise<void> }, error: unknown): void {
    if (this.stopped) return;
    const failures = (this.restartFailures.get(resource) ?? 0) + 1;
    this.restartFailures.set(resource, failures);
    this.options.onWatchRestart?.(resource, error);
    const delay = Math.min(this.options.restartBackoffMaxMs, this.options.restartBackoffBaseMs * 2 ** Math.min(failures - 1, 20));
    this.later(delay, () => {
      informer.start().catch((startError: unknown) => this.restart(resource, informer, startError));
    });
  }

  private scheduleResync(): void {
    this.later(this.options.resyncMs, () => {
      for (const { resource, informer } of this.informers) {
        // A relist replaces the cache; objects whose trimmed form is unchanged are dropped on arrival.
        informer
          .stop()
          .then(() => informer.start())
          .catch((error: unknown) => this.restart(resource, informer, error));
      }
      this.emit("resync");
      this.scheduleResync();
    });
  }

  private later(ms: number, fn: () => void): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!this.stopped) fn();
    }, ms);
    timer.unref();
    this.timers.add(timer);
  }

  private putNode(node: k8s.V1Node): void {
    const trimmed = trimNode(node);
    if (isDeepStrictEqual(this.nodes.get(trimmed.name), trimmed)) return;
    this.nodes.set(trimmed.name, trimmed);
    this.emit("change");
  }

  private removeNode(name: string): void {
    if (this.nodes.delete(name)) this.emit("change");
  }

  private putService(service: k8s.V1Service): void {
    const trimmed = trimService(service);
    const meta = serviceMeta(service);
    const key = `${trimmed.namespace}/${trimmed.name}`;
    const sameModel = isDeepStrictEqual(this.services.get(key), trimmed);
    const sameMeta = isDeepStrictEqual(this.metas.get(key), meta);
    this.services.set(key, trimmed);
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

  meta(namespace: string, name: string): ServiceMeta | undefined {
    return this.metas.get(`${namespace}/${name}`);
  }

  nodeCount(): number {
    return this.nodes.size;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.all(this.informers.map(({ informer }) => informer.stop()));
  }
}
