/**
 * stacks/runStore.ts: a successful inline run's store lets go of what the run registered and closes
 * the engine clients the SDK made for it, which the SDK itself never closes.
 */
import * as assert from "node:assert/strict";
import type { AsyncLocalStorage } from "node:async_hooks";
import * as grpc from "@grpc/grpc-js";
import * as sdkSettings from "@pulumi/pulumi/runtime/settings";
import * as sdkState from "@pulumi/pulumi/runtime/state";
import { currentRunStore, letGoOfRunStore, releaseRunStore } from "../../../stacks/runStore";
import { closeRunClients } from "../../../stacks/grpcChannels";

/** The SDK's per-run store (runtime/state.js withLocalStorage, as automation/server.js runs each inline program). */
const { withLocalStorage } = sdkState as unknown as { withLocalStorage: <T>(run: () => T) => T };

/** Nothing listens there: the clients are made lazily and never connect in these tests. */
const ENGINE = "127.0.0.1:1";
const MONITOR = "127.0.0.1:2";

interface Run {
  store: Record<string, unknown>;
  clients: grpc.Client[];
}

/** One inline run as the SDK sets it up: its options reset, its monitor and engine clients made (getMonitor, getEngine). */
function sdkRun(stack: string): Run {
  return withLocalStorage(() => {
    sdkSettings.resetOptions("dccm-test", stack, 1, ENGINE, MONITOR, false, "");
    const clients = [sdkSettings.getMonitor(), sdkSettings.getEngine()] as unknown as grpc.Client[];
    const store = currentRunStore();
    assert.ok(store !== undefined);
    return { store, clients };
  });
}

function states(clients: readonly grpc.Client[]): string[] {
  return clients.map((client) => grpc.connectivityState[client.getChannel().getConnectivityState(false)]);
}

describe("a successful run's store (stacks/runStore.ts)", () => {
  it("each of K runs gets a monitor and an engine client of its own, and the SDK's disconnect closes none of them", () => {
    const runs = ["s1", "s2", "s3"].map(sdkRun);
    const clients = runs.flatMap((run) => run.clients);
    try {
      assert.equal(new Set(clients).size, 6);
      for (const run of runs) withLocalStorageOf(run, () => sdkSettings.disconnectSync());
      assert.deepEqual(states(clients), ["IDLE", "IDLE", "IDLE", "IDLE", "IDLE", "IDLE"]);
    } finally {
      for (const client of clients) client.close();
    }
  });

  it("after K runs let go of, every client of theirs is closed and none is left in their stores", () => {
    const runs = ["s1", "s2", "s3"].map(sdkRun);
    for (const run of runs) letGoOfRunStore(run.store);
    assert.deepEqual(states(runs.flatMap((run) => run.clients)), [
      "SHUTDOWN",
      "SHUTDOWN",
      "SHUTDOWN",
      "SHUTDOWN",
      "SHUTDOWN",
      "SHUTDOWN",
    ]);
    for (const run of runs) {
      const settings = run.store.settings as Record<string, unknown>;
      assert.deepEqual([settings.monitor, settings.engine], [undefined, undefined]);
    }
  });

  it("lets go of the run's stack resource and its outputs' promises", () => {
    const run = sdkRun("s1");
    run.store.stackResource = { urn: "urn:pulumi:s1::dccm-test::pulumi:pulumi:Stack::dccm-test-s1" };
    (run.store.leakCandidates as Set<Promise<unknown>>).add(Promise.resolve());
    const holder: { runStore?: Record<string, unknown> } = { runStore: run.store };
    releaseRunStore(holder);
    assert.deepEqual(
      [holder.runStore, run.store.stackResource, (run.store.leakCandidates as Set<unknown>).size],
      [undefined, undefined, 0],
    );
    assert.deepEqual(states(run.clients), ["SHUTDOWN", "SHUTDOWN"]);
  });

  it("a late call of the SDK after that gets a new client rather than the closed one", () => {
    const run = sdkRun("s1");
    letGoOfRunStore(run.store);
    const late = withLocalStorageOf(run, () => sdkSettings.getEngine()) as unknown as grpc.Client;
    try {
      assert.notEqual(late, run.clients[1]);
      assert.deepEqual(states([late]), ["IDLE"]);
    } finally {
      late.close();
    }
  });

  it("closeRunClients: closes the clients the settings hold and counts them; settings without clients keep their other fields", () => {
    const run = sdkRun("s1");
    assert.equal(closeRunClients(run.store.settings as Record<string, unknown>), 2);
    assert.equal(closeRunClients(run.store.settings as Record<string, unknown>), 0);
    const noClients: Record<string, unknown> = { options: { stack: "s2" } };
    assert.equal(closeRunClients(noClients), 0);
    assert.deepEqual(noClients, { options: { stack: "s2" }, monitor: undefined, engine: undefined });
  });
});

/** Runs `run` in the async context of an SDK run's store (as a late callback of that run would). */
function withLocalStorageOf<T>(of: Run, run: () => T): T {
  const storage = (globalThis as { asyncLocalStorage?: AsyncLocalStorage<unknown> }).asyncLocalStorage;
  assert.ok(storage !== undefined);
  return storage.run(of.store, run);
}
