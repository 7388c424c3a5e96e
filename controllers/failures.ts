/**
 * The one classifier of a failed stack step, for every controller (as controller-runtime's
 * reconcileHandler is one switch): which failures are no failure to tell, which are never retried.
 * The controllers map the verdict to their result; the queue does the backoff.
 */
import { describeQuota, parseQuotaExceeded, type QuotaExceeded } from "../gce/parse";
import { QUOTA_WAIT_MS } from "../gce/quotaHold";
import { ForeignStackError, StackBusyError } from "../stacks/errors";

export type FailureVerdict =
  /** Another cluster's stack: never retried, never touched; the reconciler refuses it (thrown on). */
  | { readonly kind: "foreign"; readonly error: ForeignStackError }
  /** The daemon is stopping or lost the Lease: the run was cancelled, nothing failed. */
  | { readonly kind: "shutdown" }
  /** Another run of ours still holds the stack's lock: tried again soon, no failure to tell. */
  | { readonly kind: "busy" }
  /**
   * GCE refused a create over a project quota: told once per try (Warning QuotaExceeded naming
   * the quota) and tried again only after QUOTA_RETRY_MS. Retrying sooner cannot help (only an
   * operator freeing resources or raising the quota can) and would only spend API calls.
   */
  | { readonly kind: "quota"; readonly quota: QuotaExceeded; readonly error: unknown }
  /** A real failure: told (an event) and retried with backoff. */
  | { readonly kind: "failed"; readonly error: unknown };

/** Pure: what a failed step's error means. `aborted`: the daemon's signal (shutdown or lost Lease). */
export function classifyFailure(error: unknown, aborted: boolean): FailureVerdict {
  if (error instanceof ForeignStackError) return { kind: "foreign", error };
  if (aborted) return { kind: "shutdown" };
  if (error instanceof StackBusyError) return { kind: "busy" };
  const quota = parseQuotaExceeded(errorChainText(error));
  if (quota !== undefined) return { kind: "quota", quota, error };
  return { kind: "failed", error };
}

/**
 * How long a key whose run GCE refused over a quota waits before its next try, unless its
 * desired state changes (the queue runs a changed key at once): the queue's backoff cap, so a
 * quota costs one run per 5 minutes per Service, not a doubling series of runs.
 */
export const QUOTA_RETRY_MS = QUOTA_WAIT_MS;

/** Every message of an error and its causes (the engine's output is in one of them). */
function errorChainText(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- a thrown non-Error is printed as it converts
    parts.push(current instanceof Error ? current.message : String(current));
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join("\n");
}

/** The reason of the Warning a quota refusal gives (a Service's, or the cluster stack's on the Lease). */
export const QUOTA_EXCEEDED = "QuotaExceeded";

/** The Warning's message: which quota, what to do, when dccm tries again. Pure. */
export function quotaExceededMessage(what: string, quota: QuotaExceeded): string {
  return `${what}: GCE quota ${describeQuota(quota)} exceeded; release unused resources or raise the quota. Next try in ${QUOTA_RETRY_MS / 60_000} minutes, or at once when the desired state changes`;
}
