/**
 * A workaround for the Pulumi SDK's memory: every inline program run (the runner's and the preview's)
 * lets go of what it registered, and closes its engine clients, once it has succeeded, or a
 * long-running daemon grows with each run.
 */
import type { AsyncLocalStorage } from "node:async_hooks";
import * as sdkSettings from "@pulumi/pulumi/runtime/settings";
import { isRecord } from "../runtime/guards";
import { closeRunClients } from "./grpcChannels";

/**
 * The Pulumi SDK keeps everything a program run registers (the stack resource, its resources and
 * outputs, the engine clients) in a store of its AsyncLocalStorage, `global.asyncLocalStorage`
 * (@pulumi/pulumi runtime/state.js, withLocalStorage), one store per inline run. Each run's gRPC
 * clients create a `dns.promises.Resolver` (@grpc/grpc-js resolver-dns.js) and timers, made in the
 * run's async context, that store; while a client is open, Node keeps them, and through them the
 * store and the clients themselves: measured, every run kept ~30 KB for ever (two grpc-js channels
 * with their resolvers, load balancers and timers, and the store), ~0.2 MB before the stack resource
 * was let go of. Once a run has succeeded (its program has returned and the SDK has disconnected),
 * its store lets go of the stack resource, through which it held every resource and output of the
 * run, and its clients are closed.
 */
export function currentRunStore(): Record<string, unknown> | undefined {
  const storage = (globalThis as { asyncLocalStorage?: AsyncLocalStorage<unknown> }).asyncLocalStorage;
  const store = storage?.getStore();
  return isRecord(store) ? store : undefined;
}

/**
 * Lets go of what a successful run registered: its root (the stack resource), its outputs'
 * promises (the SDK's `leakCandidates` set) and its engine and monitor clients, closed
 * (closeRunClients). A late call of the SDK after that (a log line) finds no client and makes a
 * new one (runtime/settings.js getEngine), instead of failing on a closed one.
 */
/** Marks the SDK's disconnect once wrapped (closeClientsOnDisconnect), so it is wrapped once per process. */
export const CLOSES_RUN_CLIENTS = Symbol.for("dccm.closesRunClients");

/**
 * Closes every run's engine and monitor clients once the SDK has disconnected that run, whether it
 * succeeded or failed. The SDK's inline-program server disconnects each run when its program has
 * returned or thrown (@pulumi/pulumi automation/server.js LanguageServer.run: `settings.disconnect`
 * in both branches), but its disconnect closes only the process-wide pair (runtime/settings.js
 * disconnectSync), not the run's. A failed run never reaches releaseRunStore: measured, each left
 * its two channels reconnecting to its exited engine, open for ever (test/unit/stacks/failedRunClients.test.ts).
 * Wraps the module's export, which the server reads at each call; throws when the SDK no longer
 * has it, so an upgrade that moves it fails its tests instead of bringing the leak back.
 */
export function closeClientsOnDisconnect(settingsModule: unknown = sdkSettings): void {
  const disconnect = isRecord(settingsModule) ? settingsModule.disconnect : undefined;
  if (!isRecord(settingsModule) || typeof disconnect !== "function")
    throw new Error(
      "@pulumi/pulumi's runtime/settings exports no disconnect: a failed run's engine clients would stay open (stacks/runStore.ts)",
    );
  if (CLOSES_RUN_CLIENTS in disconnect) return;
  const original = disconnect as (signalShutdown?: boolean) => Promise<void>;
  const wrapped = async (signalShutdown?: boolean): Promise<void> => {
    try {
      await original(signalShutdown);
    } finally {
      // The run's own async context: its store, as the SDK's getStore reads it.
      const settings = currentRunStore()?.settings;
      if (isRecord(settings)) closeRunClients(settings);
    }
  };
  settingsModule.disconnect = Object.assign(wrapped, { [CLOSES_RUN_CLIENTS]: true });
}

export function letGoOfRunStore(store: Record<string, unknown> | undefined): void {
  if (store === undefined) return;
  store.stackResource = undefined;
  if (store.leakCandidates instanceof Set) store.leakCandidates.clear();
  if (isRecord(store.settings)) closeRunClients(store.settings);
}

/** Lets go of the store a holder kept for its run (letGoOfRunStore), and of the holder's reference to it. */
export function releaseRunStore(holder: { runStore?: Record<string, unknown> }): void {
  letGoOfRunStore(holder.runStore);
  holder.runStore = undefined;
}
