// Standalone GCE emulator: `node dist/emulator/gce/main.js [--project P] [--region R]
// [--zones a,b,c] [--port N]` prints one JSON line `{ endpoint, computeEndpoint, env }` on stdout
// and serves until SIGTERM or SIGINT.

import { startGceEmulator, type GceEmulatorOptions } from "./index";

function parseArgs(argv: readonly string[]): GceEmulatorOptions {
  const opts: { project?: string; region?: string; zones?: string[]; port?: number } = {};
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (value === undefined) {
      throw new Error(`${flag ?? ""} needs a value`);
    }
    i++;
    switch (flag) {
      case "--project":
        opts.project = value;
        break;
      case "--region":
        opts.region = value;
        break;
      case "--zones":
        opts.zones = value.split(",").filter((z) => z !== "");
        break;
      case "--port":
        if (!/^\d+$/.test(value)) {
          throw new Error(`--port must be a number, got ${value}`);
        }
        opts.port = Number(value);
        break;
      default:
        throw new Error(`unknown flag ${flag ?? ""} (known: --project, --region, --zones, --port)`);
    }
  }
  return opts;
}

async function main(): Promise<void> {
  const emulator = await startGceEmulator(parseArgs(process.argv.slice(2)));
  process.stdout.write(
    `${JSON.stringify({ endpoint: emulator.endpoint, computeEndpoint: emulator.computeEndpoint, env: emulator.env })}\n`,
  );
  await new Promise<void>((resolve) => {
    process.once("SIGTERM", () => resolve());
    process.once("SIGINT", () => resolve());
  });
  await emulator.stop();
}

main().catch((e: unknown) => {
  process.stderr.write(`gce emulator: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exitCode = 1;
});
