/**
 * One `gcp` provider plugin per daemon instead of one per engine run (`--shared-provider`). Every
 * `pulumi up` otherwise starts the plugin, which costs about as much CPU as the CLI's own start
 * (docs/development/benchmarks.md). The engine attaches to a running provider named in
 * `PULUMI_DEBUG_PROVIDERS=gcp:<port>`: it dials the port, calls Attach and Configure, and on close
 * only drops its connection (it kills nothing it did not start). See
 * [the shared provider](../docs/explanation/architecture.md#the-shared-provider) for what that asks of the plugin.
 *
 * The engines dial a port of the daemon's own, which forwards each connection to the plugin of the
 * moment: a restarted plugin has a new port, whereas every workspace keeps the environment it was
 * created with. A plugin that exits takes its connections with it (the runs in flight fail, and the
 * queue retries them); it is started again after the runtime's backoff.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { backoffMs } from "../runtime/backoff";

export const PLUGIN_FILE = "pulumi-resource-gcp";
/** The engine's variable naming providers to attach to (pulumi sdk/go/common/resource/plugin/provider_plugin.go). */
export const ATTACH_VARIABLE = "PULUMI_DEBUG_PROVIDERS";
const STDERR_TAIL_CHARS = 2_000;

export type PortLine = { port: number } | { error: string } | undefined;

/**
 * Pure: the port a plugin announces on the first line of its stdout, as the engine reads it;
 * undefined until that line is complete.
 */
export function parseAnnouncedPort(stdout: string): PortLine {
  const end = stdout.indexOf("\n");
  if (end < 0) return undefined;
  const line = stdout.slice(0, end).trim();
  if (!/^[0-9]{1,5}$/.test(line) || Number(line) < 1 || Number(line) > 65_535) {
    return {
      error: `expected a port on the first line of the plugin's stdout, got ${JSON.stringify(line.slice(0, 80))}`,
    };
  }
  return { port: Number(line) };
}

export interface PluginLookup {
  /** The CLI's PATH. */
  pathEnv: string | undefined;
  /** PULUMI_HOME; `~/.pulumi` when absent. */
  pulumiHome: string | undefined;
  home: string;
  /** PULUMI_IGNORE_AMBIENT_PLUGINS: the engine then skips PATH. */
  ignoreAmbient: boolean;
  /** The plugin version the program asks for (@pulumi/gcp's). */
  version: string;
}

/**
 * Pure: where the engine looks for the `gcp` plugin, in its order (pulumi
 * sdk/go/common/workspace/plugins.go, getPluginInfoAndPath): on PATH, then the plugin cache.
 */
export function pluginCandidates(lookup: PluginLookup): string[] {
  const ambient = lookup.ignoreAmbient ? [] : (lookup.pathEnv ?? "").split(path.delimiter).filter((dir) => dir !== "");
  const pulumiHome = lookup.pulumiHome ?? path.join(lookup.home, ".pulumi");
  return [
    ...ambient.map((dir) => path.join(dir, PLUGIN_FILE)),
    path.join(pulumiHome, "plugins", `resource-gcp-v${lookup.version}`, PLUGIN_FILE),
  ];
}

export interface RestartPolicy {
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** A plugin that ran this long before it exited had worked: the failure count starts again. */
  healthyAfterMs: number;
}

/** Pure: after the plugin exited (having run `ranMs`), the failures in a row and the wait before the next start. */
export function restartPlan(
  failuresBefore: number,
  ranMs: number,
  policy: RestartPolicy,
): { failures: number; delayMs: number } {
  const failures = ranMs >= policy.healthyAfterMs ? 1 : failuresBefore + 1;
  return { failures, delayMs: backoffMs(failures, policy.backoffBaseMs, policy.backoffMaxMs) };
}

export interface SharedProviderOptions extends RestartPolicy {
  /** The plugin's environment: the CLI's (credentials, the reaper's marker, the emulator's URL). */
  env: Record<string, string>;
  /** The plugin; found as the engine finds it (pluginCandidates) when absent. */
  pluginPath?: string;
  onStart?: (pid: number, port: number) => void;
  /** The plugin exited or could not start; it is started again after `delayMs`. */
  onExit?: (reason: string, delayMs: number) => void;
}

