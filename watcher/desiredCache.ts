/**
 * Keeps the latest desired state of the watched cluster and tells which stacks it changed: each
 * stack's slice is hashed, so an update that changes nothing a stack declares triggers nothing.
 */
import * as crypto from "node:crypto";
import {
  CLUSTER_STACK,
  desiredState,
  NOTHING_OBSERVED,
  serviceStackName,
  type ClusterSnapshot,
  type Config,
  type DesiredState,
  type ObservedCloud,
  type Rejection,
  type ServiceDesired,
} from "../model";
import { locateNodes, type LocatedNode } from "../model/desired";

export interface StackChange {
  stack: string;
  /** Hash of what the stack declares now; undefined when the stack should no longer exist. */
  hash: string | undefined;
}

export function hashOf(value: unknown): string {
  return crypto.createHash("sha256").update(JSON.stringify(value)).digest("hex").slice(0, 32);
}

export interface StackView {
  desired: DesiredState;
  service?: ServiceDesired;
  rejections: Rejection[];
  hash: string | undefined;
}

export class DesiredCache {
  private current: DesiredState | undefined;
  private hashes = new Map<string, string>();
  private serviceIndex = new Map<string, ServiceDesired>();
  private rejectionIndex = new Map<string, Rejection[]>();
  private snapshot: ClusterSnapshot | undefined;
  private observed: ObservedCloud = NOTHING_OBSERVED;

  constructor(private readonly config: Config) {}

  /** Recomputes from `snapshot` and returns the stacks whose hash changed (appeared, changed or vanished). */
  update(snapshot: ClusterSnapshot): StackChange[] {
    this.snapshot = snapshot;
    return this.recompute();
  }

  /** Recomputes with a new observation of GCE and of the applied stacks (before the first snapshot: kept for it). */
  observe(observed: ObservedCloud): StackChange[] {
    this.observed = observed;
    return this.snapshot === undefined ? [] : this.recompute();
  }

  lastObserved(): ObservedCloud {
    return this.observed;
  }

  /** Every Node whose instance is known, gone or not: what the daemon asks Compute about. */
  locatedNodes(): LocatedNode[] {
    return this.snapshot === undefined ? [] : locateNodes(this.snapshot.nodes, this.config);
  }

  private recompute(): StackChange[] {
    if (this.snapshot === undefined) throw new Error("desired state computed before the first snapshot");
    const desired = desiredState(this.snapshot, this.config, this.observed);
    const hashes = new Map<string, string>();
    const services = new Map<string, ServiceDesired>();
    const rejections = new Map<string, Rejection[]>();
    hashes.set(CLUSTER_STACK, hashOf(desired.cluster));
    for (const service of desired.services) {
      hashes.set(service.stack, hashOf(service));
      services.set(service.stack, service);
    }
    for (const rejection of desired.rejected) {
      const [namespace, name] = rejection.service.split("/");
      const stack = serviceStackName(namespace, name);
      const list = rejections.get(stack) ?? [];
      list.push(rejection);
      rejections.set(stack, list);
    }
    for (const [stack, list] of rejections) hashes.set(stack, hashOf({ rejected: list.map((r) => r.message) }));

    const changes: StackChange[] = [];
    for (const [stack, hash] of hashes) {
      if (this.hashes.get(stack) !== hash) changes.push({ stack, hash });
    }
    for (const stack of this.hashes.keys()) {
      if (!hashes.has(stack)) changes.push({ stack, hash: undefined });
    }
    this.current = desired;
    this.hashes = hashes;
    this.serviceIndex = services;
    this.rejectionIndex = rejections;
    return changes.sort((a, b) => (a.stack < b.stack ? -1 : a.stack > b.stack ? 1 : 0));
  }

  desired(): DesiredState {
    if (this.current === undefined) throw new Error("desired state read before the first snapshot");
    return this.current;
  }

  view(stack: string): StackView {
    return {
      desired: this.desired(),
      ...(this.serviceIndex.has(stack) ? { service: this.serviceIndex.get(stack) } : {}),
      rejections: this.rejectionIndex.get(stack) ?? [],
      hash: this.hashes.get(stack),
    };
  }

  stacks(): string[] {
    return [...this.hashes.keys()].sort();
  }
}

/** Re-exported: the stack name rules live with the other names (model/names.ts). */
export { parseServiceStack } from "../model";
