/**
 * stacks/runStore.ts: a run that fails closes its engine clients once the SDK has disconnected it,
 * as a successful one does. Driven through the SDK's own inline-program server
 * (@pulumi/pulumi automation/server.js LanguageServer.run), the way every inline run is served,
 * with the live gRPC channels counted by grpc-js's channelz registry.
 */
import * as assert from "node:assert/strict";
import { getChannelzHandlers } from "@grpc/grpc-js/build/src/channelz";
import * as sdkServer from "@pulumi/pulumi/automation/server";
import * as sdkSettings from "@pulumi/pulumi/runtime/settings";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { CLOSES_RUN_CLIENTS, closeClientsOnDisconnect } from "../../../stacks/runStore";
import { workspaceOptions } from "../../../stacks/workspaces";

interface InlineServer {
  run(call: { request: unknown }, callback: (error: Error | undefined) => void): Promise<void>;
}
/** The SDK's inline-program server, internal to it (its typings omit it). */
const { LanguageServer } = sdkServer as unknown as {
  LanguageServer: new (program: () => Promise<Record<string, unknown>>) => InlineServer;
};

/** Nothing listens there: every call of a run fails as it would against an engine that has exited. */
const ENGINE = "127.0.0.1:3";
const MONITOR = "127.0.0.1:4";

/** The request the engine sends the language host to run a program (proto language_pb RunRequest). */
function runRequest(stack: string): Record<string, () => unknown> {
  return {
    getArgsList: () => [ENGINE],
    getProject: () => "dccm-test",
    getStack: () => stack,
    getParallel: () => 1,
    getMonitorAddress: () => MONITOR,
    getDryrun: () => false,
    getOrganization: () => "",
    getConfigMap: () => new Map(),
    getConfigsecretkeysList: () => [],
  };
}

/** One inline run served by the SDK; resolves with its error message. */
function failedRun(stack: string, program: () => Promise<Record<string, unknown>>): Promise<string> {
  const server = new LanguageServer(program);
  return new Promise((resolve) => {
    void server.run({ request: runRequest(stack) }, (error) => resolve(error?.message ?? "succeeded"));
  });
}

/** The top-level grpc-js channels not closed, to this test's engine and monitor. */
function openChannels(): string[] {
  let targets: string[] = [];
  getChannelzHandlers().GetTopChannels(
    { request: { start_channel_id: 0, max_results: 10_000 } } as never,
    ((error: unknown, reply?: { channel: { data: { target: string } }[] }) => {
      targets = (reply?.channel ?? []).map((channel) => channel.data.target);
    }) as never,
  );
  return targets.filter((target) => target === ENGINE || target === MONITOR);
}

describe("a failed run's engine clients (stacks/runStore.ts closeClientsOnDisconnect)", () => {
  it("after N runs whose engine is gone, no channel of theirs is left open", async () => {
    closeClientsOnDisconnect();
    const messages: string[] = [];
    for (const stack of ["s1", "s2", "s3", "s4", "s5"])
      messages.push(await failedRun(stack, () => Promise.reject(new Error("program failed"))));
    assert.deepEqual(
      messages.map((message) => message.replace(/ Last error: .*$/, "")),
      Array(5).fill("One or more errors occurred: 14 UNAVAILABLE: No connection established."),
    );
    assert.deepEqual(openChannels(), []);
  });

  it("a workspace's options wrap the SDK's disconnect (every inline run is served through one)", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-disconnect-"));
    const settings = sdkSettings as unknown as { disconnect: (signalShutdown?: boolean) => Promise<void> };
    const current = settings.disconnect;
    // Another test may have wrapped it already in this process: a disconnect not yet wrapped.
    settings.disconnect = (signalShutdown) => current(signalShutdown);
    try {
      workspaceOptions(dir, { backendUrl: "file:///nowhere", projectName: "dccm-test" });
      assert.equal(CLOSES_RUN_CLIENTS in settings.disconnect, true);
    } finally {
      settings.disconnect = current;
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("is set once: a second call wraps the SDK's disconnect no further", () => {
    closeClientsOnDisconnect();
    const once = (sdkSettings as unknown as Record<string, unknown>).disconnect;
    closeClientsOnDisconnect();
    assert.equal((sdkSettings as unknown as Record<string, unknown>).disconnect, once);
  });

  it("refuses an SDK without the disconnect it wraps, naming it", () => {
    assert.throws(() => closeClientsOnDisconnect({}), {
      message:
        "@pulumi/pulumi's runtime/settings exports no disconnect: a failed run's engine clients would stay open (stacks/runStore.ts)",
    });
  });
});
