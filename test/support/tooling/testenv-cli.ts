/**
 * `npm run testenv -- up [--backend file|gs]`: the offline environment for manual use. Prints one
 * JSON line `{ "kubeconfig", "computeEndpoint", "backendUrl", "env" }` and serves until SIGTERM or
 * SIGINT, then stops everything. With `env` exported, `dccm daemon --compute-endpoint
 * <computeEndpoint>` runs against it; `--backend gs` (the default) keeps the stacks in a
 * fake-gcs-server bucket as production does (`env` carries STORAGE_EMULATOR_HOST and
 * PULUMI_BACKEND_URL), `--backend file` in a directory.
 */
import { startTestEnv, type E2eBackend } from "../e2e/env";

async function up(backend: E2eBackend): Promise<void> {
  const env = await startTestEnv({ backend });
  process.stdout.write(`${JSON.stringify({ kubeconfig: env.kube.kubeconfigPath, computeEndpoint: env.gce.computeEndpoint, backendUrl: env.backendUrl, env: env.pulumiEnv })}\n`);
  await new Promise<void>((resolve) => {
    process.once("SIGTERM", () => resolve());
    process.once("SIGINT", () => resolve());
  });
  await env.stop();
}

const [command, ...rest] = process.argv.slice(2);
const backend = rest.length === 0 ? "gs" : rest.length === 2 && rest[0] === "--backend" ? rest[1] : undefined;
if (command !== "up" || (backend !== "gs" && backend !== "file")) {
  process.stderr.write("usage: npm run testenv -- up [--backend gs|file]\n");
  process.exitCode = 2;
} else {
  up(backend).catch((error: unknown) => {
    process.stderr.write(`testenv: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  });
}
