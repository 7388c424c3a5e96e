/**
 * No pulumi process outlives the daemon, even on SIGKILL. A daemon killed with SIGKILL cannot stop
 * its children, and a `pulumi up` (or its provider plugin) left running keeps calling GCE and
 * writing the stack while the next leader clears the lock and runs the same stack: two writers of
 * one checkpoint, the failure Pulumi's lock exists to prevent.
 *
 * At start the daemon marks every process it runs: the CLI gets `DCCM_PROCESS_OWNER=<marker>` in its
 * environment, and the CLI hands its environment on to its plugins (that is how credentials reach
 * them). It also starts the reaper, a small process holding the read end of a pipe whose write end
 * only the daemon holds. When the daemon dies, however it dies, the kernel closes that end; the
 * reaper reads end-of-file, freezes every process carrying the marker (SIGSTOP: none may fork or
 * write again), looks again until it finds no new one, then kills them all (SIGKILL).
 *
 * Why not a parent-death signal on the CLI (`setpriv --pdeathsig`, used before): the CLI takes
 * SIGTERM as "cancel" and waits for its provider calls in flight, measured alive for more than 1 s
 * after the kill; with SIGKILL its plugins, which run in process groups of their own, live on. The
 * marker finds a plugin whoever its parent is by then, and the pipe needs no privilege and no
 * util-linux.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import * as fs from "node:fs";
import type { Socket } from "node:net";
import * as path from "node:path";

export const PROCESS_OWNER_VARIABLE = "DCCM_PROCESS_OWNER";

/** A marker no other daemon (this one restarted, another replica on the node) carries. */
export function newProcessMarker(pid: number = process.pid): string {
  return `${pid}-${randomUUID()}`;
}

/** Whether a process's initial environment (`/proc/<pid>/environ`: NUL-separated) carries the marker. */
export function environCarries(environ: Buffer, marker: string): boolean {
  const wanted = `${PROCESS_OWNER_VARIABLE}=${marker}`;
  let start = 0;
  while (start < environ.length) {
    let end = environ.indexOf(0, start);
    if (end < 0) end = environ.length;
    if (end - start === wanted.length && environ.toString("utf8", start, end) === wanted) return true;
    start = end + 1;
  }
  return false;
}

/** Processes (other than `self`) whose environment carries the marker; unreadable ones (not ours, gone) are skipped. */
export function markedProcesses(marker: string, self: number, procRoot = "/proc"): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync(procRoot)) {
    if (!/^[0-9]+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === self) continue;
    let environ: Buffer;
    try {
      environ = fs.readFileSync(path.join(procRoot, entry, "environ"));
    } catch {
      continue;
    }
    if (environCarries(environ, marker)) found.push(pid);
  }
  return found.sort((a, b) => a - b);
}

export interface Signaller {
  kill(pid: number, signal: NodeJS.Signals): void;
}

/**
 * Freezes, then kills, every marked process. Freezing first, and looking again until a look finds
 * nothing new, means a process forked while we look is caught too. Returns the pids killed.
 */
export function reapMarked(
  marker: string,
  options: { self: number; procRoot?: string; signaller?: Signaller; maxRounds?: number },
): number[] {
  const signaller = options.signaller ?? { kill: (pid, signal) => process.kill(pid, signal) };
  const send = (pid: number, signal: NodeJS.Signals): void => {
    try {
      signaller.kill(pid, signal);
    } catch {
      // Gone already (ESRCH): nothing to do.
    }
  };
  const frozen = new Set<number>();
  const maxRounds = options.maxRounds ?? 20;
  for (let round = 0; round < maxRounds; round++) {
    const fresh = markedProcesses(marker, options.self, options.procRoot).filter((pid) => !frozen.has(pid));
    if (fresh.length === 0) break;
    for (const pid of fresh) {
      send(pid, "SIGSTOP");
      frozen.add(pid);
    }
  }
  for (const pid of frozen) send(pid, "SIGKILL");
  return [...frozen].sort((a, b) => a - b);
}

export interface ReaperOptions {
  marker: string;
  /** Told when the reaper exits while the daemon runs (it is then started again). */
  onExit: (code: number | null, signal: NodeJS.Signals | null) => void;
  /** For tests: the script the reaper runs. */
  script?: string;
}

/** The reaper process of one daemon: started with it, started again if it dies, let go on a clean stop. */
export class Reaper {
  private child: ChildProcess | undefined;
  private stopped = false;

  constructor(private readonly options: ReaperOptions) {}

  start(): void {
    const script = this.options.script ?? path.join(__dirname, "reaperMain.js");
    // Its own process group: a signal to the daemon's group (a terminal's ^C, `kill -- -PGID`)
    // must not take the reaper down with the processes it is there to clean up after.
    const child = spawn(process.execPath, [script, this.options.marker], {
      stdio: ["pipe", "ignore", "inherit"],
      detached: true,
    });
    this.child = child;
    child.on("error", () => undefined);
    child.stdin?.on("error", () => undefined);
    child.on("exit", (code, signal) => {
      if (this.child !== child) return;
      this.child = undefined;
      if (this.stopped) return;
      // Started again before anyone is told: a daemon dying now still has a reaper.
      this.start();
      this.options.onExit(code, signal);
    });
    // Neither the process nor the pipe may keep a stopping daemon alive.
    child.unref();
    (child.stdin as Socket | null)?.unref();
  }

  /** A clean stop: the reaper kills whatever marked process is left, then exits. */
  stop(): void {
    this.stopped = true;
    this.child?.stdin?.end();
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }
}
