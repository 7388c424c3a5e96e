/** `dccm` run as a child process from the built dist/, for the CLI's tests. */
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { repoRoot } from "./testenv-paths";

export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

const CLI = path.resolve(__dirname, "../../bin/dccm.js");

/** `unset`: variables of this process's environment the child must not see; `env`: the whole environment instead. */
export function runDccm(args: readonly string[], options: { env?: NodeJS.ProcessEnv; unset?: readonly string[] } = {}): CliRun {
  const env = { ...(options.env ?? process.env) };
  for (const name of options.unset ?? []) delete env[name];
  const result = spawnSync(process.execPath, [CLI, ...args], { cwd: repoRoot(), encoding: "utf8", timeout: 60_000, env });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}
