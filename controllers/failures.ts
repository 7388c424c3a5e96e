/**
 * The one classifier of a failed stack step, for every controller (as controller-runtime's
 * reconcileHandler is one switch): which failures are no failure to tell, which are never retried.
 * The controllers map the verdict to their result; the queue does the backoff.
 */
import { ForeignStackError, StackBusyError } from "../stacks/errors";

export type FailureVerdict =
  /** Another cluster's stack: never retried, never touched; the reconciler refuses it (thrown on). */
  | { readonly kind: "foreign"; readonly error: ForeignStackError }
  /** The daemon is stopping or lost the Lease: the run was cancelled, nothing failed. */
  | { readonly kind: "shutdown" }
  /** Another run of ours still holds the stack's lock: tried again soon, no failure to tell. */
  | { readonly kind: "busy" }
  /** A real failure: told (an event) and retried with backoff. */
  | { readonly kind: "failed"; readonly error: unknown };

/** Pure: what a failed step's error means. `aborted`: the daemon's signal (shutdown or lost Lease). */
export function classifyFailure(error: unknown, aborted: boolean): FailureVerdict {
  if (error instanceof ForeignStackError) return { kind: "foreign", error };
  if (aborted) return { kind: "shutdown" };
  if (error instanceof StackBusyError) return { kind: "busy" };
  return { kind: "failed", error };
}
