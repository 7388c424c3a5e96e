/**
 * stacks/grpcChannels.ts: an inline run's engine clients never share a subchannel with an earlier
 * run's, even when the kernel gives the new engine the earlier engine's port.
 */
import * as assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import * as sdkSettings from "@pulumi/pulumi/runtime/settings";
import { OWN_SUBCHANNEL_POOL, ownSubchannelsForRuns } from "../../../stacks/grpcChannels";
import { workspaceOptions } from "../../../stacks/workspaces";
import { isRecord } from "../../../runtime/guards";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const identity = (bytes: Buffer): Buffer => bytes;
const PING = {
  ping: {
    path: "/dccm.test.Engine/Ping",
    requestStream: false,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
} as const;
const PingClient = grpc.makeGenericClientConstructor(PING, "Engine");

/** The options the SDK gives every client of a run (runtime/settings.js getMonitor, getEngine). */
function sdkClientOptions(): grpc.ClientOptions {
  const options: unknown = (sdkSettings as unknown as Record<string, unknown>).grpcClientOptions;
  assert.ok(isRecord(options));
  return options;
}

/** An engine stand-in on `port` (0: any), answering Ping with "pong". */
function serve(port: number): Promise<{ server: grpc.Server; port: number }> {
  const server = new grpc.Server();
  server.addService(PING, {
    ping: (_call: unknown, callback: grpc.sendUnaryData<Buffer>) => callback(null, Buffer.from("pong")),
  });
  return new Promise((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error === null ? resolve({ server, port: bound }) : reject(error),
    ),
  );
}

function ping(client: grpc.Client): Promise<string> {
  return new Promise((resolve) =>
    (
      client as unknown as {
        ping(request: Buffer, callback: (error: grpc.ServiceError | null, reply?: Buffer) => void): void;
      }
    ).ping(Buffer.from("ping"), (error, reply) =>
      resolve(error === null ? String(reply) : `${error.code} ${error.details}`),
    ),
  );
}

describe("inline runs' gRPC clients (stacks/grpcChannels.ts)", () => {
  it("a workspace's options set the SDK's client options to a subchannel pool of each client's own", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-grpc-"));
    // Another test file's workspace may have set it already in this process.
    delete (sdkClientOptions() as Record<string, unknown>)[OWN_SUBCHANNEL_POOL];
    try {
      workspaceOptions(dir, { backendUrl: "file:///nowhere", projectName: "dccm-test" });
      assert.equal((sdkClientOptions() as Record<string, unknown>)[OWN_SUBCHANNEL_POOL], 1);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("a run's engine on the port an ended run's engine had: the new run's client reaches it (with one pool for the process it failed: 14 No connection established. Last error: null)", async () => {
    ownSubchannelsForRuns();
    const first = await serve(0);
    const ended = new PingClient(`127.0.0.1:${first.port}`, grpc.credentials.createInsecure(), sdkClientOptions());
    const second: { server?: grpc.Server } = {};
    const next = new PingClient(`127.0.0.1:${first.port}`, grpc.credentials.createInsecure(), sdkClientOptions());
    try {
      assert.equal(await ping(ended), "pong");
      first.server.forceShutdown();
      // A late call of the ended run (as the SDK's, never closed): its subchannel now reconnects with backoff.
      assert.match(await ping(ended), /^14 No connection established\. Last error: Error: connect ECONNREFUSED/);
      second.server = (await serve(first.port)).server;
      assert.equal(await ping(next), "pong");
    } finally {
      ended.close();
      next.close();
      second.server?.forceShutdown();
    }
  });

  it("refuses an SDK without the client options it sets, naming them", () => {
    assert.throws(() => ownSubchannelsForRuns({}), {
      message:
        "@pulumi/pulumi's runtime/settings exports no grpcClientOptions: inline runs would share gRPC subchannels across engines (stacks/grpcChannels.ts)",
    });
  });
});
