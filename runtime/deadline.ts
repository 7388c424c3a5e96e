/**
 * A call's deadline joined with its caller's signal, without AbortSignal.any: a signal made by
 * AbortSignal.any stays reachable from a source signal that outlives it (nodejs/node#55351,
 * "AbortSignal.any() leaks when any of the provided signal is long-lived"), so every call made
 * under one long-lived signal (the daemon's, a controller's) would be kept for the life of the
 * process: 65 bytes a call after GC on Node 20.20, 0.3 through this (bench/deadlineHeap.ts).
 */

/** Aborts when `outer` does, or after `ms`; `done()` lets go of `outer` and the timer. */
export interface Deadline {
  readonly signal: AbortSignal;
  /** The deadline passed (not the caller's abort). */
  timedOut(): boolean;
  /** The call is over: idempotent; the signal no longer changes. */
  done(): void;
}

export function deadline(outer: AbortSignal | undefined, ms: number): Deadline {
  const controller = new AbortController();
  let expired = false;
  const onOuterAbort = (): void => {
    clearTimeout(timer);
    controller.abort(outer?.reason);
  };
  const release = (): void => {
    clearTimeout(timer);
    outer?.removeEventListener("abort", onOuterAbort);
  };
  const timer = setTimeout(() => {
    expired = true;
    outer?.removeEventListener("abort", onOuterAbort);
    // The reason AbortSignal.timeout gives, so callers see the same error as before.
    controller.abort(new DOMException("The operation was aborted due to timeout", "TimeoutError"));
  }, ms);
  // A deadline never keeps the process alive by itself (as AbortSignal.timeout's timer).
  timer.unref();
  if (outer?.aborted === true) onOuterAbort();
  else outer?.addEventListener("abort", onOuterAbort, { once: true });
  return { signal: controller.signal, timedOut: () => expired, done: release };
}
