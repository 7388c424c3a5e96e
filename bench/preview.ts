/**
 * `dccm preview` of N new LoadBalancer Services: the real CLI as a child process on the
 * offline environment (real engine, the GCE emulator's provider), every stack new, so every
 * Service is previewed through the engine. Wall time per Service, and the peak RSS of the preview
 * process with every process under it (pulumi CLI, provider plugins), summed from /proc every 50 ms;
 * the preview process's own peak; and, in the same run, the same preview of 1 Service: the floor
 * that holds whatever N is (the process with its code loaded, one CLI, one plugin).
 * `DCCM_BENCH_PREVIEW_SERVICES` (500 by default) sets N; `DCCM_BENCH_PREVIEW_PARALLELISM`,
 * when set, is passed as `--parallelism` (default: dccm preview's own for this machine).
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { startTestEnv, type TestEnv } from "../test/support/e2e/env";
import { repoRoot } from "../test/support/tooling/testenv-paths";
import { elapsedMs, round, runAlone } from "./stats";

export interface PreviewFigures {
  previewServices: number;
  previewMsPerService: number;
  /** The preview process and its descendants, summed at the sample where the sum was highest, MB. */
  previewPeakRssMb: number;
  /** The preview process alone, its highest sample, MB. */
  previewProcessPeakRssMb: number;
  /** previewPeakRssMb of a preview of 1 new Service in the same run, MB. */
  previewOneServicePeakRssMb: number;
  /** previewPeakRssMb ÷ previewOneServicePeakRssMb. */
  previewPeakRssRatioToOne: number;
}

const PAGE_BYTES = 4096;

/** pid → [ppid, RSS bytes, command] of every process, from /proc/<pid>/stat. */
function processTable(): Map<number, [number, number, string]> {
  const table = new Map<number, [number, number, string]>();
  for (const pid of fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))) {
    try {
      const text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
      const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
      table.set(Number(pid), [
        Number(fields[1]),
        Number(fields[21]) * PAGE_BYTES,
        text.slice(text.indexOf("(") + 1, text.lastIndexOf(")")),
      ]);
    } catch {
      // Gone between the listing and the read.
    }
  }
  return table;
}

/** RSS of `root` and every process under it, bytes, in all and by command. */
function treeRss(root: number): { total: number; byCommand: Map<string, number> } {
  const table = processTable();
  let total = 0;
  const byCommand = new Map<string, number>();
  for (const [pid, [, rss, command]] of table) {
    let at: number | undefined = pid;
    while (at !== undefined && at !== root && at > 1) at = table.get(at)?.[0];
    if (at !== root) continue;
    total += rss;
    const name = pid === root ? "dccm preview" : command;
    byCommand.set(name, (byCommand.get(name) ?? 0) + rss);
  }
  return { total, byCommand };
}

function megabytes(bytes: number): number {
  return round(bytes / 1024 / 1024, 0);
}

function kubectlSnapshot(services: number): string {
  const node = {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: "node-1",
      uid: "0b7a3c1e-0000-4000-8000-000000000001",
      labels: { "topology.kubernetes.io/zone": "us-central1-a" },
    },
    spec: { providerID: "gce://dccm-test/us-central1-a/node-1" },
  };
  const service = (i: number): Record<string, unknown> => ({
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace: "default", name: `s${i}`, uid: `${String(i).padStart(8, "0")}-5e7f-4000-8000-000000000000` },
    spec: {
      type: "LoadBalancer",
      selector: { app: `s${i}` },
      ports: [{ name: "http", protocol: "TCP", port: 80, targetPort: 8080 }],
    },
  });
  return JSON.stringify({
    apiVersion: "v1",
    kind: "List",
    items: [node, ...Array.from({ length: services }, (_, i) => service(i))],
  });
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  peakRss: number;
  /** The preview process's own highest sample. */
  ownPeakRss: number;
  /** The peak sample by command (dccm preview itself, pulumi, node: the emulator's provider plugin), MB, to tell what holds it. */
  peakByCommand: Record<string, number>;
}

