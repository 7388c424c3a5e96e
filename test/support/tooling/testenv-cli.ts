/**
 * `npm run testenv -- up`: the offline environment for manual use. Prints one JSON line
 * `{ "kubeconfig", "computeEndpoint", "env" }` and serves until SIGTERM or SIGINT, then stops
 * everything. With `env` exported, `dccm daemon --compute-endpoint <computeEndpoint>` runs against it.
 */
import { startTestEnv } from "../e2e/env";

async function up(): Promise<void> {
  const env = await startTestEnv();
  process.stdout.write(`${JSON.stringify({ kubeconfig: env.kube.kubeconfigPath, computeEndpoint: env.gce.computeEndpoint, env: env.pulumiEnv })}\n`);
  await new Promise<void>((resolve) => {
    process.once("SIGTERM", () => resolve());
    process.once("SIGINT", () => resolve());
  });
  await env.stop();
}

const [command] = process.argv.slice(2);
if (command !== "up") {
  process.stderr.write("usage: npm run testenv -- up\n");
  process.exitCode = 2;
} else {
  up().catch((error: unknown) => {
    process.stderr.write(`testenv: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  });
}
