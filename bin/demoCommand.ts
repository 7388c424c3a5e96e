/**
 * `dccm demo`: the main job with no cluster and no GCP account. Builds the binaries it starts
 * (`bash scripts/testenv NAME ...`), starts the offline environment's launcher (kube-apiserver,
 * etcd, the GCE emulator and fake-gcs-server: `dist/test/support/tooling/testenv-cli.js up`) as a
 * child process, puts a cluster into it (bin/demoSetup.ts: VMs and Nodes in two zones, the config
 * file), runs the daemon in this process against it with a throwaway passphrase, the stacks in the
 * gs:// bucket, prints what to try, and on
 * Ctrl-C, SIGTERM, SIGHUP or the death of its own parent stops the daemon, then the launcher, and
 * waits for both. The launcher and the emulator are test code, which production never imports
 * (docs/explanation/architecture.md): they are started as programs, from the checkout this dccm runs in.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as readline from "node:readline";
import { parseDuration } from "../runtime/durations";
import { watchAncestors } from "../runtime/parentDeath";
import type { Daemon } from "../daemon/daemon";
import { runDaemon } from "./daemonCommand";
import {
  demoConfig,
  demoConfigText,
  demoFiles,
  demoInstructions,
  demoShellEnv,
  DEMO_NODES,
  registerDemoNodes,
  writeDemoFiles,
  type DemoFiles,
  type LaunchedEnvironment,
} from "./demoSetup";
import { commandHelp, parseCommand, stringFlag, UsageError, type Flag } from "./options";

const DEMO_DEFAULTS = { listen: "127.0.0.1:10258", driftInterval: "30s" } as const;

/** What the demo starts (the launcher needs each; scripts/testenv builds only these). */
export const DEMO_BINARIES = ["kube-apiserver", "etcd", "pulumi", "pulumi-language-nodejs", "fake-gcs-server"] as const;

const DEMO_FLAGS: readonly Flag[] = [
  {
    name: "listen",
    value: "HOST:PORT",
    help: `the daemon's /healthz, /readyz, /metrics and /status (default ${DEMO_DEFAULTS.listen}; :0 for any free port)`,
  },
  {
    name: "drift-interval",
    value: "DURATION",
    help: `how soon a resource deleted behind dccm's back comes back (default ${DEMO_DEFAULTS.driftInterval})`,
  },
];

export const DEMO_HELP = commandHelp(
  [
    "usage: dccm demo [--listen HOST:PORT] [--drift-interval DURATION]",
    "runs the main job with no cluster and no GCP account: a kube-apiserver and etcd, the GCE emulator with three VMs in two",
    "zones, a gs:// bucket (fake-gcs-server), and dccm daemon against them with a throwaway passphrase; writes the config",
    "file the other dccm commands read. Ctrl-C (or SIGTERM) stops everything it started. Runs in a clone of dccm after npm ci.",
  ],
  DEMO_FLAGS,
);

/** The launcher's line, checked: a launcher of another version fails here, not later. */
export function parseLaunchedEnvironment(line: string): LaunchedEnvironment {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch (error) {
    throw new Error(`the offline environment's launcher printed ${JSON.stringify(line)}, not its JSON line`, {
      cause: error,
    });
  }
  const value = parsed as Partial<Record<keyof LaunchedEnvironment, unknown>>;
  const env = value.env;
  const envOk =
    typeof env === "object" && env !== null && Object.values(env).every((entry) => typeof entry === "string");
  if (
    typeof value.kubeconfig !== "string" ||
    typeof value.computeEndpoint !== "string" ||
    typeof value.backendUrl !== "string" ||
    typeof value.dir !== "string" ||
    !envOk
  ) {
    throw new Error(
      `the offline environment's launcher printed ${JSON.stringify(line)}: expected kubeconfig, computeEndpoint, backendUrl, dir and env`,
    );
  }
  return {
    kubeconfig: value.kubeconfig,
    computeEndpoint: value.computeEndpoint,
    backendUrl: value.backendUrl,
    dir: value.dir,
    env: env as Record<string, string>,
  };
}

/** The daemon's command line: the demo's config file, and what only a flag says. */
export function demoDaemonArgs(launched: LaunchedEnvironment, files: DemoFiles, listen: string): string[] {
  return [
    ...["--kubeconfig", launched.kubeconfig, "--config", files.config, "--listen", listen],
    ...["--identity", "dccm-demo", "--log-level", "info"],
  ];
}

/** The repository this dccm runs from: dist/bin/demoCommand.js is two levels below it. */
function checkoutRoot(): string {
  return path.resolve(__dirname, "..", "..");
}

interface DemoRun {
  readonly root: string;
  readonly listen: string;
  readonly driftInterval: string;
  readonly driftMs: number;
  readonly stopAsked: Promise<string>;
  readonly say: (line: string) => void;
}

