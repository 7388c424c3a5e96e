/**
 * `dccm daemon` run as a process against the offline environment, for tests that kill it: start,
 * readiness, metrics, its descendant processes (the pulumi CLI and its plugins) and backend locks.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as readline from "node:readline";
import * as k8s from "@kubernetes/client-node";
import { createNode, E2E_CONFIG } from "./cluster";
import { startTestEnv, type E2eBackend, type TestEnv } from "./env";
import { GcsClient, gcsLocation } from "../../../stacks/gcs";
import { repoRoot } from "../tooling/testenv-paths";
import { eventually } from "../wait";

export interface RunningDaemon {
  child: ChildProcess;
  pid: number;
  exited: Promise<number | null>;
  port: Promise<number>;
  logPath: string;
  /** Date.now() at spawn. */
  startedAt: number;
}

/** The first log line of a daemon with this message: its time (ms since the epoch), if any. */
export function logTime(logPath: string, message: string): number | undefined {
  for (const line of fs.readFileSync(logPath, "utf8").split("\n")) {
    if (!line.includes(message)) continue;
    try {
      const entry = JSON.parse(line) as { msg?: string; time?: number };
      if (entry.msg === message && typeof entry.time === "number") return entry.time;
    } catch {
      // Not a log line of ours.
    }
  }
  return undefined;
}

export function lockFiles(backendDir: string): string[] {
  const root = path.join(backendDir, ".pulumi", "locks");
  if (!fs.existsSync(root)) return [];
  return (fs.readdirSync(root, { recursive: true }) as string[]).filter((file) => file.endsWith(".json"));
}

/** The stack locks of the environment's backend, file:// or gs:// (paths under `.pulumi/locks`). */
export async function backendLocks(env: TestEnv): Promise<string[]> {
  if (env.backend === "file") return lockFiles(env.backendUrl.slice("file://".length));
  const location = gcsLocation(env.backendUrl);
  if (location === undefined) throw new Error(`backendLocks: ${env.backendUrl} is not a gs:// backend`);
  const root = `${location.prefix}.pulumi/locks/`;
  const names = await new GcsClient({ env: env.pulumiEnv }).list(location.bucket, root);
  return names.filter((name) => name.endsWith(".json")).map((name) => name.slice(root.length));
}

/**
 * What the environment's backend holds, to tell that nothing wrote it: file:// path → sha256 of the
 * file; gs:// object name → its MD5 and generation (a rewrite of the same bytes is a new generation).
 */
export async function backendContents(env: TestEnv): Promise<Map<string, string>> {
  const contents = new Map<string, string>();
  if (env.backend === "file") {
    const dir = env.backendUrl.slice("file://".length);
    for (const entry of (fs.readdirSync(dir, { recursive: true }) as string[]).sort()) {
      const file = path.join(dir, entry);
      if (fs.statSync(file).isFile())
        contents.set(entry, crypto.createHash("sha256").update(fs.readFileSync(file)).digest("hex"));
    }
    return contents;
  }
  const location = gcsLocation(env.backendUrl);
  if (location === undefined || env.gcs === undefined)
    throw new Error(`backendContents: ${env.backendUrl} is not a gs:// backend of fake-gcs-server`);
  let pageToken = "";
  do {
    const query = new URLSearchParams({ prefix: location.prefix, ...(pageToken !== "" ? { pageToken } : {}) });
    const page = (await (
      await fetch(`http://${env.gcs.host}/storage/v1/b/${location.bucket}/o?${query.toString()}`)
    ).json()) as {
      items?: { name: string; md5Hash: string; generation: string }[];
      nextPageToken?: string;
    };
    for (const item of page.items ?? []) contents.set(item.name, `${item.md5Hash} ${item.generation}`);
    pageToken = page.nextPageToken ?? "";
  } while (pageToken !== "");
  return new Map([...contents].sort(([a], [b]) => a.localeCompare(b)));
}

/** Stack names in a file backend (`<project>/<stack>.json` checkpoints). */
export function backendStacks(backendDir: string): string[] {
  const root = path.join(backendDir, ".pulumi", "stacks");
  if (!fs.existsSync(root)) return [];
  return (fs.readdirSync(root, { recursive: true }) as string[])
    .filter((file) => file.endsWith(".json"))
    .map((file) => path.basename(file, ".json"))
    .sort();
}

export interface ProcessInfo {
  pid: number;
  ppid: number;
  comm: string;
  state: string;
  /** The command line, for messages. */
  cmdline: string;
}

