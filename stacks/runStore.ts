/**
 * A workaround for the Pulumi SDK's memory: every inline program run (the runner's and the preview's)
 * lets go of what it registered once it has succeeded, or a long-running daemon grows with each run.
 */
import type { AsyncLocalStorage } from "node:async_hooks";
import { isRecord } from "../runtime/guards";

/**
 * The Pulumi SDK keeps everything a program run registers (the stack resource, its resources and
 * outputs, the engine clients) in a store of its AsyncLocalStorage, `global.asyncLocalStorage`
 * (@pulumi/pulumi runtime/state.js, withLocalStorage), one store per inline run. Each run's gRPC
 * clients create a `dns.promises.Resolver` (@grpc/grpc-js resolver-dns.js), whose native channel
 * Node keeps for the life of the process along with the async context it was made in, that store:
 * measured, every run kept ~0.2 MB for ever (a daemon running 1,000 drift runs an hour would grow
 * 200 MB an hour). Once a run has succeeded (its program has returned), its store lets go of the
 * stack resource, through which it held every resource and output of the run.
 */
export function currentRunStore(): Record<string, unknown> | undefined {
  const storage = (globalThis as { asyncLocalStorage?: AsyncLocalStorage<unknown> }).asyncLocalStorage;
  const store = storage?.getStore();
  return isRecord(store) ? store : undefined;
}

/**
 * Lets go of what a successful run registered: only its root (the stack resource) and its outputs'
 * promises (the SDK's `leakCandidates` set); the settings (engine and monitor clients) stay, so a
 * late log line of the SDK still finds them (runtime/settings.js getEngine reads them).
 */
export function letGoOfRunStore(store: Record<string, unknown> | undefined): void {
  if (store === undefined) return;
  store.stackResource = undefined;
  if (store.leakCandidates instanceof Set) store.leakCandidates.clear();
}

/** Lets go of the store a holder kept for its run (letGoOfRunStore), and of the holder's reference to it. */
export function releaseRunStore(holder: { runStore?: Record<string, unknown> }): void {
  letGoOfRunStore(holder.runStore);
  holder.runStore = undefined;
}
