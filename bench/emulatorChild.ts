/**
 * The GCE emulator of bench/scale.ts in a process of its own, as Google is in production: its
 * model of N Services' resources, its call handling and its garbage are not the daemon's, so the
 * daemon's heap, RSS, event loop and change latency are measured alone. Prints one JSON line
 * (EmulatorEndpoints), then serves until SIGTERM. Asked over IPC, it answers its event loop's busy
 * milliseconds so far: all its work is answering calls, so a difference is its share of a window.
 * Usage: node emulatorChild.js
 */
import { performance } from "node:perf_hooks";
import { startGceEmulator } from "../emulator/gce";
import { E2E_NETWORKS } from "../test/support/e2e/env";

export interface EmulatorEndpoints {
  readonly endpoint: string;
  readonly computeEndpoint: string;
  /** What the engine's environment needs to reach this emulator (the provider plugin reads it). */
  readonly emulatorUrl: string;
}

/** The IPC question and its answer. */
export const BUSY_QUESTION = "busy-ms";
export interface BusyAnswer {
  readonly busyMs: number;
}

async function main(): Promise<void> {
  // The same VPC and instance network as startTestEnv's emulator.
  const gce = await startGceEmulator({ networks: E2E_NETWORKS, instanceNetwork: "k8s-net" });
  const emulatorUrl = gce.env.DCCM_GCE_EMULATOR_URL;
  if (emulatorUrl === undefined) throw new Error("the emulator's env has no DCCM_GCE_EMULATOR_URL");
  const endpoints: EmulatorEndpoints = { endpoint: gce.endpoint, computeEndpoint: gce.computeEndpoint, emulatorUrl };
  process.on("message", (message) => {
    if (message !== BUSY_QUESTION) return;
    const answer: BusyAnswer = { busyMs: performance.eventLoopUtilization().active };
    process.send?.(answer);
  });
  process.stdout.write(`${JSON.stringify(endpoints)}\n`);
  await new Promise<void>((resolve) => process.once("SIGTERM", () => resolve()));
  await gce.stop();
  process.disconnect?.();
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(
      `bench emulator: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 1;
  });
}
