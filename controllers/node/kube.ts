// The thin Kubernetes adapter of the node controller: the handful of writes it performs, behind
// an interface so unit tests and the benchmark can substitute an in-memory API. Errors come back
// classified (conflict / not found / other) because the controller's retry logic depends on it.

import {
  CoreV1Api,
  type CoreV1Event,
  type KubeConfig,
  PatchStrategy,
  type V1Node,
  type V1NodeAddress,
  type V1NodeCondition,
  setHeaderOptions,
} from "@kubernetes/client-node";

import { CoreV1EventSink, type EventPatch, type EventSink } from "../../runtime/events";
import { KeepAliveAgents, kubeError, kubeStatusCode } from "../../runtime/kube";
import type { NodeTaint } from "../../watcher/trim";
import type { NodeMergePatch } from "./decide";

/** The Node writes, plus the Event writes of the shared recorder (runtime/events.ts). */
export interface NodeApi extends EventSink {
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
  deleteNode(
    name: string,
    preconditions: { uid: string; resourceVersion: string },
  ): Promise<"deleted" | "gone" | "conflict">;
  /** Releases pooled connections; the API stays usable (pools are rebuilt on demand). */
  close?(): void;
}

export class KubeConflictError extends Error {
  override readonly name = "KubeConflictError";
}

const FIELD_MANAGER = "dccm-node-controller";

/** NodeApi over a real apiserver. */
export class KubeNodeApi implements NodeApi {
  private readonly core: CoreV1Api;
  private readonly agents: KeepAliveAgents;
  private readonly events: EventSink;
  private readonly merge = setHeaderOptions("Content-Type", PatchStrategy.MergePatch);
  private readonly strategic = setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch);

  constructor(kubeConfig: KubeConfig) {
    this.agents = new KeepAliveAgents(kubeConfig);
    // Every call, patches included (setHeaderOptions appends), goes through the keep-alive agent.
    this.core = this.agents.makeApiClient(CoreV1Api);
    this.events = new CoreV1EventSink(this.core);
  }

  /** Closes pooled connections (the controller calls it on stop). */
  close(): void {
    this.agents.destroy();
  }

  async getNode(name: string): Promise<V1Node | undefined> {
    try {
      return await this.core.readNode({ name });
    } catch (err) {
      if (kubeStatusCode(err) === 404) {
        return undefined;
      }
      throw kubeError(`get node ${name}`, err);
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
    if (patch.podCIDRs !== undefined) {
      spec["podCIDR"] = patch.podCIDRs[0];
      spec["podCIDRs"] = patch.podCIDRs;
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
      throw kubeError(`update node ${name}`, err);
    }
  }

  async setNodeAddresses(name: string, addresses: readonly V1NodeAddress[]): Promise<V1Node> {
    try {
      // A merge patch replaces the list: a strategic merge keyed by `type` would fold two
      // InternalIPs (IPv4 + IPv6) into one.
      return await this.core.patchNodeStatus(
        { name, body: { status: { addresses } }, fieldManager: FIELD_MANAGER },
        this.merge,
      );
    } catch (err) {
      throw kubeError(`patch node ${name} status.addresses`, err);
    }
  }

  async setNodeCondition(name: string, condition: V1NodeCondition): Promise<void> {
    try {
      // Strategic merge keyed by `type`: the kubelet's own conditions stay untouched.
      const body = { status: { conditions: [serializeCondition(condition)] } };
      await this.core.patchNodeStatus({ name, body, fieldManager: FIELD_MANAGER }, this.strategic);
    } catch (err) {
      throw kubeError(`patch node ${name} condition ${condition.type}`, err);
    }
  }

  async deleteNode(
    name: string,
    preconditions: { uid: string; resourceVersion: string },
  ): Promise<"deleted" | "gone" | "conflict"> {
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
      throw kubeError(`delete node ${name}`, err);
    }
  }

  createEvent(namespace: string, event: CoreV1Event): Promise<void> {
    return this.events.createEvent(namespace, event);
  }

  patchEvent(namespace: string, name: string, patch: EventPatch): Promise<"ok" | "gone"> {
    return this.events.patchEvent(namespace, name, patch);
  }
}

/** Patch bodies are sent as-is (type `any`); Kubernetes times have whole seconds. */
function serializeTaint(t: NodeTaint): Record<string, string> {
  const out: Record<string, string> = { key: t.key, effect: t.effect };
  if (t.value !== undefined) {
    out["value"] = t.value;
  }
  if (t.timeAdded !== undefined) {
    out["timeAdded"] = t.timeAdded.replace(/\.\d{3}Z$/, "Z");
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
