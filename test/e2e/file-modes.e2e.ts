/**
 * `dccm daemon` as a process started under a permissive umask (022): the state directory, its
 * workspaces and the default file:// backend it writes (stack checkpoints included) are readable
 * by the owner only, because the daemon sets umask 077 before writing anything.
 */
import * as assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as readline from "node:readline";
import * as k8s from "@kubernetes/client-node";
import { startTestEnv, type TestEnv } from "../support/e2e/env";
import { repoRoot } from "../support/tooling/testenv-paths";
import { eventually } from "../support/wait";
import { createNode, E2E_CONFIG } from "../support/e2e/cluster";

function mode(file: string): string {
  return (fs.statSync(file).mode & 0o777).toString(8);
}

/** Every path under `root` that its group or others may read, write or enter. */
function openToOthers(root: string): string[] {
  const entries = fs.readdirSync(root, { recursive: true }) as string[];
  return [root, ...entries.map((entry) => path.join(root, entry))].filter(
    (file) => (fs.lstatSync(file).mode & 0o077) !== 0 && !fs.lstatSync(file).isSymbolicLink(),
  );
}

describe("dccm daemon process: file modes of its state", function () {
  this.timeout(600_000);
  let env: TestEnv;
  let child: ChildProcess | undefined;
  let exited: Promise<number | null>;
  let stateDir: string;

  before(async () => {
    env = await startTestEnv();
    const core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
    env.gce.putInstance("node-a1", { zone: "us-central1-a" });
    await createNode(core, "node-a1", "us-central1-a");
    const configPath = path.join(env.dir, "config.json");
    fs.writeFileSync(configPath, JSON.stringify(E2E_CONFIG));
    stateDir = path.join(env.dir, "state");
    // The default backend (file://<state-dir>/backend) is the one dccm creates itself.
    const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env.pulumiEnv };
    delete childEnv.PULUMI_BACKEND_URL;
    const log = fs.createWriteStream(path.join(env.dir, "daemon.log"));
    // A child inherits the umask of its parent at spawn: make it the permissive common default.
    const previous = process.umask(0o022);
    try {
      child = spawn(
        process.execPath,
        [
          path.join(repoRoot(), "dist", "bin", "dccm.js"),
          "daemon",
          "--kubeconfig",
          env.kube.kubeconfigPath,
          "--config",
          configPath,
          "--state-dir",
          stateDir,
          "--listen",
          "127.0.0.1:0",
          "--drift-interval",
          "1h",
          "--compute-endpoint",
          env.gce.computeEndpoint,
        ],
        { env: childEnv, stdio: ["ignore", "pipe", "pipe"] },
      );
    } finally {
      process.umask(previous);
    }
    const running = child;
    running.stderr?.pipe(log);
    exited = new Promise<number | null>((resolve) => running.once("exit", (code) => resolve(code)));
    const port = await new Promise<number>((resolve, reject) => {
      const lines = readline.createInterface({ input: running.stdout as NodeJS.ReadableStream });
      lines.on("line", (line) => {
        log.write(`${line}\n`);
        const entry = JSON.parse(line) as { msg?: string; address?: { port?: number } };
        if (entry.msg === "serving /healthz, /readyz, /metrics" && entry.address?.port !== undefined)
          resolve(entry.address.port);
      });
      running.once("exit", () =>
        reject(new Error(`daemon exited before serving; see ${path.join(env.dir, "daemon.log")}`)),
      );
    });
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
  });

  after(async () => {
    if (child !== undefined && child.exitCode === null) {
      child.kill("SIGTERM");
      await exited;
    }
    await env?.stop();
  });

  it("the state dir, the cluster stack's workspace and the backend are 700, the stack's checkpoint 600", () => {
    const checkpoint = path.join(
      stateDir,
      "backend",
      ".pulumi",
      "stacks",
      `dccm-${String(E2E_CONFIG.clusterId)}`,
      "cluster.json",
    );
    assert.deepEqual(
      [stateDir, path.join(stateDir, "workspaces", "cluster"), path.join(stateDir, "backend"), checkpoint].map(mode),
      ["700", "700", "700", "600"],
    );
  });

  it("nothing under the state dir is open to group or others", () => {
    assert.deepEqual(openToOthers(stateDir), []);
  });
});
