/**
 * The one check of whose a stack is: every run records this cluster's identity (the output
 * `dccmClusterUid`, the UID of its kube-system Namespace), and a stack recording another one belongs
 * to another cluster, whose backend or config this process was pointed at by mistake. Every reader
 * that acts on a stack asks here, so the rule (a stack recording none is never foreign) is one.
 */
import { CLUSTER_UID_OUTPUT } from "../components/outputs";
import { stackOutputs } from "./deployment";
import { ForeignStackError } from "./errors";

/** The cluster identity an exported deployment records; undefined when it records none (never applied, or an older dccm). */
export function recordedClusterUid(deployment: Record<string, unknown>): string | undefined {
  const recorded = stackOutputs(deployment)[CLUSTER_UID_OUTPUT];
  return typeof recorded === "string" ? recorded : undefined;
}

/**
 * Pure: whether a stack recording `recorded` is another cluster's than `ours`. A stack recording no
 * identity was never applied or applied by a dccm older than the check; without `ours` nothing is
 * known to compare with. Neither is foreign.
 */
export function isForeignStack(recorded: string | undefined, ours: string | undefined): boolean {
  return recorded !== undefined && ours !== undefined && recorded !== ours;
}

/** Throws ForeignStackError when the stack recording `recorded` is another cluster's (isForeignStack). */
export function checkStackIdentity(stack: string, recorded: string | undefined, ours: string): void {
  if (recorded !== undefined && isForeignStack(recorded, ours)) throw new ForeignStackError(stack, recorded, ours);
}
