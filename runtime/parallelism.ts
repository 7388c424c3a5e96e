/** How many engine runs this machine holds at once: the daemon's and `dccm preview`'s default. */
import * as fs from "node:fs";
import * as os from "node:os";

/**
 * Memory one concurrent pulumi run holds, measured on the offline environment: the pulumi CLI
 * ~106 MB and the gcp provider plugin ~96 MB (the emulator's; Google's pulumi-resource-gcp is a
 * larger binary), rounded up to leave the real plugin room.
 */
export const RUN_MEMORY_BYTES = 512 * 1024 * 1024;

/** What the daemon holds itself, idle (164 MB measured with one stack), rounded up. */
export const DAEMON_MEMORY_BYTES = 256 * 1024 * 1024;

/** Pure: stacks run at once by default: one per core, and no more than the memory beyond the daemon's own holds. */
export function defaultParallelism(machine: Machine): number {
  return Math.max(
    1,
    Math.min(machine.cores, Math.floor((machine.memoryBytes - DAEMON_MEMORY_BYTES) / RUN_MEMORY_BYTES)),
  );
}

export interface Machine {
  readonly cores: number;
  /** The container's memory limit (cgroup v2 memory.max) when it has one, else the machine's memory. */
  readonly memoryBytes: number;
}

/** This machine (or this container): the cores Node.js may use and its memory limit. */
export function thisMachine(): Machine {
  let limit: number | undefined;
  try {
    const text = fs.readFileSync("/sys/fs/cgroup/memory.max", "utf8").trim();
    if (/^\d+$/.test(text)) limit = Number(text);
  } catch {
    // No cgroup v2 limit readable: the machine's memory.
  }
  return { cores: os.availableParallelism(), memoryBytes: Math.min(limit ?? Infinity, os.totalmem()) };
}
