/**
 * What one engine run costs the machine, through the daemon's own StackRunner on the
 * offline environment: the pulumi CLI processes a new Service's stack starts, the CPU seconds its
 * child processes (CLI and provider plugin) spend, the same for an `up` that changes nothing, and
 * the daemon's memory per idle stack. CLI processes are counted by a wrapper `pulumi` that logs each
 * command; CPU is sampled from /proc for every descendant process (CLI, wrapper, plugins) and
 * attributed by command line, so one up splits into the CLI, the plugin and this process; the CLI's
 * and the plugin's starts are measured alone, and the same runs once more attached to one shared
 * plugin (stacks/sharedProvider.ts), whose CPU during each run counts.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { PulumiCommand } from "@pulumi/pulumi/automation";
import { locatePlugin, SharedProvider } from "../stacks/sharedProvider";
import { StackRunner } from "../stacks/runner";
import {
  CLUSTER_STACK,
  desiredState,
  parseConfig,
  serviceStackName,
  type ClusterSnapshot,
  type DesiredState,
} from "../model";
import { startTestEnv, type TestEnv } from "../test/support/e2e/env";
import { testenvBinDir } from "../test/support/tooling/testenv-paths";
import { BENCH_NODE } from "./scale";
import { median, round } from "./stats";

export interface EngineRunFigures {
  /** pulumi CLI processes the first up of a new Service's stack starts (the shared `pulumi version` excluded). */
  cliProcessesPerNewService: number;
  /** CPU seconds of those processes and their plugins. */
  newServiceChildCpuS: number;
  /** CPU seconds of an `up` of a one-Service stack that changes nothing (median of 5). */
  upChildCpuS: number;
  /** Its pulumi CLI's part. */
  upCliCpuS: number;
  /** Its provider plugin's part. */
  upProviderCpuS: number;
  /** This process's CPU during it: the inline program, the Automation API, the emulator serving the plugin. */
  upInProcessCpuS: number;
  /** `pulumi version`: what a CLI start costs (median of 5). */
  cliStartCpuS: number;
  /** The plugin from its start to the port it announces (median of 5). */
  providerStartCpuS: number;
  /** The CLI's and the plugin's CPU past their starts: the engine's steps and the provider's calls. */
  upStepsCpuS: number;
  /** The plugin's part of the whole up (children and this process): what a shared provider can save. */
  upProviderShare: number;
  /** newServiceChildCpuS with one provider for every engine run (--shared-provider), its CPU during the run included. */
  newServiceChildCpuSSharedProvider: number;
  /** upChildCpuS with the shared provider. */
  upChildCpuSSharedProvider: number;
  /** Its CLI's part. */
  upCliCpuSSharedProvider: number;
  /** The shared plugin's CPU during the up. */
  upProviderCpuSSharedProvider: number;
  /** upInProcessCpuS with the shared provider (its forwarding runs in the daemon). */
  upInProcessCpuSSharedProvider: number;
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
  const script = [
    "#!/usr/bin/env bash",
    `printf '%s %s\\n' "$1" "$2" >> "${log}"`,
    `exec "${path.join(testenvBinDir(), "pulumi")}" "$@"`,
  ].join("\n");
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

/** Where a descendant's CPU goes: the pulumi CLI, the `gcp` provider plugin, anything else (the wrapper's bash). */
export type ProcessKind = "cli" | "provider" | "other";

export type CpuByKind = Record<ProcessKind, number>;

/** Pure: a process's kind from its command line (`/proc/<pid>/cmdline`, NUL-separated). */
export function processKind(cmdline: string): ProcessKind {
  const args = cmdline.split("\0");
  if (args.some((arg) => arg.endsWith("provider.js") || arg.endsWith("pulumi-resource-gcp"))) return "provider";
  if (path.basename(args[0] ?? "") === "pulumi") return "cli";
  return "other";
}

function cmdlineOf(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return "";
  }
}

