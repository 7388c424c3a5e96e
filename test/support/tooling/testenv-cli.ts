/**
 * `npm run testenv -- up [--backend gs|file] [--json-file FILE]`: the offline environment for
 * manual use and for `dccm demo`. Prints one JSON line `{ "kubeconfig", "computeEndpoint",
 * "backendUrl", "dir", "env" }` once everything answers (and, with --json-file, writes the same line
 * to FILE, atomically: the file exists only once it is complete), then serves until SIGTERM, SIGINT
 * or SIGHUP, or until the process that started it is gone (a shell's `kill %1` without job control,
 * a SIGKILLed `dccm demo`), then stops everything it started and removes its files. With `env`
 * exported, `dccm daemon --compute-endpoint <computeEndpoint>` runs against it; `--backend gs` (the
 * default) keeps the stacks in a fake-gcs-server bucket as production does (`env` carries
 * STORAGE_EMULATOR_HOST and PULUMI_BACKEND_URL), `--backend file` in a directory.
 */
import * as fs from "node:fs";
import { startTestEnv, type E2eBackend } from "../e2e/env";
import { watchAncestors } from "../../../runtime/parentDeath";

export const TESTENV_USAGE = "usage: npm run testenv -- up [--backend gs|file] [--json-file FILE]";

async function up(backend: E2eBackend, jsonFile: string | undefined): Promise<void> {
  // Listening before the start: a stop asked for while the apiserver starts must still stop it.
  const stopAsked = new Promise<string>((resolve) => {
    for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.once(signal, () => resolve(signal));
    watchAncestors((gone) => resolve(`process ${gone.pid}, which started this one, is gone`));
  });
  // A reader gone (its parent killed) must not crash us before we stop what we started.
  process.stdout.on("error", () => undefined);
  const env = await startTestEnv({ backend });
  const line = `${JSON.stringify({ kubeconfig: env.kube.kubeconfigPath, computeEndpoint: env.gce.computeEndpoint, backendUrl: env.backendUrl, dir: env.dir, env: env.pulumiEnv })}\n`;
  if (jsonFile !== undefined) {
    fs.writeFileSync(`${jsonFile}.tmp`, line, { mode: 0o600 });
    fs.renameSync(`${jsonFile}.tmp`, jsonFile);
  }
  process.stdout.write(line);
  await stopAsked;
  await env.stop();
  if (jsonFile !== undefined) fs.rmSync(jsonFile, { force: true });
}

/** `up`'s flags, each at most once, in any order; undefined for anything else. */
function parseUp(rest: readonly string[]): { backend: E2eBackend; jsonFile: string | undefined } | undefined {
  let backend: E2eBackend = "gs";
  let jsonFile: string | undefined;
  const seen = new Set<string>();
  for (let i = 0; i < rest.length; i += 2) {
    const [flag, value] = [rest[i], rest[i + 1]];
    if (value === undefined || seen.has(flag)) return undefined;
    seen.add(flag);
    if (flag === "--backend" && (value === "gs" || value === "file")) backend = value;
    else if (flag === "--json-file") jsonFile = value;
    else return undefined;
  }
  return { backend, jsonFile };
}

const [command, ...rest] = process.argv.slice(2);
const parsed = command === "up" ? parseUp(rest) : undefined;
if (parsed === undefined) {
  process.stderr.write(`${TESTENV_USAGE}\n`);
  process.exitCode = 2;
} else {
  up(parsed.backend, parsed.jsonFile).catch((error: unknown) => {
    process.stderr.write(`testenv: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  });
}
