/**
 * gs:// state as production keeps it, offline: the real pulumi CLI writes its stacks into a
 * fake-gcs-server bucket (object versioning on), and dccm reads them straight from the bucket
 * (stacks/gcs.ts): the same deployments as `pulumi stack export`, with no CLI command; a killed
 * run's lock is cleared; a burst of 503/429 answers backs off and converges.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as path from "node:path";
import { PulumiCommand } from "@pulumi/pulumi/automation";
import {
  CLUSTER_STACK,
  desiredState,
  loadBalancerName,
  parseConfig,
  serviceStackName,
  type ClusterSnapshot,
} from "../../model";
import { ingressOf } from "../../components/outputs";
import { GcsBackend, GcsClient } from "../../stacks/gcs";
import { readEveryStack } from "../../stacks/reader";
import { StackRunner, type StackRunnerOptions } from "../../stacks/runner";
import { PROJECT_NAME } from "../../stacks/project";
import { E2E_CONFIG, E2E_NODE } from "../support/e2e/cluster";
import { declaredResourcesOf, gceViolations } from "../support/e2e/invariants";
import { startTestEnv, type TestEnv } from "../support/e2e/env";

const config = parseConfig(E2E_CONFIG);

const snapshot: ClusterSnapshot = {
  nodes: [E2E_NODE],
  services: [
    {
      namespace: "default",
      name: "web",
      uid: "0b0e2e00-1111-4222-8333-444455556666",
      type: "LoadBalancer",
      annotations: {},
      ports: [{ protocol: "TCP", port: 80 }],
      loadBalancerSourceRanges: [],
      deleting: false,
    },
  ],
};

interface FaultProxy {
  /** `127.0.0.1:PORT`: use as STORAGE_EMULATOR_HOST. */
  host: string;
  /** Answers `status` to the next `count` requests, whatever they are: a rate limit or outage burst. */
  arm(count: number, status: number): void;
  /**
   * Answers 403 to every upload whose body names an object under `fragment` (while `when()` holds,
   * if given: e.g. once GCE holds what the run creates), until told undefined.
   */
  refuseUploads(fragment: string | undefined, when?: () => boolean): void;
  /** Requests answered by the proxy itself so far. */
  refused(): number;
  close(): Promise<void>;
}

