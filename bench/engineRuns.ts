/**
 * What one engine run costs the machine (issue 18), through the daemon's own StackRunner on the
 * offline environment: the pulumi CLI processes a new Service's stack starts, the CPU seconds its
 * child processes (CLI and provider plugin) spend, the same for an `up` that changes nothing, and
 * the daemon's memory per idle stack. CLI processes are counted by a wrapper `pulumi` that logs each
 * command; CPU is sampled from /proc for every descendant process (CLI, wrapper, plugins).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PulumiCommand } from "@pulumi/pulumi/automation";
import { StackRunner } from "../daemon/stacks";
import { CLUSTER_STACK, desiredState, parseConfig, serviceStackName, type ClusterSnapshot, type DesiredState } from "../model";
import { startTestEnv, type TestEnv } from "../test/support/env";
import { testenvBinDir } from "../test/support/testenv-paths";
import { median, round } from "./stats";

export interface EngineRunFigures {
  /** pulumi CLI processes the first up of a new Service's stack starts (the shared `pulumi version` excluded). */
  cliProcessesPerNewService: number;
  /** CPU seconds of those processes and their plugins. */
  newServiceChildCpuS: number;
  /** CPU seconds of an `up` of a one-Service stack that changes nothing (median of 3). */
  upChildCpuS: number;
  /** Daemon RSS growth per idle stack after its up, MB (from 1 to IDLE_STACKS stacks). */
  daemonIdleRssMbPerStack: number;
  /** The JavaScript heap's part of it (objects kept per stack), MB. */
  daemonIdleHeapMbPerStack: number;
  idleStacks: number;
}

const IDLE_STACKS = 21;

/** A `pulumi` that runs the real one and logs its command (`stack init`, `up --yes`, …). */
function wrapperRoot(dir: string, log: string): string {
  const bin = path.join(dir, "bin");
  fs.mkdirSync(bin, { recursive: true });
  const script = ["#!/usr/bin/env bash", `printf '%s %s\\n' "$1" "$2" >> "${log}"`, `exec "${path.join(testenvBinDir(), "pulumi")}" "$@"`].join("\n");
  fs.writeFileSync(path.join(bin, "pulumi"), `${script}\n`, { mode: 0o755 });
  return dir;
}

function readRuns(log: string): string[] {
  if (!fs.existsSync(log)) return [];
  return fs
    .readFileSync(log, "utf8")
    .split("\n")
    .filter((line) => line !== "");
}

/** clock ticks per second of /proc/<pid>/stat's utime and stime (USER_HZ, 100 on Linux). */
const TICKS_PER_S = 100;

/** /proc/<pid>/stat → ppid and utime + stime in seconds. */
function procStat(pid: string): { ppid: number; cpuS: number } | undefined {
  try {
    const text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { ppid: Number(fields[1]), cpuS: (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S };
  } catch {
    return undefined;
  }
}

/**
 * The CPU seconds of every descendant of this process while `run` runs (the pulumi CLI and the
 * plugins it starts), sampled from /proc every 20 ms: a process's last 20 ms may be missed.
 */
async function descendantsCpuS<T>(run: () => Promise<T>): Promise<number> {
  const seen = new Map<number, number>();
  const sample = (): void => {
    const parents = new Map<number, number>();
    const cpu = new Map<number, number>();
    for (const pid of fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))) {
      const stat = procStat(pid);
      if (stat === undefined) continue;
      parents.set(Number(pid), stat.ppid);
      cpu.set(Number(pid), stat.cpuS);
    }
    for (const [pid, cpuS] of cpu) {
      let parent = parents.get(pid);
      while (parent !== undefined && parent !== process.pid && parent > 1) parent = parents.get(parent);
      if (parent === process.pid) seen.set(pid, Math.max(seen.get(pid) ?? 0, cpuS));
    }
  };
  const timer = setInterval(sample, 20);
  try {
    await run();
    sample();
  } finally {
    clearInterval(timer);
  }
  return [...seen.values()].reduce((sum, cpuS) => sum + cpuS, 0);
}

function snapshot(services: number): ClusterSnapshot {
  return {
    nodes: [
      {
        name: "node-1",
        uid: "0b7a3c1e-0000-4000-8000-000000000001",
        providerID: "gce://dccm-test/us-central1-a/node-1",
        labels: { "topology.kubernetes.io/zone": "us-central1-a" },
        taints: [],
        deleting: false,
        podCIDRs: [],
      },
    ],
    services: Array.from({ length: services }, (_, i) => ({
      namespace: "default",
      name: `s${i}`,
      uid: `${String(i).padStart(8, "0")}-5e7f-4000-8000-000000000000`,
      type: "LoadBalancer",
      annotations: {},
      ports: [{ protocol: "TCP", port: 80 }],
      loadBalancerSourceRanges: [],
      deleting: false,
    })),
  };
}

function rssMb(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().rss / 1024 / 1024;
}

function heapMb(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

async function upService(runner: StackRunner, desired: DesiredState, i: number): Promise<void> {
  await runner.up(serviceStackName("default", `s${i}`), { kind: "service", namespace: "default", name: `s${i}` }, desired, { refresh: false });
}

export async function benchEngineRuns(): Promise<EngineRunFigures> {
  const env: TestEnv = await startTestEnv({ withKube: false });
  const log = path.join(env.dir, "cli.log");
  try {
    env.gce.putInstance("node-1", { zone: "us-central1-a" });
    const root = wrapperRoot(fs.mkdtempSync(path.join(os.tmpdir(), "dccm-bench-cli-")), log);
    const runner = new StackRunner({
      backendUrl: env.backendUrl,
      env: env.pulumiEnv,
      workDir: path.join(env.dir, "workspaces"),
      projectName: "dccm-b3nch",
      pulumiCommand: await PulumiCommand.get({ root, skipVersionCheck: true }),
    });
    const config = parseConfig({ project: "dccm-test", region: "us-central1", network: "k8s-net", nodeTags: ["k8s-node"], clusterName: "bench", clusterId: "b3nch" });
    const desired = desiredState(snapshot(IDLE_STACKS), config);
    await runner.listStacks();
    await runner.up(CLUSTER_STACK, { kind: "cluster" }, desired, { refresh: false });
    const beforeNew = readRuns(log).length;
    const newServiceCpuS = await descendantsCpuS(() => upService(runner, desired, 0));
    const newService = readRuns(log).slice(beforeNew);
    const noChange: number[] = [];
    for (let sample = 0; sample < 3; sample++) noChange.push(await descendantsCpuS(() => upService(runner, desired, 0)));
    const rssOne = rssMb();
    const heapOne = heapMb();
    for (let i = 1; i < IDLE_STACKS; i++) await upService(runner, desired, i);
    const rssMany = rssMb();
    const heapMany = heapMb();
    process.stderr.write(`engine runs: a new Service's CLI processes: ${newService.join(", ")}\n`);
    return {
      cliProcessesPerNewService: newService.length,
      newServiceChildCpuS: round(newServiceCpuS),
      upChildCpuS: round(median(noChange)),
      daemonIdleRssMbPerStack: round((rssMany - rssOne) / (IDLE_STACKS - 1), 3),
      daemonIdleHeapMbPerStack: round((heapMany - heapOne) / (IDLE_STACKS - 1), 3),
      idleStacks: IDLE_STACKS,
    };
  } finally {
    await env.stop();
  }
}
