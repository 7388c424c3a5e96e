/** `dccm` run as a child process from the built dist/, for the CLI's tests. */
import { execFile, spawnSync } from "node:child_process";
import * as path from "node:path";
import { repoRoot } from "./tooling/testenv-paths";

export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

const CLI = path.resolve(__dirname, "../../bin/dccm.js");

/** `unset`: variables of this process's environment the child must not see; `env`: the whole environment instead. */
export function runDccm(
  args: readonly string[],
  options: { env?: NodeJS.ProcessEnv; unset?: readonly string[] } = {},
): CliRun {
  const env = { ...(options.env ?? process.env) };
  for (const name of options.unset ?? []) delete env[name];
  const result = spawnSync(process.execPath, [CLI, ...args], {
    cwd: repoRoot(),
    encoding: "utf8",
    timeout: 60_000,
    env,
  });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/**
 * The same, without blocking this process: what the child talks to (the GCE emulator, the test's
 * apiserver proxies) may answer from this very process. `env` is added to this process's environment.
 */
export function runDccmAsync(
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs = 600_000,
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { cwd: repoRoot(), env: { ...process.env, ...env }, timeout: timeoutMs },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== "number")
          reject(new Error(`dccm ${args.join(" ")}`, { cause: error }));
        else resolve({ status: error === null ? 0 : Number(error.code), stdout, stderr });
      },
    );
  });
}
