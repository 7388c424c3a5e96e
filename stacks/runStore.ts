/**
 * A workaround for the Pulumi SDK's memory: every inline program run (the runner's and the preview's)
 * lets go of what it registered, and closes its engine clients, once it has succeeded, or a
 * long-running daemon grows with each run.
 */
import type { AsyncLocalStorage } from "node:async_hooks";
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