/** An HTTP proxy in front of fake-gcs-server that answers chosen requests itself, else forwards them unchanged. */
async function startFaultProxy(target: string): Promise<FaultProxy> {
  let left = 0;
  let status = 503;
  let refused = 0;
  let uploadsRefused: string | undefined;
  let refuseWhen: () => boolean = () => true;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const upload = (request.url ?? "").startsWith("/upload/");
      // The object's name is in the query (media uploads) or in the multipart body's metadata.
      const named = `${decodeURIComponent(request.url ?? "")} ${Buffer.concat(chunks).toString("latin1")}`;
      if (uploadsRefused !== undefined && upload && named.includes(uploadsRefused) && refuseWhen()) {
        refused++;
        response.writeHead(403, { "content-type": "application/json" });
        response.end(JSON.stringify({ error: { code: 403, message: "upload refused by gcs-backend.e2e.ts" } }));
        return;
      }
      if (left > 0) {
        left--;
        refused++;
        response.writeHead(status, { "content-type": "application/json" });
        response.end(JSON.stringify({ error: { code: status, message: "burst" } }));
        return;
      }
      const upstream = http.request(
        new URL(request.url ?? "/", `http://${target}`),
        { method: request.method, headers: { ...request.headers, host: target } },
        (answer) => {
          response.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(response);
        },
      );
      upstream.on("error", () => response.destroy());
      upstream.end(Buffer.concat(chunks));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    host: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    arm: (count, answer) => {
      left = count;
      status = answer;
    },
    refuseUploads: (fragment, when = () => true) => {
      uploadsRefused = fragment;
      refuseWhen = when;
    },
    refused: () => refused,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("gs:// backend on fake-gcs-server: the CLI writes, dccm reads the bucket directly", function () {
  this.timeout(600_000);
  let env: TestEnv;
  let runner: StackRunner;
  const desired = desiredState(snapshot, config);
  const serviceStack = serviceStackName("default", "web");
  const scopes = [
    { stack: CLUSTER_STACK, scope: { kind: "cluster" as const } },
    { stack: serviceStack, scope: { kind: "service" as const, namespace: "default", name: "web" } },
  ];
  const options = (workDir: string, extra: Partial<StackRunnerOptions> = {}): StackRunnerOptions => ({
    backendUrl: env.backendUrl,
    env: env.pulumiEnv,
    workDir: path.join(env.dir, workDir),
    pulumiCommand: env.pulumiCommand,
    ...extra,
  });
  /** A pulumi CLI that records every command and can only print its version. */
  async function recordingCli(name: string): Promise<{ command: PulumiCommand; commands(): string[] }> {
    const root = path.join(env.dir, name);
    const log = path.join(root, "commands");
    fs.mkdirSync(path.join(root, "bin"), { recursive: true });
    fs.writeFileSync(
      path.join(root, "bin", "pulumi"),
      `#!/bin/sh\necho "$1 $2" >> '${log}'\n[ "$1" = version ] && { echo v3.248.0; exit 0; }\nexit 1\n`,
      { mode: 0o755 },
    );
    return {
      command: await PulumiCommand.get({ root, skipVersionCheck: true }),
      commands: () =>
        (fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n") : []).filter(
          (line) => line !== "" && !line.startsWith("version "),
        ),
    };
  }
  const objects = async (): Promise<string[]> =>
    (await new GcsClient({ env: env.pulumiEnv }).list(env.gcs?.bucket ?? "", "dccm/.pulumi/"))
      .filter((name) => !name.includes("/history/") && !name.includes("/backups/"))
      .sort();

  before(async () => {
    env = await startTestEnv({ withKube: false, backend: "gs" });
    assert.equal(env.backendUrl, "gs://dccm-e2e-state/dccm");
    env.gce.putInstance("node-1", { zone: "us-central1-a" });
    runner = new StackRunner(options("workspaces"));
    for (const { stack, scope } of scopes) await runner.up(stack, scope, desired, { refresh: false });
  });

  after(async () => {
    await env?.stop();
  });

  it("the CLI keeps the stacks in the bucket under the URL's path, in the diy layout", async () => {
    const stacks = `dccm/.pulumi/stacks/${PROJECT_NAME}`;
    // `.bak`: the checkpoint before the last update, as on file:// (not a stack: stackNamesOf).
    assert.deepEqual(await objects(), [
      "dccm/.pulumi/meta.yaml",
      `${stacks}/${CLUSTER_STACK}.json`,
      `${stacks}/${CLUSTER_STACK}.json.bak`,
      `${stacks}/${serviceStack}.json`,
      `${stacks}/${serviceStack}.json.bak`,
    ]);
  });

  it("read from the bucket, the stacks are what the CLI says they are, and reading them runs no CLI command", async () => {
    const viaCli = new StackRunner(options("workspaces-cli", { readCheckpoints: false }));
    const cli = await recordingCli("fake-pulumi");
    const unsure: string[] = [];
    const restarted = new StackRunner(
      options("workspaces-restarted", {
        pulumiCommand: cli.command,
        onCheckpointUnsure: (stack, reason) => unsure.push(`${stack}: ${reason}`),
      }),
    );
    assert.deepEqual(await restarted.listStacks(), [CLUSTER_STACK, serviceStack]);
    assert.deepEqual(await viaCli.listStacks(), [CLUSTER_STACK, serviceStack]);
    for (const { stack, scope } of scopes) {
      const inspected = await restarted.inspect(stack, scope);
      assert.deepEqual(inspected, await viaCli.inspect(stack, scope));
      assert.deepEqual(
        Object.keys(inspected.outputs).sort(),
        stack === CLUSTER_STACK
          ? ["instanceGroupMembers", "instanceGroups", "loadBalancers", "routes"]
          : ["instanceGroups", "loadBalancers", "routes"],
      );
      // What the leak check reads of every stack, every drift interval.
      assert.deepEqual(
        (await restarted.stackReader().exportStack(stack)).deployment,
        (await viaCli.stackReader().exportStack(stack)).deployment,
      );
    }
    // What `dccm status` reads of the backend.
    const everyStack = await readEveryStack({
      backendUrl: env.backendUrl,
      projectName: PROJECT_NAME,
      env: env.pulumiEnv,
      pulumiCommand: cli.command,
    });
    assert.deepEqual(
      everyStack.map((read) => read.stack),
      [CLUSTER_STACK, serviceStack],
    );
    assert.deepEqual(everyStack[1].deployment, (await viaCli.stackReader().exportStack(serviceStack)).deployment);
    assert.deepEqual(cli.commands(), []);
    assert.deepEqual(unsure, []);
    // The outputs of an up come from the checkpoint it wrote: the same as `stack output` prints.
    const fromBucket = await runner.up(serviceStack, scopes[1].scope, desired, { refresh: false });
    const fromCli = await viaCli.up(serviceStack, scopes[1].scope, desired, { refresh: false });
    assert.deepEqual(fromBucket.outputs, fromCli.outputs);
    assert.deepEqual(Object.keys(fromBucket.outputs).sort(), ["instanceGroups", "loadBalancers", "routes"]);
  });

  it("a gzipped checkpoint (PULUMI_DIY_BACKEND_GZIP) is read as the CLI reads it", async () => {
    const gzip = new StackRunner(
      options("workspaces-gzip", { env: { ...env.pulumiEnv, PULUMI_DIY_BACKEND_GZIP: "true" } }),
    );
    const outcome = await gzip.up(serviceStack, scopes[1].scope, desired, { refresh: false });
    const stacks = `dccm/.pulumi/stacks/${PROJECT_NAME}`;
    // The CLI replaced the plain checkpoint (backups aside): one checkpoint, gzipped.
    assert.deepEqual(await objects(), [
      "dccm/.pulumi/meta.yaml",
      `${stacks}/${CLUSTER_STACK}.json`,
      `${stacks}/${CLUSTER_STACK}.json.bak`,
      `${stacks}/${serviceStack}.json.bak`,
      `${stacks}/${serviceStack}.json.gz`,
    ]);
    const read = await GcsBackend.fromUrl(env.backendUrl, env.pulumiEnv)?.readCheckpoint(PROJECT_NAME, serviceStack);
    assert.equal(read?.kind, "read");
    const viaCli = new StackRunner(options("workspaces-cli-gzip", { readCheckpoints: false }));
    assert.deepEqual(
      await gzip.inspect(serviceStack, scopes[1].scope),
      await viaCli.inspect(serviceStack, scopes[1].scope),
    );
    assert.deepEqual(
      outcome.outputs,
      (await viaCli.up(serviceStack, scopes[1].scope, desired, { refresh: false })).outputs,
    );
  });

  it("a lock a killed run left fails the next up with the CLI's error; clearStaleLocks removes it and the up runs", async () => {
    const lock = `dccm/.pulumi/locks/organization/${PROJECT_NAME}/${serviceStack}/0b0e2e00-dead-4000-8000-000000000001.json`;
    const content = { pid: 4242, username: "dccm", hostname: "dccm-0", timestamp: "2026-01-02T03:04:05Z" };
    const upload = await fetch(
      `http://${env.gcs?.host}/upload/storage/v1/b/${env.gcs?.bucket}/o?uploadType=media&name=${encodeURIComponent(lock)}`,
      { method: "POST", body: JSON.stringify(content) },
    );
    assert.equal(upload.status, 200);
    await assert.rejects(runner.up(serviceStack, scopes[1].scope, desired, { refresh: false }), (error: Error) => {
      assert.match(
        (error.cause instanceof Error ? error.cause.message : error.message) + error.message,
        /the stack is currently locked by 1 lock\(s\)/,
      );
      return true;
    });
    const bucket = GcsBackend.fromUrl(env.backendUrl, env.pulumiEnv);
    assert.deepEqual(await bucket?.clearStaleLocks(), [lock.slice("dccm/".length)]);
    assert.deepEqual(await bucket?.clearStaleLocks(), []);
    await runner.up(serviceStack, scopes[1].scope, desired, { refresh: false });
  });

  it("a burst of 503s and 429s during a run and during the reads backs off and converges", async () => {
    const proxy = await startFaultProxy(env.gcs?.host ?? "");
    try {
      const proxied = { ...env.pulumiEnv, STORAGE_EMULATOR_HOST: proxy.host };
      const cli = await recordingCli("fake-pulumi-burst");
      const unsure: string[] = [];
      const reader = new StackRunner(
        options("workspaces-burst-read", {
          env: proxied,
          pulumiCommand: cli.command,
          onCheckpointUnsure: (stack, reason) => unsure.push(`${stack}: ${reason}`),
        }),
      );
      const viaCli = new StackRunner(options("workspaces-burst-cli", { readCheckpoints: false }));
      // Three refusals: within the reader's four attempts of each request.
      proxy.arm(3, 503);
      assert.deepEqual(await reader.listStacks(), [CLUSTER_STACK, serviceStack]);
      proxy.arm(3, 429);
      assert.deepEqual(
        await reader.inspect(serviceStack, scopes[1].scope),
        await viaCli.inspect(serviceStack, scopes[1].scope),
      );
      assert.deepEqual([cli.commands(), unsure, proxy.refused()], [[], [], 6]);
      // The CLI's own client (gocloud.dev gcsblob) retries as well: the run completes.
      const running = new StackRunner(options("workspaces-burst-up", { env: proxied }));
      proxy.arm(4, 503);
      const outcome = await running.up(serviceStack, scopes[1].scope, desired, { refresh: true });
      assert.equal(proxy.refused(), 10);
      assert.deepEqual(
        outcome.outputs,
        (await viaCli.up(serviceStack, scopes[1].scope, desired, { refresh: false })).outputs,
      );
    } finally {
      await proxy.close();
    }
  });

  it("a run whose checkpoint writes fail fails, and the next run converges: GCE holds exactly what the stacks declare", async () => {
    const proxy = await startFaultProxy(env.gcs?.host ?? "");
    try {
      const running = new StackRunner(
        options("workspaces-refused", { env: { ...env.pulumiEnv, STORAGE_EMULATOR_HOST: proxy.host } }),
      );
      const lb = "a0b0e2e0011114222833344445555666";
      env.gce.deleteOutOfBand("forwardingRules", lb);
      proxy.refuseUploads(`.pulumi/stacks/${PROJECT_NAME}/${serviceStack}`);
      await assert.rejects(running.up(serviceStack, scopes[1].scope, desired, { refresh: true }));
      assert.notEqual(proxy.refused(), 0);
      proxy.refuseUploads(undefined);
      const outcome = await running.up(serviceStack, scopes[1].scope, desired, { refresh: true });
      // The rule's IP was ephemeral (addressReservation transient, the default): the rule comes back
      // on a new one and the firewall follows it.
      assert.deepEqual(
        outcome.changed.map((change) => `${change.type} ${change.name} ${change.op}`),
        [
          "gcp:compute/forwardingRule:ForwardingRule default/web:forwarding-rule-tcp create",
          "gcp:compute/firewall:Firewall default/web:firewall update",
        ],
      );
      assert.deepEqual(gceViolations(env.gce.listResources(), await declaredResourcesOf(env)), []);
    } finally {
      await proxy.close();
    }
  });

  // The address is made first only where `<lb>` is reserved for the Service's life (addressReservation
  // `always`); under `transient`, the default, the forwarding rule is made first and holds the IP.
  for (const kind of ["addresses", "forwardingRules"] as const) {
    it(`a checkpoint write refused after GCE made the new Service's ${kind === "addresses" ? "address (addressReservation always)" : "forwarding rule"}: the next run keeps it, creates no second one and keeps the IP`, async () => {
      const name = kind === "addresses" ? "api" : "mail";
      const uid =
        kind === "addresses" ? "0b0e2e00-2222-4222-8333-444455556666" : "0b0e2e00-3333-4222-8333-444455556666";
      const lb = loadBalancerName(uid);
      const withNew: ClusterSnapshot = {
        ...snapshot,
        services: [...snapshot.services, { ...snapshot.services[0], name, uid }],
      };
      const desiredNew = desiredState(
        withNew,
        kind === "addresses" ? parseConfig({ ...E2E_CONFIG, addressReservation: "always" }) : config,
      );
      const ipOf = (): unknown =>
        kind === "addresses"
          ? env.gce.listResources().find((resource) => resource.kind === "addresses" && resource.name === lb)
              ?.properties.address
          : env.gce.listResources().find((resource) => resource.kind === "forwardingRules" && resource.name === lb)
              ?.properties.ipAddress;
      const stack = serviceStackName("default", name);
      const scope = { kind: "service" as const, namespace: "default", name };
      const made = (): boolean =>
        env.gce.listResources().some((resource) => resource.kind === kind && resource.name === lb);
      const proxy = await startFaultProxy(env.gcs?.host ?? "");
      try {
        const running = new StackRunner(
          options(`workspaces-refused-${name}`, { env: { ...env.pulumiEnv, STORAGE_EMULATOR_HOST: proxy.host } }),
        );
        env.gce.clearHistory();
        proxy.refuseUploads(`.pulumi/stacks/${PROJECT_NAME}/${stack}`, made);
        await assert.rejects(running.up(stack, scope, desiredNew, { refresh: false }));
        proxy.refuseUploads(undefined);
        assert.notEqual(proxy.refused(), 0, "a checkpoint write was refused");
        assert.equal(made(), true, `GCE made ${kind}/${lb} before the refused write`);
        const ip = ipOf();
        assert.equal(typeof ip, "string");
        // What the bucket recorded: the create begun, its end refused.
        const read = await GcsBackend.fromUrl(env.backendUrl, env.pulumiEnv)?.readCheckpoint(PROJECT_NAME, stack);
        assert.equal(read?.kind, "read");
        const recorded = read?.kind === "read" ? read.deployment : undefined;
        const pending = ((recorded?.pending_operations ?? []) as { type: string; resource: { type: string } }[]).map(
          (operation) => `${operation.type} ${operation.resource.type}`,
        );
        const pendingType =
          kind === "addresses" ? "gcp:compute/address:Address" : "gcp:compute/forwardingRule:ForwardingRule";
        // With it, whichever other creates were in flight when the write was refused (timing).
        assert.deepEqual(
          pending.filter((operation) => operation === `creating ${pendingType}`),
          [`creating ${pendingType}`],
        );
        assert.deepEqual(
          pending.filter((operation) => !operation.startsWith("creating ")),
          [],
        );

        // The retry (the same runner, as the daemon retries) and a restarted daemon's runner.
        const outcome = await running.up(stack, scope, desiredNew, { refresh: false });
        const restarted = new StackRunner(options(`workspaces-refused-${name}-restarted`));
        const inspected = await restarted.inspect(stack, scope);
        assert.deepEqual(inspected.recovered, []);
        assert.deepEqual((await restarted.up(stack, scope, desiredNew, { refresh: true })).changed, []);
        assert.deepEqual(
          ingressOf(outcome.outputs, "default", name),
          [ip],
          "the Service's ingress is the IP GCE gave first",
        );
        assert.equal(ipOf(), ip, "the IP unchanged");
        const forLb = env.gce
          .history()
          .filter((entry) => entry.name === lb && (entry.kind === "addresses" || entry.kind === "forwardingRules"));
        assert.deepEqual(
          forLb.map((entry) => `${entry.op} ${entry.kind}`),
          kind === "addresses" ? ["create addresses", "create forwardingRules"] : ["create forwardingRules"],
          "each made once, never deleted",
        );
        assert.deepEqual(gceViolations(env.gce.listResources(), await declaredResourcesOf(env)), []);
      } finally {
        await proxy.close();
      }
    });
  }
});
