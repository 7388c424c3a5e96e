// The thin Kubernetes adapter of the node controller: the handful of writes it performs, behind
// an interface so unit tests and the benchmark can substitute an in-memory API. Errors come back
// classified (conflict / not found / other) because the controller's retry logic depends on it.

import * as https from "node:https";

import {
    ApiException,
    type ConfigurationOptions,
    CoreV1Api,
    type CoreV1Event,
    type KubeConfig,
    Observable,
    type ObservableMiddleware,
    PatchStrategy,
    type RequestContext,
    type ResponseContext,
    type V1Node,
    type V1NodeAddress,
    type V1NodeCondition,
    type V1Taint,
    setHeaderOptions,
} from "@kubernetes/client-node";

import type { NodeMergePatch } from "./decide";

export interface NodeApi {
    /** Fresh read from the apiserver (used after a conflict); undefined when the Node is gone. */
    getNode(name: string): Promise<V1Node | undefined>;
    /**
     * Merge-patches labels / providerID / taints with `resourceVersion` as precondition: throws
     * KubeConflictError when the Node changed since that version, so the caller re-reads.
     */
    patchNode(name: string, resourceVersion: string, patch: NodeMergePatch): Promise<V1Node>;
    /**
     * Replaces `status.addresses` wholesale (merge patch on the status subresource) and returns
     * the updated Node, whose resourceVersion the following update must use.
     */
    setNodeAddresses(name: string, addresses: readonly V1NodeAddress[]): Promise<V1Node>;
    /** Upserts one condition by type (strategic merge patch on the status subresource). */
    setNodeCondition(name: string, condition: V1NodeCondition): Promise<void>;
    /**
     * Deletes with preconditions so a Node that changed since we decided (became Ready, was
     * recreated) is not deleted. `conflict` when a precondition failed, `gone` when already gone.
     */
    deleteNode(name: string, preconditions: { uid: string; resourceVersion: string }): Promise<"deleted" | "gone" | "conflict">;
    createEvent(namespace: string, event: CoreV1Event): Promise<void>;
    /** Bumps count/lastTimestamp of an existing Event; `gone` when it expired. */
    patchEvent(namespace: string, name: string, patch: { count: number; lastTimestamp: Date; message: string }): Promise<"ok" | "gone">;
    /** Releases pooled connections; the API stays usable (pools are rebuilt on demand). */
    close?(): void;
}

export class KubeConflictError extends Error {
    override readonly name = "KubeConflictError";
}

export function kubeStatusCode(err: unknown): number | undefined {
    if (err instanceof ApiException) {
        return (err as ApiException<unknown>).code;
    }
    if (typeof err === "object" && err !== null) {
        const e = err as { code?: unknown; statusCode?: unknown };
        if (typeof e.code === "number") {
            return e.code;
        }
        if (typeof e.statusCode === "number") {
            return e.statusCode;
        }
    }
    return undefined;
}

const FIELD_MANAGER = "dccm-node-controller";
// Rebuilt now and then so rotated client certificates (exec plugins, kubelet-style cert files)
// are picked up; token auth is a per-request header and unaffected.
const AGENT_MAX_AGE_MS = 10 * 60_000;

/**
 * @kubernetes/client-node 1.x gives every request a new https.Agent, so every call pays a TCP and
 * TLS handshake on both ends: measured, that was most of the CPU when initializing 500 Nodes.
 * This middleware swaps in one keep-alive agent built from the same kubeconfig TLS material. It
 * runs after the client applied authentication, so auth headers are untouched. Proxied or plain
 * http clusters keep the library's own agent.
 */
class KeepAliveAgents {
    private readonly kubeConfig: KubeConfig;
    private current: { agent: https.Agent; createdAt: number } | undefined;
    private pending: Promise<https.Agent | undefined> | undefined;

    constructor(kubeConfig: KubeConfig) {
        this.kubeConfig = kubeConfig;
    }

    middleware(): ObservableMiddleware {
        return {
            pre: (ctx: RequestContext) => new Observable(this.agent().then((agent) => {
                if (agent !== undefined) {
                    ctx.setAgent(agent);
                }
                return ctx;
            })),
            post: (res: ResponseContext) => new Observable(Promise.resolve(res)),
        };
    }