/** One /proc/<pid>/stat, or undefined when the process is gone. */
export function processInfo(pid: number): ProcessInfo | undefined {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // comm is in parentheses and may hold spaces or parentheses: split at the last ')'.
  const open = stat.indexOf("(");
  const close = stat.lastIndexOf(")");
  const [state, ppid] = stat.slice(close + 2).split(" ");
  let cmdline = "";
  try {
    cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim();
  } catch {
    // Gone meanwhile.
  }
  return { pid, ppid: Number(ppid), comm: stat.slice(open + 1, close), state: state ?? "?", cmdline };
}

/** Alive means not gone and not a zombie (an orphan's zombie waits for a reaper; it runs nothing). */
export function alive(pid: number): boolean {
  const info = processInfo(pid);
  return info !== undefined && info.state !== "Z";
}

/** Every live descendant of `root`. */
/** The daemon's reaper (stacks/reaper.ts) lives as long as the daemon: it is none of its runs. */
export function isReaper(info: ProcessInfo): boolean {
  return info.cmdline.includes("reaperMain.js");
}

export function descendants(root: number): ProcessInfo[] {
  const all = fs
    .readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .map((entry) => processInfo(Number(entry)))
    .filter((info): info is ProcessInfo => info !== undefined && info.state !== "Z");
  const found: ProcessInfo[] = [];
  let frontier = new Set([root]);
  while (frontier.size > 0) {
    const next = all.filter((info) => frontier.has(info.ppid));
    found.push(...next);
    frontier = new Set(next.map((info) => info.pid));
  }
  return found;
}

export class DaemonProcesses {
  private run = 0;
  private readonly started: RunningDaemon[] = [];

  constructor(
    private readonly env: TestEnv,
    private readonly configPath: string,
    private readonly extraArgs: string[] = [],
  ) {}

  /** The directory of a file:// environment's backend (a gs:// one has none: backendLocks, declaredResourcesOf). */
  get backendDir(): string {
    if (this.env.backend !== "file")
      throw new Error(`backendDir: the environment's backend is ${this.env.backendUrl}, not a directory`);
    return this.env.backendUrl.slice("file://".length);
  }

