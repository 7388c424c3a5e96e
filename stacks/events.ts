/**
 * What the engine's events of a run say: which resources it changed (an up's PutBack list) and each
 * step's metadata (a preview's plan). Read here so that no caller above stacks/ parses the
 * Automation API's event types.
 */
import type { EngineEvent, StepEventMetadata } from "@pulumi/pulumi/automation";
import { nameFromUrn } from "../model";

/** A step's metadata as the engine reports it (what a preview's callers plan with). */
export type { StepEventMetadata };

/** A resource a run changed. */
export interface PutBack {
  urn: string;
  type: string;
  name: string;
  op: string;
}

const CHANGING_OPS = new Set(["create", "update", "replace", "delete", "create-replacement", "delete-replaced"]);

/** The resource an event's step changes (create/update/replace/delete); undefined for any other event or step. */
export function changedResource(event: EngineEvent): PutBack | undefined {
  const metadata = event.resourcePreEvent?.metadata;
  if (metadata === undefined || !CHANGING_OPS.has(metadata.op)) return undefined;
  return { urn: metadata.urn, type: metadata.type, name: nameFromUrn(metadata.urn), op: metadata.op };
}

/** An event handler telling `onStep` of every step's metadata, as it is about to run (or would, in a preview). */
export function stepListener(onStep: (metadata: StepEventMetadata) => void): (event: EngineEvent) => void {
  return (event) => {
    const metadata = event.resourcePreEvent?.metadata;
    if (metadata !== undefined) onStep(metadata);
  };
}