    destroy(): void {
        this.current?.agent.destroy();
        this.current = undefined;
    }

    private async agent(): Promise<https.Agent | undefined> {
        const cluster = this.kubeConfig.getCurrentCluster();
        if (cluster === null || !cluster.server.startsWith("https:") || (cluster.proxyUrl ?? "") !== "") {
            return undefined;
        }
        const cur = this.current;
        if (cur !== undefined && Date.now() - cur.createdAt < AGENT_MAX_AGE_MS) {
            return cur.agent;
        }
        this.pending ??= this.build().finally(() => {
            this.pending = undefined;
        });
        return this.pending;
    }

    private async build(): Promise<https.Agent | undefined> {
        const opts: https.RequestOptions = {};
        await this.kubeConfig.applyToHTTPSOptions(opts);
        const agent = new https.Agent({
            keepAlive: true,
            maxSockets: 32,
            ...(opts.ca === undefined ? {} : { ca: opts.ca }),
            ...(opts.cert === undefined ? {} : { cert: opts.cert }),
            ...(opts.key === undefined ? {} : { key: opts.key }),
            ...(opts.pfx === undefined ? {} : { pfx: opts.pfx }),
            ...(opts.passphrase === undefined ? {} : { passphrase: opts.passphrase }),
            ...(opts.servername === undefined ? {} : { servername: opts.servername }),
            ...(opts.rejectUnauthorized === undefined ? {} : { rejectUnauthorized: opts.rejectUnauthorized }),
        });
        const old = this.current;
        this.current = { agent, createdAt: Date.now() };
        if (old !== undefined) {
            // Let requests in flight on the old agent finish before closing its sockets.
            setTimeout(() => old.agent.destroy(), 60_000).unref();
        }
        return agent;
    }
}

/** NodeApi over a real apiserver. */
export class KubeNodeApi implements NodeApi {
    private readonly core: CoreV1Api;
    private readonly agents: KeepAliveAgents;
    private readonly plain: ConfigurationOptions<ObservableMiddleware>;
    private readonly merge: ConfigurationOptions<ObservableMiddleware>;
    private readonly strategic: ConfigurationOptions<ObservableMiddleware>;