  /**
   * `identity`: the Lease holder name (default a new one per start, i.e. another replica taking over).
   * `kubeconfig`: instead of the admin one (e.g. a ServiceAccount token's, for RBAC tests).
   * `dccm`: another build's bin/dccm.js (e.g. the previous release's: scripts/testenv dccm-previous).
   */
  start(
    options: {
      identity?: string;
      logLevel?: string;
      env?: Record<string, string>;
      kubeconfig?: string;
      dccm?: string;
    } = {},
  ): RunningDaemon {
    this.run++;
    const logPath = path.join(this.env.dir, `daemon-${this.run}.log`);
    const log = fs.createWriteStream(logPath);
    const child = spawn(
      process.execPath,
      [
        options.dccm ?? path.join(repoRoot(), "dist", "bin", "dccm.js"),
        "daemon",
        "--kubeconfig",
        options.kubeconfig ?? this.env.kube.kubeconfigPath,
        "--config",
        this.configPath,
        "--state-dir",
        path.join(this.env.dir, "state"),
        "--listen",
        "127.0.0.1:0",
        "--drift-interval",
        "1h",
        // The tests count on four runs at once, whatever the machine's cores.
        "--parallelism",
        "4",
        "--identity",
        options.identity ?? `dccm-process-${this.run}`,
        "--log-level",
        options.logLevel ?? "info",
        // The node controller must talk to the emulator, never to Google.
        "--compute-endpoint",
        this.env.gce.computeEndpoint,
        ...this.extraArgs,
      ],
      // Its own process group, so cleanup can take everything it started down with it.
      {
        env: { ...process.env, ...this.env.pulumiEnv, ...options.env },
        detached: true,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    child.stderr?.pipe(log);
    const port = new Promise<number>((resolve, reject) => {
      const lines = readline.createInterface({ input: child.stdout as NodeJS.ReadableStream });
      lines.on("line", (line) => {
        log.write(`${line}\n`);
        try {
          const entry = JSON.parse(line) as { msg?: string; address?: { port?: number } };
          if (entry.msg === "serving /healthz, /readyz, /metrics" && entry.address?.port !== undefined)
            resolve(entry.address.port);
        } catch {
          // Not a log line of ours.
        }
      });
      child.once("exit", () => reject(new Error(`daemon exited before serving; see ${logPath}`)));
    });
    port.catch(() => undefined);
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const running: RunningDaemon = { child, pid: child.pid ?? 0, exited, port, logPath, startedAt: Date.now() };
    this.started.push(running);
    return running;
  }

  async waitReady(running: RunningDaemon, timeoutMs = 120_000): Promise<void> {
    const port = await running.port;
    await eventually(
      "/readyz 200",
      async () => ((await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200 ? true : undefined),
      timeoutMs,
    );
  }

  async metrics(running: RunningDaemon): Promise<string> {
    return (await fetch(`http://127.0.0.1:${await running.port}/metrics`)).text();
  }

  /** The value of one sample of the daemon's /metrics (0 when absent). */
  async metric(running: RunningDaemon, sample: string): Promise<number> {
    const text = await this.metrics(running);
    const line = text.split("\n").find((candidate) => candidate.startsWith(`${sample} `));
    return line === undefined ? 0 : Number(line.slice(sample.length + 1));
  }

  /** The cluster stack applied (Service stacks wait for it). */
  async waitClusterApplied(running: RunningDaemon, timeoutMs = 120_000): Promise<void> {
    await eventually(
      "the cluster stack applied",
      async () =>
        (await this.metric(running, 'dccm_reconciles_total{kind="cluster",result="ok"}')) > 0 ? true : undefined,
      timeoutMs,
    );
  }

  /** SIGKILL of the daemon process alone: what an OOM kill or a node loss does to it. */
  async kill(running: RunningDaemon): Promise<void> {
    process.kill(running.pid, "SIGKILL");
    await running.exited;
  }

  async stop(running: RunningDaemon): Promise<number | null> {
    running.child.kill("SIGTERM");
    return running.exited;
  }

  /** Kills every process group this helper started (cleanup after a failed test). */
  killAll(): void {
    for (const running of this.started) {
      try {
        process.kill(-running.pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
  }
}

/**
 * How long a process of a killed daemon may outlive it: 1 s, the CLI (the only writer of the
 * stack), its plugins (still calling GCE) and the reaper alike (stacks/reaper.ts).
 */
export const KILL_GRACE_MS = 1000;
/** How long a provider plugin may outlive a CLI the daemon terminated (the second interrupt). */
export const PLUGIN_GRACE_MS = 3000;

export interface KillReport {
  /** Processes that outlived their grace, as `cmdline (pid) alive after N ms`. */
  violations: string[];
  /** `cmdline N ms` for every process the daemon had started. */
  deaths: string[];
}

/**
 * SIGKILLs the daemon process alone (what an OOM kill does) and watches what it had started die.
 * `sawCli`: whether a pulumi CLI was running at the kill.
 */
export async function killAndWatch(
  daemons: DaemonProcesses,
  running: RunningDaemon,
): Promise<KillReport & { sawCli: boolean }> {
  const started = descendants(running.pid);
  await daemons.kill(running);
  const killedAt = Date.now();
  const goneAfter = new Map<number, number>();
  for (;;) {
    const elapsed = Date.now() - killedAt;
    for (const info of started) if (!goneAfter.has(info.pid) && !alive(info.pid)) goneAfter.set(info.pid, elapsed);
    const pending = started.filter((info) => !goneAfter.has(info.pid));
    if (pending.length === 0 || elapsed > KILL_GRACE_MS) break;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const label = (info: ProcessInfo): string => `${info.cmdline.slice(0, 70)} (${info.pid})`;
  return {
    sawCli: started.some((info) => info.comm === "pulumi"),
    violations: started
      .filter((info) => !goneAfter.has(info.pid))
      .map((info) => `${label(info)} alive ${KILL_GRACE_MS} ms after the kill`),
    deaths: started.map((info) => `${label(info)} ${goneAfter.get(info.pid) ?? "alive"} ms`),
  };
}

/**
 * The offline environment with one Node (node-a1, its VM in us-central1-a) and a config file for
 * daemon processes: the e2e config with the environment's backend.
 */
export async function processCluster(
  opts: { backend?: E2eBackend } = {},
): Promise<{ env: TestEnv; core: k8s.CoreV1Api; daemons: DaemonProcesses }> {
  const env = await startTestEnv(opts);
  const core = env.kube.kubeConfig.makeApiClient(k8s.CoreV1Api);
  env.gce.putInstance("node-a1", { zone: "us-central1-a" });
  await createNode(core, "node-a1", "us-central1-a");
  const configPath = path.join(env.dir, "config.json");
  fs.writeFileSync(configPath, JSON.stringify({ ...E2E_CONFIG, backendUrl: env.backendUrl }));
  return { env, core, daemons: new DaemonProcesses(env, configPath) };
}
