/**
 * What every stack last applied, as the drift pass compares it with GCE (drift/declared.ts): fed by
 * the engine itself, whatever the backend. After a restart, from each stack's deployment when the
 * daemon first reads it (StackRunner.inspect: the checkpoint file or one `stack export`); after each
 * run, from the run's own engine events (every resource's state, changed or not). A stack whose
 * last run failed is unknown until it succeeds: its retries are the queue's business, not a pass's.
 */
import { type ResourceState, deploymentStates } from "../stacks/states";
import { appliedResource, type AppliedResource } from "./declared";

/** Pure: the GCE resources among the engine's states, as the drift pass compares them. */
export function appliedOf(states: readonly ResourceState[]): AppliedResource[] {
  return states.flatMap((state) => {
    const applied = appliedResource(state.type, state.id, state.inputs);
    return applied === undefined ? [] : [applied];
  });
}

/** Pure: the GCE resources an exported deployment records; undefined when a run left pending operations (unknown). */
export function appliedFromDeployment(deployment: Record<string, unknown>): AppliedResource[] | undefined {
  const states = deploymentStates(deployment);
  return states === undefined ? undefined : appliedOf(states);
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
    for (const [stack, entry] of this.stacks)
      if (entry.resources !== undefined) out.push({ stack, resources: entry.resources, generation: entry.generation });
    return out;
  }
}
