/**
 * The resource states the engine recorded, raw: after a restart from a stack's deployment, after a
 * run from the run's own engine events (every resource's state, changed or not). The runner hands
 * them out (`onApplied`); what they mean to the drift pass is drift/applied.ts's business.
 */
import type { StepEventStateMetadata } from "@pulumi/pulumi/automation";
import { isRecord } from "../runtime/guards";

/** One custom resource as the engine recorded it. */
export interface ResourceState {
  type: string;
  id: unknown;
  inputs: Record<string, unknown>;
}

/** Pure: the custom resources an exported deployment records; undefined when a run left pending operations (unknown). */
export function deploymentStates(deployment: Record<string, unknown>): ResourceState[] | undefined {
  if (Array.isArray(deployment.pending_operations) && deployment.pending_operations.length > 0) return undefined;
  const resources = Array.isArray(deployment.resources) ? deployment.resources : [];
  return resources.flatMap((resource: unknown) => {
    if (
      !isRecord(resource) ||
      resource.custom !== true ||
      typeof resource.type !== "string" ||
      resource.delete === true
    )
      return [];
    return [{ type: resource.type, id: resource.id, inputs: isRecord(resource.inputs) ? resource.inputs : {} }];
  });
}

/**
 * The resource states of one run's engine events (resOutputsEvent), in order: the last state of
 * each URN stands; a resource the run deleted (op `delete`, gone from the program) is dropped.
 */
export class RunStates {
  private readonly states = new Map<string, StepEventStateMetadata>();

  /** The engine's JSON events hold `null` where a step has no old or new state (a refresh of a deleted resource has no new one). */
  record(
    op: string,
    state: StepEventStateMetadata | null | undefined,
    old: StepEventStateMetadata | null | undefined,
  ): void {
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

  resources(): ResourceState[] {
    return [...this.states.values()].flatMap((state) =>
      state.custom === true ? [{ type: state.type, id: state.id, inputs: state.inputs }] : [],
    );
  }
}