export async function runDemo(argv: string[]): Promise<number> {
  const { values } = parseCommand(argv, DEMO_FLAGS);
  if (values.help === true) {
    process.stdout.write(`${DEMO_HELP}\n`);
    return 0;
  }
  const listen = stringFlag(values, "listen") ?? DEMO_DEFAULTS.listen;
  const driftInterval = stringFlag(values, "drift-interval") ?? DEMO_DEFAULTS.driftInterval;
  const driftMs = parseDuration(driftInterval);
  if (driftMs === undefined)
    throw new UsageError(`--drift-interval ${driftInterval}: expected a duration such as 30s or 5m`);
  const root = checkoutRoot();
  const launcher = path.join(root, "dist", "test", "support", "tooling", "testenv-cli.js");
  const provisioner = path.join(root, "scripts", "testenv");
  for (const file of [launcher, provisioner]) {
    if (!fs.existsSync(file))
      throw new UsageError(`${file} is missing: dccm demo runs in a clone of dccm, after npm ci (which builds dist/)`);
  }

  // Listening before anything starts: a stop asked for at any point stops what has started so far.
  const stopAsked = new Promise<string>((resolve) => {
    for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(signal, () => resolve(signal));
    watchAncestors((gone) => resolve(`process ${gone.pid}, which started this one, is gone`));
  });
  const say = (line: string): void => void process.stderr.write(`dccm demo: ${line}\n`);

  say(
    `building the binaries it starts (bash scripts/testenv ${DEMO_BINARIES.join(" ")}: warm, seconds; cold, ~11 min of Go builds on 2 cores)`,
  );
  const built = await untilStopped(
    spawnGroup("bash", [provisioner, ...DEMO_BINARIES], root, ["ignore", "ignore", "inherit"]),
    stopAsked,
  );
  if (built === "stopped") return 0;
  if (built !== 0) throw new Error(`bash scripts/testenv failed (exit ${String(built)}); its log is above`);
  return withEnvironment(launcher, { root, listen, driftInterval, driftMs, stopAsked, say });
}

/** Starts the launcher, runs the demo's cluster and daemon against it, and stops the launcher whatever happens. */
async function withEnvironment(launcher: string, run: DemoRun): Promise<number> {
  run.say("starting kube-apiserver, etcd, the GCE emulator and fake-gcs-server");
  const environment = spawnGroup(process.execPath, [launcher, "up", "--backend", "gs"], run.root, [
    "ignore",
    "pipe",
    "inherit",
  ]);
  const environmentExited = exitOf(environment);
  try {
    const launched = await Promise.race([
      firstLine(environment).then(parseLaunchedEnvironment),
      environmentExited.then((code) =>
        Promise.reject(
          new Error(
            `the offline environment's launcher exited (${String(code)}) before it was ready; its log is above`,
          ),
        ),
      ),
      run.stopAsked.then(() => undefined),
    ]);
    if (launched === undefined) return 0;
    const stopWhen = Promise.race([
      run.stopAsked,
      environmentExited.then((code) => `the offline environment stopped (${String(code)})`),
    ]);
    return await demoDaemon(launched, run, stopWhen);
  } finally {
    run.say("stopping kube-apiserver, etcd, the GCE emulator and fake-gcs-server");
    if (environment.exitCode === null && environment.signalCode === null) environment.kill("SIGTERM");
    await environmentExited;
    run.say("stopped; nothing it started is left running");
  }
}

/** Writes the config and the shell file, registers the Nodes, and runs the daemon until `stopWhen`. */
async function demoDaemon(launched: LaunchedEnvironment, run: DemoRun, stopWhen: Promise<string>): Promise<number> {
  const files = demoFiles(path.join(launched.dir, "demo"));
  const passphrase = randomBytes(24).toString("hex");
  const configText = demoConfigText(demoConfig(launched, files.stateDir, run.driftInterval));
  writeDemoFiles(files, configText, demoShellEnv(launched, passphrase, process.env.PATH ?? ""));
  run.say(`registering ${DEMO_NODES.map((node) => `${node.zone}/${node.name}`).join(", ")} (VM and tainted Node)`);
  await registerDemoNodes(launched);
  // The pulumi CLI the daemon runs inherits this: .testenv/bin and the emulator's plugin on PATH, the bucket, PULUMI_HOME.
  Object.assign(process.env, launched.env, { PULUMI_CONFIG_PASSPHRASE: passphrase });
  run.say(`starting dccm daemon (its log: ${files.log})`);
  return runDaemon(demoDaemonArgs(launched, files, run.listen), {
    logFile: files.log,
    stopWhen,
    onStarted: (daemon: Daemon) => {
      const address = daemon.address;
      const statusUrl = address === undefined ? `http://${run.listen}` : `http://${address.address}:${address.port}`;
      const shown = { ...launched, files, configText, statusUrl };
      process.stdout.write(demoInstructions(shown, run.driftMs));
    },
  });
}

/**
 * A child in a process group of its own: a terminal's Ctrl-C reaches only this process, which
 * stops the daemon before the environment it talks to.
 */
function spawnGroup(
  command: string,
  args: string[],
  cwd: string,
  stdio: ["ignore", "ignore" | "pipe", "inherit"],
): ChildProcess {
  return spawn(command, args, { cwd, detached: true, stdio });
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    child.once("exit", (code) => resolve(code));
    child.once("error", () => resolve(null));
  });
}

/** The child's exit code, or "stopped" (the whole group killed) when a stop is asked for first. */
async function untilStopped(child: ChildProcess, stopAsked: Promise<string>): Promise<number | null | "stopped"> {
  const exited = exitOf(child);
  const first = await Promise.race([exited, stopAsked.then(() => "stopped" as const)]);
  if (first !== "stopped") return first;
  if (child.pid !== undefined && child.exitCode === null) {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // Gone already.
    }
  }
  await exited;
  return "stopped";
}

function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    if (child.stdout === null) {
      reject(new Error("no stdout"));
      return;
    }
    const lines = readline.createInterface({ input: child.stdout });
    lines.once("line", (line) => {
      lines.close();
      resolve(line);
    });
  });
}
