// The thin Kubernetes adapter of the node controller: the handful of writes it performs, behind
// an interface so unit tests and the benchmark can substitute an in-memory API. Errors come back
// classified (conflict / not found / other) because the controller's retry logic depends on it.

import {
    ApiException,
    CoreV1Api,
    type CoreV1Event,
    type KubeConfig,
    PatchStrategy,
    type V1Node,
    type V1NodeAddress,
    type V1NodeCondition,
    setHeaderOptions,
} from "@kubernetes/client-node";

export interface NodeApi {
    /** Fresh read from the apiserver (used after a conflict); undefined when the Node is gone. */
    getNode(name: string): Promise<V1Node | undefined>;
    /** PUT with the object's resourceVersion: throws KubeConflictError when it is stale. */
    replaceNode(node: V1Node): Promise<V1Node>;
    /** Replaces `status.addresses` wholesale (merge patch on the status subresource). */
    setNodeAddresses(name: string, addresses: readonly V1NodeAddress[]): Promise<void>;
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

const MERGE = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
const STRATEGIC = setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch);
const FIELD_MANAGER = "dccm-node-controller";

/** NodeApi over a real apiserver. */
export class KubeNodeApi implements NodeApi {
    private readonly core: CoreV1Api;

    constructor(kubeConfig: KubeConfig) {
        this.core = kubeConfig.makeApiClient(CoreV1Api);
    }

    async getNode(name: string): Promise<V1Node | undefined> {
        try {
            return await this.core.readNode({ name });
        } catch (err) {
            if (kubeStatusCode(err) === 404) {
                return undefined;
            }
            throw wrap(`get node ${name}`, err);
        }
    }

    async replaceNode(node: V1Node): Promise<V1Node> {
        const name = node.metadata?.name ?? "";
        try {
            return await this.core.replaceNode({ name, body: node, fieldManager: FIELD_MANAGER });
        } catch (err) {
            if (kubeStatusCode(err) === 409) {
                throw new KubeConflictError(`update node ${name}: conflict`, { cause: err });
            }
            throw wrap(`update node ${name}`, err);
        }
    }

    async setNodeAddresses(name: string, addresses: readonly V1NodeAddress[]): Promise<void> {
        try {
            // A merge patch replaces the list: a strategic merge keyed by `type` would fold two
            // InternalIPs (IPv4 + IPv6) into one.
            await this.core.patchNodeStatus({ name, body: { status: { addresses } }, fieldManager: FIELD_MANAGER }, MERGE);
        } catch (err) {
            throw wrap(`patch node ${name} status.addresses`, err);
        }
    }

    async setNodeCondition(name: string, condition: V1NodeCondition): Promise<void> {
        try {
            // Strategic merge keyed by `type`: the kubelet's own conditions stay untouched.
            const body = { status: { conditions: [serializeCondition(condition)] } };
            await this.core.patchNodeStatus({ name, body, fieldManager: FIELD_MANAGER }, STRATEGIC);
        } catch (err) {
            throw wrap(`patch node ${name} condition ${condition.type}`, err);
        }
    }

    async deleteNode(name: string, preconditions: { uid: string; resourceVersion: string }): Promise<"deleted" | "gone" | "conflict"> {
        try {
            await this.core.deleteNode({ name, body: { preconditions } });
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
            await this.core.createNamespacedEvent({ namespace, body: event });
        } catch (err) {
            throw wrap(`create event ${event.metadata.name ?? ""}`, err);
        }
    }

    async patchEvent(namespace: string, name: string, patch: { count: number; lastTimestamp: Date; message: string }): Promise<"ok" | "gone"> {
        try {
            const body = { count: patch.count, lastTimestamp: patch.lastTimestamp.toISOString(), message: patch.message };
            await this.core.patchNamespacedEvent({ name, namespace, body }, MERGE);
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