/** Every descendant of this process: pid → its stat. */
function descendants(): Map<number, { cpuS: number }> {
  const parents = new Map<number, number>();
  const cpu = new Map<number, number>();
  for (const pid of fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))) {
    const stat = procStat(pid);
    if (stat === undefined) continue;
    parents.set(Number(pid), stat.ppid);
    cpu.set(Number(pid), stat.cpuS);
  }
  const found = new Map<number, { cpuS: number }>();
  for (const [pid, cpuS] of cpu) {
    let parent = parents.get(pid);
    while (parent !== undefined && parent !== process.pid && parent > 1) parent = parents.get(parent);
    if (parent === process.pid) found.set(pid, { cpuS });
  }
  return found;
}

export interface RunCpu {
  byKind: CpuByKind;
  /** Every descendant's. */
  childS: number;
  /** This process's own (the inline program, the Automation API, the emulator's HTTP face, a shared provider's forwarding). */
  selfS: number;
}

/**
 * The CPU seconds every descendant of this process spent while `run` ran (the pulumi CLI and the
 * plugins it starts, and a shared provider started before: only its part during the run), sampled
 * from /proc every 20 ms: a process's last 20 ms may be missed.
 */
async function runCpu<T>(run: () => Promise<T>): Promise<RunCpu> {
  const baseline = new Map([...descendants()].map(([pid, stat]) => [pid, stat.cpuS]));
  const seen = new Map<number, { cpuS: number; kind: ProcessKind }>();
  const sample = (): void => {
    for (const [pid, stat] of descendants()) {
      const known = seen.get(pid);
      seen.set(pid, {
        cpuS: Math.max(known?.cpuS ?? 0, stat.cpuS - (baseline.get(pid) ?? 0)),
        kind: known?.kind ?? processKind(cmdlineOf(pid)),
      });
    }
  };
  const self = process.cpuUsage();
  const timer = setInterval(sample, 20);
  try {
    await run();
    sample();
  } finally {
    clearInterval(timer);
  }
  const used = process.cpuUsage(self);
  const byKind: CpuByKind = { cli: 0, provider: 0, other: 0 };
  for (const { cpuS, kind } of seen.values()) byKind[kind] += cpuS;
  return { byKind, childS: byKind.cli + byKind.provider + byKind.other, selfS: (used.user + used.system) / 1e6 };
}

