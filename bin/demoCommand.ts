/**
 * `dccm demo`: the main job with no cluster and no GCP account. Builds the offline environment's
 * binaries (`bash scripts/testenv`), starts its launcher (kube-apiserver, etcd and the GCE
 * emulator: `dist/test/support/tooling/testenv-cli.js up`) as a child process, runs the daemon in
 * this process against it with a throwaway passphrase and state, prints what to try, and on
 * Ctrl-C, SIGTERM, SIGHUP or the death of its own parent stops the daemon, then the launcher, and
 * waits for both. The launcher and the emulator are test code, which production never imports
 * (docs/explanation/architecture.md): they are started as programs, from the checkout this dccm runs in.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as readline from "node:readline";
import { formatDuration, parseDuration } from "../runtime/durations";
import { watchAncestors } from "../runtime/parentDeath";
import type { Daemon } from "../daemon/daemon";
import { runDaemon } from "./daemonCommand";
import { commandHelp, parseCommand, stringFlag, UsageError, type Flag } from "./options";

/** The emulator's project (emulator/gce: its default) and the example config's network, subnetwork and region. */
export const DEMO_PROJECT = "dccm-test";
const DEMO_DEFAULTS = { listen: "127.0.0.1:10258", driftInterval: "30s" } as const;

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
    "runs the main job with no cluster and no GCP account: a kube-apiserver and etcd, the GCE emulator, and dccm daemon against them,",
    "with a throwaway passphrase and state. Ctrl-C (or SIGTERM) stops everything it started. Runs in a clone of dccm after npm ci.",
  ],
  DEMO_FLAGS,
);

/** What the launcher prints once its environment answers (test/support/tooling/testenv-cli.ts). */
export interface LaunchedEnvironment {
  readonly kubeconfig: string;
  readonly computeEndpoint: string;
  readonly dir: string;
  readonly env: Readonly<Record<string, string>>;
}

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
    typeof value.dir !== "string" ||
    !envOk
  ) {
    throw new Error(
      `the offline environment's launcher printed ${JSON.stringify(line)}: expected kubeconfig, computeEndpoint, dir and env`,
    );
  }
  return {
    kubeconfig: value.kubeconfig,
    computeEndpoint: value.computeEndpoint,
    dir: value.dir,
    env: env as Record<string, string>,
  };
}

/** The daemon's command line against the environment: the example config with the emulator's project. */
export function demoDaemonArgs(
  root: string,
  launched: LaunchedEnvironment,
  stateDir: string,
  flags: { listen: string; driftInterval: string },
): string[] {
  return [
    ...[
      "--kubeconfig",
      launched.kubeconfig,
      "--config",
      path.join(root, "examples", "dccm.yaml"),
      "--project",
      DEMO_PROJECT,
    ],
    ...["--state-dir", stateDir, "--backend-url", `file://${path.join(stateDir, "backend")}`],
    ...[
      "--listen",
      flags.listen,
      "--drift-interval",
      flags.driftInterval,
      "--compute-endpoint",
      launched.computeEndpoint,
    ],
    ...["--identity", "dccm-demo", "--log-level", "info"],
  ];
}

/** What to try, printed once the daemon runs. */
export function demoInstructions(
  launched: LaunchedEnvironment,
  logFile: string,
  statusUrl: string,
  driftMs: number,
): string {
  const firewalls = `${launched.computeEndpoint}projects/${DEMO_PROJECT}/global/firewalls`;
  const firewall = `${firewalls}/k8s-fw-a$(kubectl get service hello -o jsonpath='{.metadata.uid}' | tr -d - | cut -c1-31)`;
  return [
    "dccm demo: dccm daemon runs against a kube-apiserver and the GCE emulator (project dccm-test); Ctrl-C stops everything.",
    `  kubeconfig   ${launched.kubeconfig}`,
    `  Compute API  ${launched.computeEndpoint} (the GCE emulator: emulator/gce/README.md)`,
    `  daemon log   ${logFile}`,
    `  status       npx dccm status --url ${statusUrl}`,
    "In another shell:",
    `  export KUBECONFIG=${launched.kubeconfig}`,
    "  kubectl create service loadbalancer hello --tcp=80:8080",
    "  kubectl get service hello --watch                 # EXTERNAL-IP: the emulator's address, in seconds",
    `  curl -s -X DELETE ${firewall}`,
    `  curl -s ${firewall}   # 404 now; back within ${formatDuration(Math.round(driftMs * 1.1))} (the next drift pass)`,
    "",
  ].join("\n");
}

/** The repository this dccm runs from: dist/bin/demoCommand.js is two levels below it. */
function checkoutRoot(): string {
  return path.resolve(__dirname, "..", "..");
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
    "building the offline environment's binaries (bash scripts/testenv: warm, seconds; cold, ~20 min of Go builds on 2 cores)",
  );
  const built = await untilStopped(spawnGroup("bash", [provisioner], root, ["ignore", "ignore", "inherit"]), stopAsked);
  if (built === "stopped") return 0;
  if (built !== 0) throw new Error(`bash scripts/testenv failed (exit ${String(built)}); its log is above`);

  say("starting kube-apiserver, etcd and the GCE emulator");
  const environment = spawnGroup(process.execPath, [launcher, "up", "--backend", "file"], root, [
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
      stopAsked.then(() => undefined),
    ]);
    if (launched === undefined) return 0;
    const stateDir = path.join(launched.dir, "demo");
    fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    const logFile = path.join(stateDir, "daemon.log");
    // The pulumi CLI the daemon runs inherits this: .testenv/bin and the emulator's plugin on PATH, PULUMI_HOME.
    Object.assign(process.env, launched.env, { PULUMI_CONFIG_PASSPHRASE: randomBytes(24).toString("hex") });
    say(`starting dccm daemon (its log: ${logFile})`);
    const stopWhen = Promise.race([
      stopAsked,
      environmentExited.then((code) => `the offline environment stopped (${String(code)})`),
    ]);
    const code = await runDaemon(demoDaemonArgs(root, launched, stateDir, { listen, driftInterval }), {
      logFile,
      stopWhen,
      onStarted: (daemon: Daemon) => {
        const address = daemon.address;
        const statusUrl = address === undefined ? `http://${listen}` : `http://${address.address}:${address.port}`;
        process.stdout.write(demoInstructions(launched, logFile, statusUrl, driftMs));
      },
    });
    return code;
  } finally {
    say("stopping kube-apiserver, etcd and the GCE emulator");
    if (environment.exitCode === null && environment.signalCode === null) environment.kill("SIGTERM");
    await environmentExited;
    say("stopped; nothing it started is left running");
  }
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