function runPreview(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(repoRoot(), "dist", "bin", "dccm.js"), "preview", ...args], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    let peakRss = 0;
    let ownPeakRss = 0;
    let peakByCommand: Record<string, number> = {};
    const timer = setInterval(() => {
      if (child.pid === undefined) return;
      const sample = treeRss(child.pid);
      ownPeakRss = Math.max(ownPeakRss, sample.byCommand.get("dccm preview") ?? 0);
      if (sample.total <= peakRss) return;
      peakRss = sample.total;
      peakByCommand = Object.fromEntries([...sample.byCommand].map(([command, bytes]) => [command, megabytes(bytes)]));
    }, 50);
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    child.once("error", (error) => {
      clearInterval(timer);
      reject(error);
    });
    child.once("close", (code) => {
      clearInterval(timer);
      resolve({ code, stdout, stderr, peakRss, ownPeakRss, peakByCommand });
    });
  });
}

/** One `dccm preview --snapshot` of `services` new Services in `env` with the config file `config`: its wall time and memory. */
async function previewOf(env: TestEnv, config: string, services: number): Promise<{ ms: number; run: Run }> {
  const snapshot = path.join(env.dir, `cluster-${services}.json`);
  fs.writeFileSync(snapshot, kubectlSnapshot(services));
  const start = process.hrtime.bigint();
  const parallelism = process.env.DCCM_BENCH_PREVIEW_PARALLELISM;
  const run = await runPreview(
    [
      "--kubeconfig",
      env.kube.kubeconfigPath,
      "--config",
      config,
      "--snapshot",
      snapshot,
      "--json",
      ...(parallelism === undefined ? [] : ["--parallelism", parallelism]),
    ],
    env.pulumiEnv,
  );
  const ms = elapsedMs(start);
  if (run.code !== 2) throw new Error(`dccm preview exited ${String(run.code)}: ${run.stderr}`);
  const plan = JSON.parse(run.stdout) as { summary: { create: number }; stacks: { action: string }[] };
  // Each Service: address, backend service, firewall, forwarding rule; every stack a create.
  const created = plan.stacks.filter((stack) => stack.action === "create").length;
  if (created !== services + 1 || plan.summary.create < 4 * services)
    throw new Error(
      `dccm preview planned ${created} new stacks and ${plan.summary.create} creates for ${services} Services`,
    );
  process.stderr.write(
    `preview: ${services} Services, ${plan.summary.create} creates in ${round(ms / 1000)} s; peak RSS by command (MB): ${JSON.stringify(run.peakByCommand)}\n`,
  );
  return { ms, run };
}

export async function benchPreview(
  services = Number(process.env.DCCM_BENCH_PREVIEW_SERVICES ?? 500),
): Promise<PreviewFigures> {
  const env = await startTestEnv();
  try {
    const config = path.join(env.dir, "config.json");
    fs.writeFileSync(
      config,
      JSON.stringify({
        project: "dccm-test",
        region: "us-central1",
        network: "k8s-net",
        nodeTags: ["k8s-node"],
        clusterName: "bench",
        clusterId: "b3nch",
        backendUrl: env.backendUrl,
      }),
    );
    const one = await previewOf(env, config, 1);
    const { ms, run } = await previewOf(env, config, services);
    return {
      previewServices: services,
      previewMsPerService: round(ms / services, 0),
      previewPeakRssMb: megabytes(run.peakRss),
      previewProcessPeakRssMb: megabytes(run.ownPeakRss),
      previewOneServicePeakRssMb: megabytes(one.run.peakRss),
      previewPeakRssRatioToOne: round(run.peakRss / one.run.peakRss, 2),
    };
  } finally {
    await env.stop();
  }
}

// `node dist/bench/preview.js`: this bench alone (e.g. at 500 Services), its figures as one JSON line.
if (require.main === module) runAlone(() => benchPreview());