/** The plugin the engine would run, from the CLI's environment. */
export function locatePlugin(env: Record<string, string>): string {
  const version = (
    JSON.parse(fs.readFileSync(require.resolve("@pulumi/gcp/package.json"), "utf8")) as { version: string }
  ).version;
  const ignore = env.PULUMI_IGNORE_AMBIENT_PLUGINS ?? process.env.PULUMI_IGNORE_AMBIENT_PLUGINS ?? "";
  const candidates = pluginCandidates({
    pathEnv: env.PATH ?? process.env.PATH,
    pulumiHome: env.PULUMI_HOME ?? process.env.PULUMI_HOME,
    home: os.homedir(),
    ignoreAmbient: ["1", "true"].includes(ignore.toLowerCase()),
    version,
  });
  const found = candidates.find((candidate) => {
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
  if (found === undefined) throw new Error(`no executable ${PLUGIN_FILE} found (looked at ${candidates.join(", ")})`);
  return found;
}

interface Running {
  child: ChildProcess;
  port: number;
  startedAt: number;
  sockets: Set<net.Socket>;
}

export class SharedProvider {
  private readonly server = net.createServer((socket) => this.forward(socket));
  private running: Running | undefined;
  /** Connections that arrived while no plugin was up; forwarded once one is. */
  private readonly waiting = new Set<net.Socket>();
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly pluginPath: string;

  constructor(private readonly options: SharedProviderOptions) {
    this.pluginPath = options.pluginPath ?? locatePlugin(options.env);
  }

  /** Starts listening and the first plugin; resolves with the environment that attaches an engine to it. */
  async start(): Promise<Record<string, string>> {
    await new Promise<void>((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(0, "127.0.0.1", () => resolve());
    });
    await this.launch();
    const address = this.server.address();
    if (address === null || typeof address === "string")
      throw new Error("the shared provider's listener has no TCP address");
    return { [ATTACH_VARIABLE]: `gcp:${address.port}` };
  }

  /** The plugin's process id (undefined while it is being started again). */
  get pid(): number | undefined {
    return this.running?.child.pid;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const socket of this.waiting) socket.destroy();
    const running = this.running;
    this.running = undefined;
    if (running !== undefined && running.child.exitCode === null && running.child.signalCode === null) {
      const exited = new Promise<void>((resolve) => running.child.once("exit", () => resolve()));
      running.child.kill("SIGTERM");
      await exited;
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** One plugin start; a failure schedules the next one. */
  private async launch(): Promise<void> {
    const startedAt = Date.now();
    try {
      const { child, port } = await this.spawnPlugin();
      if (this.stopped) {
        child.kill("SIGTERM");
        return;
      }
      const running: Running = { child, port, startedAt, sockets: new Set() };
      this.running = running;
      child.once("exit", (code, signal) =>
        this.exited(running, `exited (code ${String(code)}, signal ${String(signal)})`),
      );
      this.options.onStart?.(child.pid ?? 0, port);
      for (const socket of this.waiting) this.pipe(socket, running);
      this.waiting.clear();
    } catch (error) {
      this.scheduleRestart(Date.now() - startedAt, error instanceof Error ? error.message : String(error));
    }
  }

  private exited(running: Running, reason: string): void {
    if (this.running === running) this.running = undefined;
    // The kernel closes the plugin's end; closing ours at once fails the runs in flight now.
    for (const socket of running.sockets) socket.destroy();
    if (!this.stopped) this.scheduleRestart(Date.now() - running.startedAt, reason);
  }

  private scheduleRestart(ranMs: number, reason: string): void {
    if (this.stopped) return;
    const plan = restartPlan(this.failures, ranMs, this.options);
    this.failures = plan.failures;
    this.options.onExit?.(reason, plan.delayMs);
    this.timer = setTimeout(() => void this.launch(), plan.delayMs);
  }

  /** Runs the plugin with no engine address (the engine's attach mode) and reads its port. */
  private spawnPlugin(): Promise<{ child: ChildProcess; port: number }> {
    const child = spawn(this.pluginPath, [], {
      env: { ...process.env, ...this.options.env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => (stderr = (stderr + chunk.toString("utf8")).slice(-STDERR_TAIL_CHARS)));
    return new Promise((resolve, reject) => {
      const fail = (why: string): void => {
        child.kill("SIGKILL");
        reject(
          new Error(
            `${PLUGIN_FILE} (${this.pluginPath}) did not start: ${why}${stderr === "" ? "" : `; stderr: ${stderr.trim()}`}`,
          ),
        );
      };
      child.once("error", (error) => fail(error.message));
      child.once("exit", (code, signal) =>
        fail(`exited before announcing its port (code ${String(code)}, signal ${String(signal)})`),
      );
      child.stdout?.on("data", (chunk: Buffer) => {
        if (stdout.includes("\n")) return;
        stdout += chunk.toString("utf8");
        const line = parseAnnouncedPort(stdout);
        if (line === undefined) return;
        child.removeAllListeners("exit");
        if ("error" in line) fail(line.error);
        else resolve({ child, port: line.port });
      });
    });
  }

  private forward(socket: net.Socket): void {
    if (this.stopped) {
      socket.destroy();
      return;
    }
    if (this.running === undefined) {
      this.waiting.add(socket);
      socket.once("close", () => this.waiting.delete(socket));
      return;
    }
    this.pipe(socket, this.running);
  }

  /** Joins an engine's connection to the plugin's; either end closing closes the other. */
  private pipe(socket: net.Socket, running: Running): void {
    const upstream = net.connect(running.port, "127.0.0.1");
    running.sockets.add(socket);
    const close = (): void => {
      running.sockets.delete(socket);
      socket.destroy();
      upstream.destroy();
    };
    for (const end of [socket, upstream]) {
      end.setNoDelay(true);
      end.once("close", close);
      // An error listener for the socket's whole life: a second error without one would throw.
      end.on("error", close);
    }
    socket.pipe(upstream);
    upstream.pipe(socket);
  }
}
