/** `npm run bench`: prints figures as it goes; the last line is one JSON object of all figures. */
import { benchCore } from "./core";

async function main(): Promise<void> {
  const figures: Record<string, number> = {};
  const core = await benchCore();
  process.stderr.write(`core: ${JSON.stringify(core)}\n`);
  Object.assign(figures, core);
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
