/**
 * Noticing that whatever started this process has gone, however it went (SIGKILL included). Node
 * exposes no parent-death signal (prctl PR_SET_PDEATHSIG), a pipe from the parent works only when
 * the parent made one, and the parent alone is not enough: `npx dccm demo` runs as
 * shell → npm → `sh -c dccm` → node, and when npm is killed the `sh` in between lives on, waiting
 * for its child. So the whole chain of ancestors is recorded at the start (from /proc, Linux's), and
 * the first one gone (its pid no longer there, or reused by a process started at another time)
 * calls back. Used by the processes that start others for an operator (`dccm demo`, the offline
 * environment's launcher): what they started must not outlive the terminal or script that ran them.
 */
import * as fs from "node:fs";
import * as path from "node:path";

export const ANCESTOR_POLL_MS = 500;

/** One process as /proc/<pid>/stat tells it: its parent, and its start time (which tells a reused pid). */
export interface ProcessLink {
  readonly pid: number;
  readonly parent: number;
  readonly startTime: string;
  /** Dead, not yet reaped by its parent (state Z): gone for our purpose. */
  readonly zombie?: boolean;
}

export type ReadLink = (pid: number) => ProcessLink | undefined;

/**
 * /proc/<pid>/stat: `pid (comm) state ppid … starttime …`; comm may hold spaces and parentheses,
 * so the fields are counted from the last `)`: ppid is the 2nd after it, starttime the 20th.
 */
export function parseStat(pid: number, stat: string): ProcessLink | undefined {
  const fields = stat
    .slice(stat.lastIndexOf(")") + 1)
    .trim()
    .split(/\s+/);
  const parent = Number(fields[1]);
  const startTime = fields[19];
  if (!Number.isInteger(parent) || startTime === undefined) return undefined;
  return fields[0] === "Z" ? { pid, parent, startTime, zombie: true } : { pid, parent, startTime };
}

export function procLinkReader(procRoot = "/proc"): ReadLink {
  return (pid) => {
    try {
      return parseStat(pid, fs.readFileSync(path.join(procRoot, String(pid), "stat"), "utf8"));
    } catch {
      return undefined;
    }
  };
}

/** The ancestors of `pid`, its parent first, up to (without) init, pid 1, whose death ends everything anyway. */
export function ancestry(pid: number, read: ReadLink): ProcessLink[] {
  const chain: ProcessLink[] = [];
  let next = read(pid)?.parent;
  // Bounded: a chain is never this deep, and a loop in a fake must not hang.
  while (next !== undefined && next > 1 && chain.length < 64) {
    const link = read(next);
    if (link === undefined) break;
    chain.push(link);
    next = link.parent;
  }
  return chain;
}

/** The first ancestor of `chain` that is no longer there: dead (reaped or not), or its pid now names another process. */
export function firstGone(chain: readonly ProcessLink[], read: ReadLink): ProcessLink | undefined {
  return chain.find((link) => {
    const now = read(link.pid);
    return now === undefined || now.zombie === true || now.startTime !== link.startTime;
  });
}

export interface AncestorWatchOptions {
  readonly intervalMs?: number;
  readonly pid?: number;
  readonly read?: ReadLink;
}

/**
 * Calls `onGone` once, at the first look that finds an ancestor of this process gone. Returns a
 * function that stops watching. The timer is unref'd: it never keeps the process alive.
 */
export function watchAncestors(onGone: (gone: ProcessLink) => void, options: AncestorWatchOptions = {}): () => void {
  const read = options.read ?? procLinkReader();
  const chain = ancestry(options.pid ?? process.pid, read);
  const timer = setInterval(() => {
    const gone = firstGone(chain, read);
    if (gone === undefined) return;
    clearInterval(timer);
    onGone(gone);
  }, options.intervalMs ?? ANCESTOR_POLL_MS);
  timer.unref();
  return () => clearInterval(timer);
}
