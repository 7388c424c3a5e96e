/**
 * Pure: which stacks a drift pass sends to `up --refresh`, from GCE's listing and what each stack
 * last applied. A stack is drifted when one of its resources is missing from the listing or
 * differs from what the stack declared (drift/declared.ts); every other stack costs nothing.
 */
import type { AppliedSnapshot } from "./applied";
import { describeDifference, driftOf } from "./declared";

export interface DriftFinding {
  stack: string;
  /** The generation of the stack's record the finding is about (drift/applied.ts). */
  generation: number;
  /** One line per drifted resource: `<id>: missing`, or `<id>: <field>: declared …, found …; …`. */
  reasons: string[];
}

/** `listed`: every listed resource by its id (`kind/scope/name`, leaks/classify.ts resourceId). */
export function planDriftPass(
  applied: readonly AppliedSnapshot[],
  listed: ReadonlyMap<string, Record<string, unknown>>,
): DriftFinding[] {
  const findings: DriftFinding[] = [];
  for (const { stack, resources, generation } of applied) {
    const reasons: string[] = [];
    for (const resource of resources) {
      const found = listed.get(resource.id);
      if (found === undefined) {
        reasons.push(`${resource.id}: missing`);
        continue;
      }
      const differences = driftOf(resource, found);
      if (differences.length > 0) reasons.push(`${resource.id}: ${differences.map(describeDifference).join("; ")}`);
    }
    if (reasons.length > 0) findings.push({ stack, generation, reasons });
  }
  return findings;
}

/** The instance groups the applied stacks hold (`instanceGroups/<zone>/<name>`): their members are listed too. */
export function appliedGroups(applied: readonly AppliedSnapshot[]): Array<{ zone: string; name: string }> {
  const groups = new Map<string, { zone: string; name: string }>();
  for (const { resources } of applied) {
    for (const { id } of resources) {
      const [kind, zone, name] = id.split("/");
      if (kind === "instanceGroups" && zone !== undefined && name !== undefined) groups.set(id, { zone, name });
    }
  }
  return [...groups.values()];
}
