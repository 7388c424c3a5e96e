/**
 * The reaper process (stacks/reaper.ts): waits for the end of its stdin, which comes when the
 * daemon that started it exits or dies, then kills every process carrying the daemon's marker.
 * Usage: node reaperMain.js MARKER
 */
import { reapMarked } from "./reaper";

const marker = process.argv[2];
if (marker === undefined || marker === "") {
  process.stderr.write("dccm reaper: usage: reaperMain.js MARKER\n");
  process.exit(2);
}
// Only the end of the pipe ends it: a signal meant for the daemon (a terminal's ^C, a pod's
// SIGTERM sent to every process) must not stop the reaper before the daemon is gone.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => undefined);
process.stdin.on("data", () => undefined);
process.stdin.on("error", () => undefined);
process.stdin.on("close", () => {
  const killed = reapMarked(marker, { self: process.pid });
  if (killed.length > 0)
    process.stderr.write(
      `${JSON.stringify({ level: 40, time: Date.now(), pid: process.pid, name: "reaper", msg: "killed pulumi processes the daemon left", pids: killed })}\n`,
    );
  process.exit(0);
});
process.stdin.resume();
