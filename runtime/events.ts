/**
 * core/v1 Events about Services, Nodes, Namespace kube-system and dccm's Lease, recorded the way
 * kubelet and the stock CCM do so `kubectl describe` shows them. Repeats of one event within 10
 * minutes bump `count` instead of creating new objects (client-go's correlator does the same), so a
 * failure loop does not flood etcd.
 */
import * as os from "node:os";
import {
  type ConfigurationOptions,
  CoreV1Api,
  type CoreV1Event,
  PatchStrategy,
  setHeaderOptions,
} from "@kubernetes/client-node";
import type { Logger } from "pino";
import { kubeError, kubeStatusCode } from "./kube";

import type { EventReason, EventType } from "./eventReasons";
export type { EventReason, EventType };

/** Cluster-scoped objects (Nodes) have their events here, as kubelet's are. */
export const EVENT_NAMESPACE = "default";
export const REPORTING_COMPONENT = "dccm";

/** involvedObject.apiVersion per kind: every kind is core/v1 but the Lease. */
const API_VERSIONS = { Service: "v1", Node: "v1", Namespace: "v1", Lease: "coordination.k8s.io/v1" } as const;

export interface EventTarget {
  kind: keyof typeof API_VERSIONS;
  /** Absent for cluster-scoped objects. */
  namespace?: string;
  name: string;
  /** involvedObject.uid: the object's UID, or what the object's own events use (a Node's name, as kubelet does). */
  uid: string;
}

export interface EventPatch {
  count: number;
  lastTimestamp: Date;
  message: string;
}

/** The two writes the recorder makes; the node controller's in-memory fake implements them too. */
export interface EventSink {
  createEvent(namespace: string, event: CoreV1Event): Promise<void>;
  /** Bumps count/lastTimestamp of an existing Event; `gone` when it expired. */
  patchEvent(namespace: string, name: string, patch: EventPatch): Promise<"ok" | "gone">;
}

/** EventSink over a real apiserver. */
export class CoreV1EventSink implements EventSink {
  private readonly merge: ConfigurationOptions;

  /** `options` are passed on every call (the node controller's keep-alive middleware, for instance). */
  constructor(
    private readonly core: CoreV1Api,
    private readonly options?: ConfigurationOptions,
  ) {
    this.merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch, options);
  }

  async createEvent(namespace: string, event: CoreV1Event): Promise<void> {
    try {
      await this.core.createNamespacedEvent({ namespace, body: event }, this.options);
    } catch (err) {
      throw kubeError(`create event ${namespace}/${event.metadata.name ?? ""}`, err);
    }
  }

  async patchEvent(namespace: string, name: string, patch: EventPatch): Promise<"ok" | "gone"> {
    try {
      // Patch bodies are sent as-is, so the Date is made a string here.
      const body = { count: patch.count, lastTimestamp: patch.lastTimestamp.toISOString(), message: patch.message };
      await this.core.patchNamespacedEvent({ name, namespace, body }, this.merge);
      return "ok";
    } catch (err) {
      if (kubeStatusCode(err) === 404) return "gone";
      throw kubeError(`patch event ${namespace}/${name}`, err);
    }
  }
}

const AGGREGATE_WINDOW_MS = 10 * 60_000;
const MAX_TRACKED = 4096;

interface Tracked {
  namespace: string;
  name: string;
  count: number;
  lastSeen: number;
}

export interface EventRecorderOptions {
  /** Default: hostname. */
  reportingInstance?: string;
  now?: () => number;
}

export class EventRecorder {
  private readonly sink: EventSink;
  private readonly instance: string;
  private readonly now: () => number;
  private readonly recent = new Map<string, Tracked>();
  private sequence = 0;

  /** `component` is the event's source.component (`dccm-service-controller`, `dccm-node-controller`). */
  constructor(
    sink: EventSink | CoreV1Api,
    private readonly logger: Logger,
    private readonly component: string,
    opts: EventRecorderOptions = {},
  ) {
    this.sink = sink instanceof CoreV1Api ? new CoreV1EventSink(sink) : sink;
    this.instance = opts.reportingInstance ?? os.hostname();
    this.now = opts.now ?? Date.now;
  }

  /** Never throws: an event is not worth failing (or retrying) a reconcile for. */
  async record(target: EventTarget, type: EventType, reason: EventReason, message: string): Promise<void> {
    const namespace = target.namespace ?? EVENT_NAMESPACE;
    const key = `${target.kind}\u0000${namespace}\u0000${target.name}\u0000${type}\u0000${reason}\u0000${message}`;
    const now = this.now();
    const seen = this.recent.get(key);
    try {
      if (seen !== undefined && now - seen.lastSeen < AGGREGATE_WINDOW_MS) {
        if (
          (await this.sink.patchEvent(seen.namespace, seen.name, {
            count: seen.count + 1,
            lastTimestamp: new Date(now),
            message,
          })) === "ok"
        ) {
          seen.count++;
          seen.lastSeen = now;
          this.touch(key, seen);
          return;
        }
        // Expired (events have a TTL): start a new one.
      }
      // `<object>.<hex nanoseconds>` as client-go names them; the sequence keeps two events of
      // one millisecond apart.
      const name = `${target.name}.${(BigInt(now) * 1_000_000n + BigInt(this.sequence++ % 1_000_000)).toString(16)}`;
      const timestamp = new Date(now);
      await this.sink.createEvent(namespace, {
        metadata: { name, namespace },
        involvedObject: {
          apiVersion: API_VERSIONS[target.kind],
          kind: target.kind,
          name: target.name,
          uid: target.uid,
          ...(target.namespace !== undefined ? { namespace: target.namespace } : {}),
        },
        type,
        reason,
        message,
        count: 1,
        firstTimestamp: timestamp,
        lastTimestamp: timestamp,
        source: { component: this.component },
        reportingComponent: REPORTING_COMPONENT,
        reportingInstance: this.instance,
      });
      this.touch(key, { namespace, name, count: 1, lastSeen: now });
    } catch (error) {
      this.logger.warn(
        {
          err: error,
          kind: target.kind,
          object: target.namespace !== undefined ? `${target.namespace}/${target.name}` : target.name,
          reason,
        },
        "could not record event",
      );
    }
  }

  /** Keeps the tracking map in least-recently-used order and bounded. */
  private touch(key: string, tracked: Tracked): void {
    this.recent.delete(key);
    this.recent.set(key, tracked);
    if (this.recent.size > MAX_TRACKED) {
      const oldest = this.recent.keys().next();
      if (oldest.done !== true) this.recent.delete(oldest.value);
    }
  }
}
