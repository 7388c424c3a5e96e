/**
 * The pulumi CLI dies with the daemon. A daemon killed with SIGKILL cannot stop its children, and
 * a `pulumi up` left running keeps writing the stack while the next leader clears its lock and
 * runs the same stack: two writers of one checkpoint, the failure Pulumi's lock exists to prevent.
 * The CLI is therefore started through `setpriv --pdeathsig`: the kernel sends it a signal when
 * the thread that spawned it exits (Node spawns children from its main thread, so that is when
 * the daemon process dies).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { PulumiCommand } from "@pulumi/pulumi/automation";

export const SETPRIV = "/usr/bin/setpriv";

/**
 * SIGTERM, not SIGKILL. The CLI traps SIGTERM to cancel (pkg/backend/cancellation_scope.go): it
 * tears its plugins down (they run in their own process groups, so nothing else reaches them) and
 * its first write to the dead daemon's pipe ends it at once (SIGPIPE). Measured with a GCE delete
 * held 5 s (test/e2e/kill.e2e.ts): with SIGTERM the CLI and the provider plugin are gone within
 * ~10-600 ms; without a signal, or had the CLI died of SIGKILL, the provider plugin outlives it by
 * more than 1 s, still calling GCE.
 */
export const PARENT_DEATH_SIGNAL = "TERM";

export interface GuardOptions {
  /** Where the wrapper script is written (a directory the daemon owns). */
  dir: string;
  /** The PATH the CLI runs with, to find `pulumi` when no command is given. */
  searchPath: string | undefined;
  /** Told once, when the CLI has to run without the guard. */
  onUnguarded: (reason: string) => void;
  /** For tests: the setpriv binary. */
  setpriv?: string;
}

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

function findOnPath(name: string, searchPath: string | undefined): string | undefined {
  for (const dir of (searchPath ?? "").split(path.delimiter)) {
    if (dir === "") continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return path.resolve(candidate);
    } catch {
      // Not in this directory.
    }
  }
  return undefined;
}

/** The wrapper script: exec the real CLI under setpriv, with the PATH the Automation API would give it. */
export function wrapperScript(setpriv: string, realCommand: string, prependDir: string | undefined): string {
  return [
    "#!/bin/sh",
    "# Written by dccm (daemon/pulumiCli.ts): the pulumi CLI gets a signal when the daemon dies.",
    // The Automation API puts an absolute CLI's directory first on PATH (bundled plugins); it now
    // sees the wrapper's directory instead, so the wrapper does it for the real one.
    ...(prependDir !== undefined ? [`PATH=${shellQuote(prependDir)}:"$PATH"`, "export PATH"] : []),
    `exec ${shellQuote(setpriv)} --pdeathsig ${PARENT_DEATH_SIGNAL} -- ${shellQuote(realCommand)} "$@"`,
    "",
  ].join("\n");
}

/**
 * A PulumiCommand running `real` (or `pulumi` on the search path) under a parent-death signal.
 * Without setpriv (or when the wrapper cannot run) it says so once and returns the plain command.
 */
export async function guardedPulumiCommand(real: PulumiCommand | undefined, options: GuardOptions): Promise<PulumiCommand | undefined> {
  const setpriv = options.setpriv ?? SETPRIV;
  const unguarded = (reason: string): PulumiCommand | undefined => {
    options.onUnguarded(reason);
    return real;
  };
  try {
    fs.accessSync(setpriv, fs.constants.X_OK);
  } catch {
    return unguarded(`${setpriv} not found: a pulumi CLI may outlive a killed daemon`);
  }
  const absolute = real !== undefined && path.isAbsolute(real.command);
  const realCommand = absolute ? real.command : findOnPath(real?.command ?? "pulumi", options.searchPath);
  if (realCommand === undefined) return unguarded(`pulumi not found on PATH to wrap with ${setpriv}`);
  const bin = path.join(options.dir, "bin");
  const wrapper = path.join(bin, "pulumi");
  try {
    fs.mkdirSync(bin, { recursive: true });
    // Written aside and renamed: another process may be running the current wrapper.
    const partial = `${wrapper}.${process.pid}.tmp`;
    fs.writeFileSync(partial, wrapperScript(setpriv, realCommand, absolute ? path.dirname(realCommand) : undefined), { mode: 0o755 });
    fs.renameSync(partial, wrapper);
    // Also proves the wrapper runs (`pulumi version` through it); the real command was checked already.
    return await PulumiCommand.get({ root: options.dir, ...(real !== undefined ? { skipVersionCheck: true } : {}) });
  } catch (error) {
    return unguarded(`the ${setpriv} wrapper of ${realCommand} failed (${error instanceof Error ? error.message.split("\n")[0] : String(error)})`);
  }
}
