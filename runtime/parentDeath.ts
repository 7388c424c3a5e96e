/**
 * Noticing that the process which started this one has gone, however it went (SIGKILL included).
 * Linux re-parents an orphan (to init or the nearest subreaper), so its parent pid changes; Node
 * exposes no parent-death signal (prctl PR_SET_PDEATHSIG), and a pipe from the parent only works
 * when the parent made one. Used by the processes that start others for an operator (`dccm demo`,
 * the offline environment's launcher): whatever they started must not outlive the terminal or
 * script that ran them.
 */

export const PARENT_POLL_MS = 500;

export interface ParentWatchOptions {
  /** How often the parent pid is read. */
  readonly intervalMs?: number;
  /** The current parent pid (process.ppid: read anew on every access). */
  readonly parentPid?: () => number;
}

/**
 * Calls `onGone` once, at the first look that finds another parent than the one at the call.
 * Returns a function that stops watching. The timer is unref'd: it never keeps the process alive.
 */
export function watchParent(onGone: () => void, options: ParentWatchOptions = {}): () => void {
  const parentPid = options.parentPid ?? ((): number => process.ppid);
  const first = parentPid();
  const timer = setInterval(() => {
    if (parentPid() === first) return;
    clearInterval(timer);
    onGone();
  }, options.intervalMs ?? PARENT_POLL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
