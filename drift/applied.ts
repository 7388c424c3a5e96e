/**
 * What every stack last applied, as the drift pass compares it with GCE (drift/declared.ts): fed by
 * the engine itself, whatever the backend. After a restart, from each stack's deployment when the
 * daemon first reads it (StackRunner.inspect: the checkpoint file or one `stack export`); after each
 * run, from the run's own engine events (every resource's state, changed or not). A stack whose
 * last run failed is unknown until it succeeds: its retries are the queue's business, not a pass's.
 */
import type { StepEventStateMetadata } from "@pulumi/pulumi/automation";
import { isRecord } from "../controller/guards";
import { appliedResource, type AppliedResource } from "./declared";

/** Pure: the GCE resources an exported deployment records; undefined when a run left pending operations (unknown). */
export function appliedFromDeployment(deployment: Record<string, unknown>): AppliedResource[] | undefined {
  if (Array.isArray(deployment.pending_operations) && deployment.pending_operations.length > 0) return undefined;
  const resources = Array.isArray(deployment.resources) ? deployment.resources : [];
  return resources.flatMap((resource: unknown) => {
    if (!isRecord(resource) || resource.custom !== true || typeof resource.type !== "string" || resource.delete === true) return [];
    const applied = appliedResource(resource.type, resource.id, isRecord(resource.inputs) ? resource.inputs : {});
    return applied === undefined ? [] : [applied];
  });
}

/**
 * The resource states of one run's engine events (resOutputsEvent), in order: the last state of
 * each URN stands; a resource the run deleted (op `delete`, gone from the program) is dropped.
 */
export class AppliedSteps {
  private readonly states = new Map<string, StepEventStateMetadata>();

  /** The engine's JSON events hold `null` where a step has no old or new state (a refresh of a deleted resource has no new one). */
  record(op: string, state: StepEventStateMetadata | null | undefined, old: StepEventStateMetadata | null | undefined): void {
    if (op === "delete" || op === "discard") {
      if (old !== null && old !== undefined) this.states.delete(old.urn);
      return;
    }
    // delete-replaced reports the old state of a resource whose replacement is already recorded.
    if (op === "delete-replaced") return;
    if (state === null || state === undefined) {
      // A refresh found it gone: the update that follows creates it again (a later event), or the run fails.
      if (old !== null && old !== undefined) this.states.delete(old.urn);
      return;
    }
    this.states.set(state.urn, state);
  }

  resources(): AppliedResource[] {
    return [...this.states.values()].flatMap((state) => {
      if (state.custom !== true) return [];
      const applied = appliedResource(state.type, state.id, state.inputs);
      return applied === undefined ? [] : [applied];
    });
  }
}

interface BookEntry {
  /** undefined: unknown (a run failed, or left pending operations). */
  resources: AppliedResource[] | undefined;
  /** Bumped by every change, so a pass can tell a stack that ran while GCE was being listed. */
  generation: number;
}

export interface AppliedSnapshot {
  stack: string;
  resources: AppliedResource[];
  generation: number;
}

export class AppliedBook {
  private readonly stacks = new Map<string, BookEntry>();
  private generations = 0;

  set(stack: string, resources: AppliedResource[] | undefined): void {
    this.stacks.set(stack, { resources, generation: ++this.generations });
  }

  forget(stack: string): void {
    this.stacks.delete(stack);
  }

  generation(stack: string): number | undefined {
    return this.stacks.get(stack)?.generation;
  }

  /** The stacks whose applied resources are known, as they are now. */
  snapshot(): AppliedSnapshot[] {
    const out: AppliedSnapshot[] = [];
    for (const [stack, entry] of this.stacks) if (entry.resources !== undefined) out.push({ stack, resources: entry.resources, generation: entry.generation });
    return out;
  }
}
