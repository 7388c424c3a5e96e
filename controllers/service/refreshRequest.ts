/**
 * Refresh now (model/annotations.ts ANNOTATION_REFRESH_REQUESTED): a new value of the annotation
 * makes the Service's next sync a refresh, as a drift pass's is (planned first, never changing the
 * IP: controllers/service/repairs.ts), and is answered once with an Event whose message starts
 * with `Refresh <value>:` (what `dccm refresh` waits for). Pure: which value is pending, and the
 * answer a sync's outcome gives it.
 */
import type { ReconcileResult } from "../../runtime/queue";
import type { EventType } from "../../runtime/events";

export const REFRESHED = "Refreshed";
export const REFRESH_FAILED = "RefreshFailed";

/** What the Service carries of refresh requests (watcher/informers.ts ServiceMeta). */
export interface RefreshAnnotations {
  refreshRequested?: string;
  refreshHandled?: string;
}

/**
 * Pure: the requested value not answered yet; undefined when none. `answered`: the value this
 * daemon last answered for the Service, which the watch may not show as handled yet.
 */
export function pendingRefresh(meta: RefreshAnnotations | undefined, answered: string | undefined): string | undefined {
  const requested = meta?.refreshRequested?.trim();
  if (requested === undefined || requested === "") return undefined;
  if (requested === meta?.refreshHandled?.trim() || requested === answered) return undefined;
  return requested;
}

/** What a refreshing sync found, as the Service controller tells it. */
export type RefreshFinding =
  /** GCE matches what the stack declares: nothing to put back. */
  | { kind: "clean" }
  /** The run put these back (StackRuns describePutBack). */
  | { kind: "repaired"; putBack: string }
  /** The Service had a change of its own: applied in the same refreshing run. */
  | { kind: "applied"; putBack: string }
  /** Not applied: it would not keep the load balancer's IP (the IPChangeHeld Warning says why). */
  | { kind: "held" };

export type RefreshResult = "clean" | "repaired" | "applied" | "held" | "failed" | "invalid";

export interface RefreshAnswer {
  type: EventType;
  reason: typeof REFRESHED | typeof REFRESH_FAILED;
  message: string;
  /** The label of dccm_refresh_requests_total. */
  result: RefreshResult;
}

/** How the sync that carried the request ended. */
export interface RefreshOutcome {
  /** The sync's plan: only a run of the stack (or an invalid Service) answers; anything else leaves the request pending. */
  action: "apply" | "reject" | "other";
  result: ReconcileResult;
  finding: RefreshFinding | undefined;
  /** The failure as said (describeError) when the result is a retry. */
  error?: string;
}

/**
 * Pure: the one Event answering `value`; undefined while the request stays pending (the Service
 * waits for the cluster stack, its stack is locked, a quota wait, a shutdown, or the sync did not
 * run the stack): the next sync answers it.
 */
export function refreshAnswer(value: string, outcome: RefreshOutcome): RefreshAnswer | undefined {
  const prefix = `Refresh ${value}:`;
  const { action, result, finding } = outcome;
  if (action === "reject") {
    return result.kind === "giveUp"
      ? { type: "Warning", reason: REFRESH_FAILED, result: "invalid", message: `${prefix} not run: ${result.reason}` }
      : undefined;
  }
  if (action !== "apply") return undefined;
  if (result.kind === "retry") {
    if (finding?.kind === "held") {
      return {
        type: "Warning",
        reason: REFRESH_FAILED,
        result: "held",
        message: `${prefix} drift found, not repaired: the repair would not keep the load balancer's IP (see the IPChangeHeld event)`,
      };
    }
    return {
      type: "Warning",
      reason: REFRESH_FAILED,
      result: "failed",
      message: `${prefix} failed: ${outcome.error ?? "unknown error"}; retried with backoff`,
    };
  }
  if (result.kind !== "ok" || finding === undefined) return undefined;
  switch (finding.kind) {
    case "clean":
      return {
        type: "Normal",
        reason: REFRESHED,
        result: "clean",
        message: `${prefix} no drift: GCE matches the stack`,
      };
    case "repaired":
      return {
        type: "Normal",
        reason: REFRESHED,
        result: "repaired",
        message: `${prefix} drift repaired: put back ${finding.putBack}`,
      };
    case "applied":
      return {
        type: "Normal",
        reason: REFRESHED,
        result: "applied",
        message: `${prefix} applied the Service's pending change${finding.putBack === "" ? "" : `: ${finding.putBack}`}`,
      };
    case "held":
      return undefined;
  }
}
