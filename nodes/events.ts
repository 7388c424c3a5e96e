// core/v1 Events about Nodes, recorded the way kubelet and the stock CCM do (namespace
// `default`, involvedObject.uid = node name) so `kubectl describe node` shows them. Repeats of
// the same event within 10 minutes bump `count` instead of creating new objects, like
// client-go's correlator, so a Node failing in a loop does not flood etcd.

import * as os from "node:os";

import type { CoreV1Event } from "@kubernetes/client-node";
import type { Logger } from "pino";

import type { NodeApi } from "./kube";

export const EVENT_NAMESPACE = "default";
export const REPORTING_COMPONENT = "dccm";
export const SOURCE_COMPONENT = "dccm-node-controller";

const AGGREGATE_WINDOW_MS = 10 * 60_000;
const MAX_TRACKED = 4096;

export type EventType = "Normal" | "Warning";

interface Tracked {
    readonly name: string;
    count: number;
    lastSeen: number;
}

export class NodeEventRecorder {
    private readonly api: NodeApi;
    private readonly logger: Logger;
    private readonly instance: string;
    private readonly now: () => number;
    private readonly recent = new Map<string, Tracked>();
    private seq = 0;

    constructor(api: NodeApi, logger: Logger, opts: { reportingInstance?: string; now?: () => number } = {}) {
        this.api = api;
        this.logger = logger;
        this.instance = opts.reportingInstance ?? os.hostname();
        this.now = opts.now ?? Date.now;
    }

    /** Records an event; failures are logged, never thrown (an event is not worth a retry). */
    async record(nodeName: string, type: EventType, reason: string, message: string): Promise<void> {
        const key = `${nodeName}\u0000${type}\u0000${reason}\u0000${message}`;
        const now = this.now();
        const seen = this.recent.get(key);
        try {
            if (seen !== undefined && now - seen.lastSeen < AGGREGATE_WINDOW_MS) {
                const res = await this.api.patchEvent(EVENT_NAMESPACE, seen.name, { count: seen.count + 1, lastTimestamp: new Date(now), message });
                if (res === "ok") {
                    seen.count++;
                    seen.lastSeen = now;
                    this.touch(key, seen);
                    return;
                }
            }
            const name = `${nodeName}.${(BigInt(now) * 1_000_000n + BigInt(this.seq++ % 1_000_000)).toString(16)}`;
            const ts = new Date(now);
            const event: CoreV1Event = {
                metadata: { name, namespace: EVENT_NAMESPACE },
                // uid = name: what kubelet uses, and what `kubectl describe node` matches on.
                involvedObject: { apiVersion: "v1", kind: "Node", name: nodeName, uid: nodeName },
                type,
                reason,
                message,
                count: 1,
                firstTimestamp: ts,
                lastTimestamp: ts,
                source: { component: SOURCE_COMPONENT },
                reportingComponent: REPORTING_COMPONENT,
                reportingInstance: this.instance,
            };
            await this.api.createEvent(EVENT_NAMESPACE, event);
            this.touch(key, { name, count: 1, lastSeen: now });
        } catch (err) {
            this.logger.warn({ err, node: nodeName, reason }, "could not record event");
        }
    }

    private touch(key: string, t: Tracked): void {
        this.recent.delete(key);
        this.recent.set(key, t);
        if (this.recent.size > MAX_TRACKED) {
            const oldest = this.recent.keys().next();
            if (oldest.done !== true) {
                this.recent.delete(oldest.value);
            }
        }
    }
}