function snapshot(services: number): ClusterSnapshot {
  return {
    nodes: [BENCH_NODE],
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
  await runner.up(
    serviceStackName("default", `s${i}`),
    { kind: "service", namespace: "default", name: `s${i}` },
    desired,
    { refresh: false },
  );
}

const SAMPLES = 5;

/** Median per field of CPU samples. */
function medianCpu(samples: readonly RunCpu[]): RunCpu {
  return {
    byKind: {
      cli: median(samples.map((s) => s.byKind.cli)),
      provider: median(samples.map((s) => s.byKind.provider)),
      other: median(samples.map((s) => s.byKind.other)),
    },
    childS: median(samples.map((s) => s.childS)),
    selfS: median(samples.map((s) => s.selfS)),
  };
}

/** CPU seconds of starting the CLI (`pulumi version`) and the plugin (until it announced its port), medians. */
async function startCosts(pulumiEnv: Record<string, string>): Promise<{ cliS: number; providerS: number }> {
  const cli: number[] = [];
  const provider: number[] = [];
  for (let sample = 0; sample < SAMPLES; sample++) {
    const run = await runCpu(() =>
      promisify(execFile)(path.join(testenvBinDir(), "pulumi"), ["version"], { env: { ...process.env, ...pulumiEnv } }),
    );
    cli.push(run.byKind.cli);
    const child = spawn(locatePlugin(pulumiEnv), [], {
      env: { ...process.env, ...pulumiEnv },
      stdio: ["ignore", "pipe", "ignore"],
    });
    await new Promise<void>((resolve) => child.stdout.once("data", () => resolve()));
    provider.push(procStat(String(child.pid))?.cpuS ?? 0);
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    await exited;
  }
  return { cliS: median(cli), providerS: median(provider) };
}

/** A new Service's first up and no-change ups of it, through `runner`. */
async function serviceRuns(
  runner: StackRunner,
  desired: DesiredState,
  service: number,
): Promise<{ newService: RunCpu; noChange: RunCpu }> {
  await runner.listStacks();
  const newService = await runCpu(() => upService(runner, desired, service));
  const noChange: RunCpu[] = [];
  for (let sample = 0; sample < SAMPLES; sample++)
    noChange.push(await runCpu(() => upService(runner, desired, service)));
  return { newService, noChange: medianCpu(noChange) };
}

/** The same runs with one provider for every engine run (stacks/sharedProvider.ts). */
async function sharedProviderRuns(
  env: TestEnv,
  desired: DesiredState,
  service: number,
): Promise<{ newService: RunCpu; noChange: RunCpu }> {
  const shared = new SharedProvider({
    env: env.pulumiEnv,
    backoffBaseMs: 1_000,
    backoffMaxMs: 10_000,
    healthyAfterMs: 60_000,
  });
  try {
    const attach = await shared.start();
    const runner = new StackRunner({
      backendUrl: env.backendUrl,
      env: { ...env.pulumiEnv, ...attach },
      workDir: path.join(env.dir, "workspaces-shared"),
      projectName: "dccm-b3nch",
      pulumiCommand: env.pulumiCommand,
    });
    return await serviceRuns(runner, desired, service);
  } finally {
    await shared.stop();
  }
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
    const config = parseConfig({
      project: "dccm-test",
      region: "us-central1",
      network: "k8s-net",
      nodeTags: ["k8s-node"],
      clusterName: "bench",
      clusterId: "b3nch",
    });
    const desired = desiredState(snapshot(IDLE_STACKS + 1), config);
    await runner.listStacks();
    await runner.up(CLUSTER_STACK, { kind: "cluster" }, desired, { refresh: false });
    const beforeNew = readRuns(log).length;
    const own = await serviceRuns(runner, desired, 0);
    const newService = readRuns(log).slice(beforeNew, beforeNew + 2);
    const rssOne = rssMb();
    const heapOne = heapMb();
    for (let i = 1; i < IDLE_STACKS; i++) await upService(runner, desired, i);
    const rssMany = rssMb();
    const heapMany = heapMb();
    const shared = await sharedProviderRuns(env, desired, IDLE_STACKS);
    const starts = await startCosts(env.pulumiEnv);
    process.stderr.write(`engine runs: a new Service's CLI processes: ${newService.join(", ")}\n`);
    process.stderr.write(
      `engine runs: one no-change up, own provider ${JSON.stringify(own.noChange)}, shared ${JSON.stringify(shared.noChange)}, starts ${JSON.stringify(starts)}\n`,
    );
    return {
      cliProcessesPerNewService: newService.length,
      ...figures(own, shared, starts),
      daemonIdleRssMbPerStack: round((rssMany - rssOne) / (IDLE_STACKS - 1), 3),
      daemonIdleHeapMbPerStack: round((heapMany - heapOne) / (IDLE_STACKS - 1), 3),
      idleStacks: IDLE_STACKS,
    };
  } finally {
    await env.stop();
  }
}

type Runs = { newService: RunCpu; noChange: RunCpu };

function figures(
  own: Runs,
  shared: Runs,
  starts: { cliS: number; providerS: number },
): Omit<
  EngineRunFigures,
  "cliProcessesPerNewService" | "daemonIdleRssMbPerStack" | "daemonIdleHeapMbPerStack" | "idleStacks"
> {
  const up = own.noChange;
  return {
    newServiceChildCpuS: round(own.newService.childS),
    upChildCpuS: round(up.childS),
    upCliCpuS: round(up.byKind.cli),
    upProviderCpuS: round(up.byKind.provider),
    upInProcessCpuS: round(up.selfS),
    cliStartCpuS: round(starts.cliS),
    providerStartCpuS: round(starts.providerS),
    upStepsCpuS: round(up.byKind.cli - starts.cliS + up.byKind.provider - starts.providerS),
    upProviderShare: round(up.byKind.provider / (up.childS + up.selfS), 3),
    newServiceChildCpuSSharedProvider: round(shared.newService.childS),
    upChildCpuSSharedProvider: round(shared.noChange.childS),
    upCliCpuSSharedProvider: round(shared.noChange.byKind.cli),
    upProviderCpuSSharedProvider: round(shared.noChange.byKind.provider),
    upInProcessCpuSSharedProvider: round(shared.noChange.selfS),
  };
}
