/**
 * API calls the start-up waits for end at their deadline when the apiserver hangs (a blackholed
 * connection: the request is read, no answer ever comes, nothing is closed): the cluster identity
 * read and the node controller's Node list. Without a deadline each of these tests hangs until
 * mocha's timeout.
 */
import * as assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import * as k8s from "@kubernetes/client-node";
import pino from "pino";
import { Registry } from "prom-client";
import { readClusterUid } from "../../../watcher/identity";
import { NodeController } from "../../../controllers/node/controller";
import { MemoryCompute, MemoryNodeApi } from "../../support/fakes/nodes";

/** An apiserver that reads every request and never answers. */
async function hangingServer(): Promise<{ url: string; paths: string[]; close(): Promise<void> }> {
  const paths: string[] = [];
  const server = http.createServer((request) => {
    paths.push(`${request.method} ${request.url}`);
    request.resume();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    paths,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function kubeConfigFor(server: string): k8s.KubeConfig {
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: "hung", server, skipTLSVerify: true }],
    users: [{ name: "hung", token: "fake-token" }],
    contexts: [{ name: "hung", cluster: "hung", user: "hung" }],
    currentContext: "hung",
  });
  return kubeConfig;
}

/** The message chain of an error and its causes. */
function chain(error: unknown): string[] {
  const messages: string[] = [];
  for (let current = error; current instanceof Error; current = current.cause)
    messages.push(`${current.name}: ${current.message}`);
  return messages;
}

describe("API call deadlines against a hung apiserver", function () {
  this.timeout(10_000);
  let hung: Awaited<ReturnType<typeof hangingServer>>;

  beforeEach(async () => {
    hung = await hangingServer();
  });
  afterEach(async () => {
    await hung.close();
  });

  it("readClusterUid rejects at its deadline, naming what it was reading", async () => {
    const error = await readClusterUid(kubeConfigFor(hung.url), 200).then(
      () => undefined,
      (rejection: unknown) => rejection,
    );
    assert.deepEqual(hung.paths, ["GET /api/v1/namespaces/kube-system"]);
    // node-fetch reports the deadline's abort as its own AbortError.
    assert.deepEqual(chain(error), [
      "Error: reading Namespace kube-system (its UID identifies the cluster the stacks belong to)",
      "AbortError: The user aborted a request.",
    ]);
  });

  it("the node controller's Node list ends at its deadline: start() resolves and the watch is restarted later", async () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString("utf8").split("\n"))
          if (line !== "") lines.push(JSON.parse(line) as Record<string, unknown>);
        done();
      },
    });
    const controller = new NodeController({
      project: "p",
      region: "us-central1",
      zones: ["us-central1-a"],
      compute: new MemoryCompute(),
      api: new MemoryNodeApi(),
      kubeConfig: kubeConfigFor(hung.url),
      logger: pino({ level: "warn" }, sink),
      registry: new Registry(),
      listTimeoutMs: 200,
    });
    try {
      await controller.start();
      // The watcher lists in pages (watcher/listWatch.ts).
      assert.deepEqual(hung.paths, ["GET /api/v1/nodes?limit=100"]);
      assert.deepEqual(
        lines.map((line) => `${String(line.msg)}: ${String((line.err as { message?: unknown } | undefined)?.message)}`),
        ["node watch failed; restarting in 1000 ms: listing /api/v1/nodes: The user aborted a request."],
      );
    } finally {
      await controller.stop();
    }
  });
});
