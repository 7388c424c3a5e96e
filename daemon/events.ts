/**
 * core/v1 Events for any object. Repeats of one event within 10 minutes bump `count` instead of
 * creating new objects (client-go's correlator does the same), so a failure loop does not flood etcd.
 */
import * as os from "node:os";
import * as k8s from "@kubernetes/client-node";
import type { Logger } from "pino";

export type EventType = "Normal" | "Warning";

export interface EventTarget {
  kind: "Service" | "Node";
  namespace?: string;
  name: string;
  uid: string;
}

const AGGREGATE_WINDOW_MS = 10 * 60_000;
const MAX_TRACKED = 4096;

interface Tracked {
  namespace: string;
  name: string;
  count: number;
  lastSeen: number;
}

export class EventRecorder {
  private readonly recent = new Map<string, Tracked>();
  private sequence = 0;
  private readonly instance: string;

  constructor(
    private readonly core: k8s.CoreV1Api,
    private readonly logger: Logger,
    private readonly component: string,
    opts: { reportingInstance?: string; now?: () => number } = {},
  ) {
    this.instance = opts.reportingInstance ?? os.hostname();
    this.now = opts.now ?? Date.now;
  }

  private readonly now: () => number;

  /** Never throws: an event is not worth failing a reconcile for. */
  async record(target: EventTarget, type: EventType, reason: string, message: string): Promise<void> {
    // Nodes are cluster-scoped; their events live in `default`, as kubelet's do.
    const namespace = target.namespace ?? "default";
    const key = `${target.kind}\u0000${namespace}\u0000${target.name}\u0000${type}\u0000${reason}\u0000${message}`;
    const now = this.now();
    const seen = this.recent.get(key);
    try {
      if (seen !== undefined && now - seen.lastSeen < AGGREGATE_WINDOW_MS) {
        try {
          await this.core.patchNamespacedEvent(
            { name: seen.name, namespace: seen.namespace, body: { count: seen.count + 1, lastTimestamp: new Date(now) } },
            k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch),
          );
          seen.count++;
          seen.lastSeen = now;
          this.touch(key, seen);
          return;
        } catch (error) {
          if (!(error instanceof k8s.ApiException && error.code === 404)) throw error;
        }
      }
      const name = `${target.name}.${now.toString(16)}${(this.sequence++ % 4096).toString(16).padStart(3, "0")}`;
      const timestamp = new Date(now);
      await this.core.createNamespacedEvent({
        namespace,
        body: {
          metadata: { name, namespace },
          involvedObject: {
            apiVersion: "v1",
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
          reportingComponent: "dccm",
          reportingInstance: this.instance,
        },
      });
      this.touch(key, { namespace, name, count: 1, lastSeen: now });
    } catch (error) {
      this.logger.warn({ err: error, kind: target.kind, object: `${namespace}/${target.name}`, reason }, "could not record event");
    }
  }

  private touch(key: string, tracked: Tracked): void {
    this.recent.delete(key);
    this.recent.set(key, tracked);
    if (this.recent.size > MAX_TRACKED) {
      const oldest = this.recent.keys().next();
      if (oldest.done !== true) this.recent.delete(oldest.value);
    }
  }
}
