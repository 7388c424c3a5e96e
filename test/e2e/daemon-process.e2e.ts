/**
 * `dccm daemon` as a process: SIGTERM during an `up` exits 0, releases the Lease and leaves no
 * lock; SIGTERM with several `up`s in flight and a probe connection open ends within the shutdown
 * deadline; SIGKILL during an `up` and a restart converge with no lock left behind.
 */
import * as assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import * as readline from "node:readline";
import * as k8s from "@kubernetes/client-node";
import { loadBalancerName } from "../../model";
import { startTestEnv, type TestEnv } from "../support/e2e/env";
import { repoRoot } from "../support/tooling/testenv-paths";
import { eventually } from "../support/wait";
import { createNode, E2E_CONFIG, lbService } from "../support/e2e/cluster";

interface Running {
  child: ChildProcess;
  exited: Promise<number | null>;
  port: Promise<number>;
}

function lockFiles(backendDir: string): string[] {
  const root = path.join(backendDir, ".pulumi", "locks");
  if (!fs.existsSync(root)) return [];
  return (fs.readdirSync(root, { recursive: true }) as string[]).filter((file) => file.endsWith(".json"));
}

describe("dccm daemon process", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let configPath: string;
  let backendDir: string;
  let run = 0;

  function startDaemon(): Running {
    run++;
    const log = fs.createWriteStream(path.join(env.dir, `daemon-${run}.log`));
    const child = spawn(
      process.execPath,
      [
        path.join(repoRoot(), "dist", "bin", "dccm.js"),
        "daemon",
        "--kubeconfig",
        env.kube.kubeconfigPath,
        "--config",
        configPath,
        "--state-dir",
        path.join(env.dir, "state"),
        "--listen",
        "127.0.0.1:0",
        "--drift-interval",
        "1h",
        "--identity",
        `dccm-process-${run}`,
        // The node controller must talk to the emulator, never to Google.
        "--compute-endpoint",
        env.gce.computeEndpoint,
      ],
      // Its own process group, so SIGKILL can take the pulumi CLI down with it.
      { env: { ...process.env, ...env.pulumiEnv }, detached: true, stdio: ["ignore", "pipe", "pipe"] },
    );
    child.stderr?.pipe(log);
    const port = new Promise<number>((resolve, reject) => {
      const lines = readline.createInterface({ input: child.stdout as NodeJS.ReadableStream });
      lines.on("line", (line) => {
        log.write(`${line}\n`);
        const entry = JSON.parse(line) as { msg?: string; address?: { port?: number } };
        if (entry.msg === "serving /healthz, /readyz, /metrics" && entry.address?.port !== undefined)
          resolve(entry.address.port);
      });
      child.once("exit", () =>
        reject(new Error(`daemon exited before serving; see ${path.join(env.dir, `daemon-${run}.log`)}`)),
      );
    });
    port.catch(() => undefined);
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    return { child, exited, port };
  }

  async function waitReady(running: Running): Promise<void> {
    const port = await running.port;
    running.exited.then(
      (code) => {
        if (code !== 0 && code !== null)
          process.stderr.write(
            fs
              .readFileSync(path.join(env.dir, `daemon-${run}.log`), "utf8")
              .split("\n")
              .slice(-30)
              .join("\n"),
          );
      },
      () => undefined,
    );
    await eventually(
      "/readyz 200",
      async () => ((await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200 ? true : undefined),
      120_000,
    );
  }

  /** The cluster stack applied (its Service stacks wait for it), so a kill can only hit a Service's up. */
  async function waitClusterApplied(running: Running): Promise<void> {
    const port = await running.port;
    await eventually(
      "the cluster stack applied",
      async () =>
        /^dccm_reconciles_total\{kind="cluster",result="ok"\} [1-9]/m.test(
          await (await fetch(`http://127.0.0.1:${port}/metrics`)).text(),
        )
          ? true
          : undefined,
      120_000,
    );
  }

  async function waitForProviderCreate(baseline: number): Promise<void> {
    await eventually(
      "the provider's first create call",
      () => ((env.gce.calls()["POST /emulator/provider/create"] ?? 0) > baseline ? true : undefined),
      120_000,
      20,
    );
  }

  before(async () => {
    env = await startTestEnv();
    core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    await createNode(core, "node-a1", "us-central1-a");
    configPath = path.join(env.dir, "config.json");
    fs.writeFileSync(configPath, JSON.stringify({ ...E2E_CONFIG, backendUrl: env.backendUrl }));
    backendDir = env.backendUrl.slice("file://".length);
  });

  after(async () => {
    await env?.stop();
  });

  it("SIGTERM during an up exits 0, releases the Lease and leaves no lock", async () => {
    const running = startDaemon();
    await waitReady(running);
    await waitClusterApplied(running);
    const baseline = env.gce.calls()["POST /emulator/provider/create"] ?? 0;
    await core.createNamespacedService({ namespace: "default", body: lbService("term") });
    await waitForProviderCreate(baseline);
    running.child.kill("SIGTERM");
    assert.equal(await running.exited, 0);
    const lease = await env.kube.kubeConfig
      .makeApiClient(k8s.CoordinationV1Api)
      .readNamespacedLease({ name: "dccm", namespace: "kube-system" });
    assert.equal(lease.spec?.holderIdentity, "");
    assert.deepEqual(lockFiles(backendDir), []);
  });

  it("SIGTERM with three ups in flight and a scraper mid-request exits 0 within the shutdown deadline, leaving no lock", async () => {
    const running = startDaemon();
    await waitReady(running);
    await waitClusterApplied(running);
    const port = await running.port;
    const names = ["inflight-1", "inflight-2", "inflight-3"];
    await Promise.all(
      names.map((name) => core.createNamespacedService({ namespace: "default", body: lbService(name) })),
    );
    await eventually(
      "three Service ups started",
      async () => {
        const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        return names.every((name) =>
          new RegExp(`^dccm_stack_runs_total\\{stack="service\\.default\\.${name}",operation="up"\\} [1-9]`, "m").test(
            metrics,
          ),
        )
          ? true
          : undefined;
      },
      120_000,
      50,
    );
    // A request whose headers never end: server.close() alone waits for it (until headersTimeout).
    const scraper = net.connect(port, "127.0.0.1");
    await new Promise<void>((resolve, reject) => {
      scraper.once("connect", () => resolve());
      scraper.once("error", reject);
    });
    scraper.on("error", () => undefined);
    scraper.write("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    const signalledAt = Date.now();
    running.child.kill("SIGTERM");
    const code = await running.exited;
    const elapsed = Date.now() - signalledAt;
    scraper.destroy();
    assert.equal(code, 0);
    // The default --shutdown-timeout; a clean stop is far below it.
    assert.equal(elapsed < 30_000, true, `exited ${elapsed} ms after SIGTERM`);
    assert.deepEqual(lockFiles(backendDir), []);
    const lease = await env.kube.kubeConfig
      .makeApiClient(k8s.CoordinationV1Api)
      .readNamespacedLease({ name: "dccm", namespace: "kube-system" });
    assert.equal(lease.spec?.holderIdentity, "");
  });

  it("SIGKILL during an up, then a restart: the stack converges and no lock remains", async () => {
    const first = startDaemon();
    await waitReady(first);
    await waitClusterApplied(first);
    const baseline = env.gce.calls()["POST /emulator/provider/create"] ?? 0;
    const created = await core.createNamespacedService({ namespace: "default", body: lbService("killed") });
    const lb = loadBalancerName(created.metadata?.uid ?? "");
    await waitForProviderCreate(baseline);
    process.kill(-(first.child.pid ?? 0), "SIGKILL");
    await first.exited;
    // A kill can also land inside the blob library's in-place write of a checkpoint's metadata
    // sidecar; make that happen for sure: an empty .attrs makes every read of the stack fail (EOF).
    // (The kill may itself have landed while the sidecar was absent: it is written empty either way.)
    const attrs = path.join(backendDir, ".pulumi", "stacks", "dccm-e2e0cafe", "service.default.killed.json.attrs");
    fs.writeFileSync(attrs, "");

    const second = startDaemon();
    await waitReady(second);
    const ip = await eventually(
      "killed's ingress after the restart",
      async () =>
        (await core.readNamespacedService({ name: "killed", namespace: "default" })).status?.loadBalancer?.ingress?.[0]
          ?.ip,
      240_000,
    );
    const ours = env.gce.listResources().filter((resource) => resource.name.includes(lb));
    assert.deepEqual(
      ours.map((resource) => `${resource.kind} ${resource.name}`),
      [`backendServices ${lb}`, `firewalls k8s-fw-${lb}`, `forwardingRules ${lb}`],
    );
    assert.equal(ours.find((resource) => resource.kind === "forwardingRules")?.properties.ipAddress, ip);
    // The Service stopped by SIGTERM in the previous test converges too.
    await eventually(
      "term's ingress",
      async () =>
        (await core.readNamespacedService({ name: "term", namespace: "default" })).status?.loadBalancer?.ingress?.[0]
          ?.ip,
      240_000,
    );
    // The cluster stack records the hash it applied: after a restart it is read, not run again.
    const metrics = await (await fetch(`http://127.0.0.1:${await second.port}/metrics`)).text();
    assert.deepEqual(
      metrics.split("\n").filter((line) => line.startsWith('dccm_stack_runs_total{stack="cluster"')),
      [],
    );
    assert.match(metrics, /^dccm_stack_runs_total\{stack="service\.default\.killed",operation="(up|refresh)"\} [1-9]/m);
    second.child.kill("SIGTERM");
    assert.equal(await second.exited, 0);
    assert.deepEqual(lockFiles(backendDir), []);
  });
});
