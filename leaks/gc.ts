/**
 * `dccm gc`: what an operator confirmed, checked against a fresh leak check (pure), and the text it
 * prints. Only proven leaks are ever deleted, only those the operator asked for (every one with
 * `--yes`, or each by name), in an order that deletes a resource's users first.
 */
import type { Leak } from "./classify";
import { resourceId } from "../gce/resources";

export type GcRequest = { kind: "dryRun" } | { kind: "all" } | { kind: "named"; ids: readonly string[] };

export type GcPlan =
  | { kind: "print" }
  | { kind: "delete"; leaks: Leak[] }
  /** Some requested resources are not proven leaks now: nothing is deleted. */
  | { kind: "refuse"; problems: string[] };

export function planGc(leaks: readonly Leak[], request: GcRequest): GcPlan {
  switch (request.kind) {
    case "dryRun":
      return { kind: "print" };
    case "all":
      return { kind: "delete", leaks: leaks.filter((leak) => leak.proof === "proven") };
    case "named": {
      const byId = new Map(leaks.map((leak) => [resourceId(leak.resource), leak]));
      const problems: string[] = [];
      for (const id of new Set(request.ids)) {
        const leak = byId.get(id);
        if (leak === undefined)
          problems.push(
            `${id}: not a leak of this cluster (a stack owns it, it is gone, or nothing ties it to this cluster)`,
          );
        else if (leak.proof !== "proven") problems.push(`${id}: unproven, never deleted: ${leak.why}`);
      }
      if (problems.length > 0) return { kind: "refuse", problems };
      const wanted = new Set(request.ids);
      // The check's order (users before what they use), whatever the command line's.
      return { kind: "delete", leaks: leaks.filter((leak) => wanted.has(resourceId(leak.resource))) };
    }
  }
}

export interface GcContext {
  clusterId: string;
  clusterUid: string;
  project: string;
  stacks: number;
  ledgerEntries: number;
}

export function gcHeader(context: GcContext): string {
  return (
    `cluster ${context.clusterId} (kube-system UID ${context.clusterUid}), project ${context.project}: ` +
    `${context.stacks} stack${context.stacks === 1 ? "" : "s"}, ${context.ledgerEntries} load balancer${context.ledgerEntries === 1 ? "" : "s"} in the ledger`
  );
}

/** The dry run's listing: proven leaks, then unproven ones, each with why. */
export function formatLeaks(leaks: readonly Leak[]): string[] {
  if (leaks.length === 0) return ["no GCE resource of this cluster is left without a stack"];
  const proven = leaks.filter((leak) => leak.proof === "proven");
  const unproven = leaks.filter((leak) => leak.proof === "unproven");
  const lines: string[] = [];
  if (proven.length > 0) {
    lines.push(`proven leaks (deleted by dccm gc --yes, or each by name):`);
    for (const leak of proven) lines.push(`  ${resourceId(leak.resource)}: ${leak.why}`);
  }
  if (unproven.length > 0) {
    lines.push(`unproven (never deleted):`);
    for (const leak of unproven) lines.push(`  ${resourceId(leak.resource)}: ${leak.why}`);
  }
  return lines;
}

export type DeleteOutcome =
  { leak: Leak; result: "deleted" | "absent" } | { leak: Leak; result: "failed"; error: string };

export function formatOutcomes(outcomes: readonly DeleteOutcome[], unproven: number): string[] {
  const lines = outcomes.map((outcome) => {
    const id = resourceId(outcome.leak.resource);
    switch (outcome.result) {
      case "deleted":
        return `deleted ${id}`;
      case "absent":
        return `already gone ${id}`;
      case "failed":
        return `failed ${id}: ${outcome.error}`;
    }
  });
  const done = outcomes.filter((outcome) => outcome.result !== "failed").length;
  lines.push(`${done} of ${outcomes.length} deleted; ${unproven} unproven left alone`);
  return lines;
}
