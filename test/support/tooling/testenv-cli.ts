/**
 * `npm run testenv -- up [--json-file FILE]`: the offline environment for manual use and for
 * `dccm demo`. Prints one JSON line `{ "kubeconfig", "computeEndpoint", "dir", "env" }` once
 * everything answers (and, with --json-file, writes the same line to FILE, atomically: the file
 * exists only once it is complete), then serves until SIGTERM, SIGINT or SIGHUP, or until the
 * process that started it is gone (a shell's `kill %1` without job control, a SIGKILLed `dccm
 * demo`), then stops everything it started and removes its files. With `env` exported,
 * `dccm daemon --compute-endpoint <computeEndpoint>` runs against it.
 */
import * as fs from "node:fs";
import { startTestEnv } from "../e2e/env";
import { watchAncestors } from "../../../runtime/parentDeath";

export const TESTENV_USAGE = "usage: npm run testenv -- up [--json-file FILE]";

async function up(jsonFile: string | undefined): Promise<void> {
  // Listening before the start: a stop asked for while the apiserver starts must still stop it.
  const stopAsked = new Promise<string>((resolve) => {
    for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) process.once(signal, () => resolve(signal));
    watchAncestors((gone) => resolve(`process ${gone.pid}, which started this one, is gone`));
  });
  // A reader gone (its parent killed) must not crash us before we stop what we started.
  process.stdout.on("error", () => undefined);
  const env = await startTestEnv();
  const line = `${JSON.stringify({ kubeconfig: env.kube.kubeconfigPath, computeEndpoint: env.gce.computeEndpoint, dir: env.dir, env: env.pulumiEnv })}\n`;
  if (jsonFile !== undefined) {
    fs.writeFileSync(`${jsonFile}.tmp`, line, { mode: 0o600 });
    fs.renameSync(`${jsonFile}.tmp`, jsonFile);
  }
  process.stdout.write(line);
  await stopAsked;
  await env.stop();
  if (jsonFile !== undefined) fs.rmSync(jsonFile, { force: true });
}

const [command, ...rest] = process.argv.slice(2);
const jsonFile = rest[0] === "--json-file" && rest.length === 2 ? rest[1] : undefined;
if (command !== "up" || (rest.length > 0 && jsonFile === undefined)) {
  process.stderr.write(`${TESTENV_USAGE}\n`);
  process.exitCode = 2;
} else {
  up(jsonFile).catch((error: unknown) => {
    process.stderr.write(`testenv: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  });
}