    constructor(kubeConfig: KubeConfig) {
        this.core = kubeConfig.makeApiClient(CoreV1Api);
        this.agents = new KeepAliveAgents(kubeConfig);
        this.plain = { middleware: [this.agents.middleware()], middlewareMergeStrategy: "append" };
        this.merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch, this.plain);
        this.strategic = setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch, this.plain);
    }

    /** Closes pooled connections (the controller calls it on stop). */
    close(): void {
        this.agents.destroy();
    }

    async getNode(name: string): Promise<V1Node | undefined> {
        try {
            return await this.core.readNode({ name }, this.plain);
        } catch (err) {
            if (kubeStatusCode(err) === 404) {
                return undefined;
            }
            throw wrap(`get node ${name}`, err);
        }
    }

    async patchNode(name: string, resourceVersion: string, patch: NodeMergePatch): Promise<V1Node> {
        const spec: Record<string, unknown> = {};
        if (patch.providerID !== undefined) {
            spec["providerID"] = patch.providerID;
        }
        if (patch.taints !== undefined) {
            spec["taints"] = patch.taints === null ? null : patch.taints.map(serializeTaint);
        }
        const metadata: Record<string, unknown> = { resourceVersion };
        if (patch.labels !== undefined) {
            metadata["labels"] = patch.labels;
        }
        try {
            return await this.core.patchNode({ name, body: { metadata, spec }, fieldManager: FIELD_MANAGER }, this.merge);
        } catch (err) {
            if (kubeStatusCode(err) === 409) {
                throw new KubeConflictError(`update node ${name}: conflict`, { cause: err });
            }
            throw wrap(`update node ${name}`, err);
        }
    }

    async setNodeAddresses(name: string, addresses: readonly V1NodeAddress[]): Promise<V1Node> {
        try {
            // A merge patch replaces the list: a strategic merge keyed by `type` would fold two
            // InternalIPs (IPv4 + IPv6) into one.
            return await this.core.patchNodeStatus({ name, body: { status: { addresses } }, fieldManager: FIELD_MANAGER }, this.merge);
        } catch (err) {
            throw wrap(`patch node ${name} status.addresses`, err);
        }
    }

    async setNodeCondition(name: string, condition: V1NodeCondition): Promise<void> {
        try {
            // Strategic merge keyed by `type`: the kubelet's own conditions stay untouched.
            const body = { status: { conditions: [serializeCondition(condition)] } };
            await this.core.patchNodeStatus({ name, body, fieldManager: FIELD_MANAGER }, this.strategic);
        } catch (err) {
            throw wrap(`patch node ${name} condition ${condition.type}`, err);
        }
    }

    async deleteNode(name: string, preconditions: { uid: string; resourceVersion: string }): Promise<"deleted" | "gone" | "conflict"> {
        try {
            await this.core.deleteNode({ name, body: { preconditions } }, this.plain);
            return "deleted";
        } catch (err) {
            const code = kubeStatusCode(err);
            if (code === 404) {
                return "gone";
            }
            if (code === 409) {
                return "conflict";
            }
            throw wrap(`delete node ${name}`, err);
        }
    }

    async createEvent(namespace: string, event: CoreV1Event): Promise<void> {
        try {
            await this.core.createNamespacedEvent({ namespace, body: event }, this.plain);
        } catch (err) {
            throw wrap(`create event ${event.metadata.name ?? ""}`, err);
        }
    }

    async patchEvent(namespace: string, name: string, patch: { count: number; lastTimestamp: Date; message: string }): Promise<"ok" | "gone"> {
        try {
            const body = { count: patch.count, lastTimestamp: patch.lastTimestamp.toISOString(), message: patch.message };
            await this.core.patchNamespacedEvent({ name, namespace, body }, this.merge);
            return "ok";
        } catch (err) {
            if (kubeStatusCode(err) === 404) {
                return "gone";
            }
            throw wrap(`patch event ${name}`, err);
        }
    }
}

/** Patch bodies are sent as-is (type `any`), so Dates must be made strings here. */
function serializeTaint(t: V1Taint): Record<string, string> {
    const out: Record<string, string> = { key: t.key, effect: t.effect };
    if (t.value !== undefined) {
        out["value"] = t.value;
    }
    const added: Date | string | undefined = t.timeAdded;
    if (added !== undefined) {
        out["timeAdded"] = added instanceof Date ? added.toISOString().replace(/\.\d{3}Z$/, "Z") : added;
    }
    return out;
}

function serializeCondition(c: V1NodeCondition): Record<string, string> {
    const out: Record<string, string> = { type: c.type, status: c.status };
    if (c.reason !== undefined) {
        out["reason"] = c.reason;
    }
    if (c.message !== undefined) {
        out["message"] = c.message;
    }
    for (const key of ["lastHeartbeatTime", "lastTransitionTime"] as const) {
        const v: Date | string | undefined = c[key];
        if (v !== undefined) {
            out[key] = v instanceof Date ? v.toISOString().replace(/\.\d{3}Z$/, "Z") : v;
        }
    }
    return out;
}

function wrap(what: string, err: unknown): Error {
    const code = kubeStatusCode(err);
    const detail = err instanceof ApiException ? apiMessage(err as ApiException<unknown>) : err instanceof Error ? err.message : String(err);
    return new Error(`${what}: ${code === undefined ? "" : `HTTP ${code}: `}${detail}`, { cause: err });
}

function apiMessage(err: ApiException<unknown>): string {
    const body: unknown = err.body;
    if (typeof body === "string") {
        try {
            const parsed = JSON.parse(body) as unknown;
            if (typeof parsed === "object" && parsed !== null && typeof (parsed as { message?: unknown }).message === "string") {
                return (parsed as { message: string }).message;
            }
        } catch {
            return body.slice(0, 300);
        }
    }
    if (typeof body === "object" && body !== null && typeof (body as { message?: unknown }).message === "string") {
        return (body as { message: string }).message;
    }
    return err.message.slice(0, 300);
}
