// A throwaway Kubernetes control plane for end-to-end tests: etcd plus kube-apiserver from
// `.testenv/bin` (built by `bash scripts/testenv`), listening on 127.0.0.1 only, with
// client-certificate authentication and RBAC authorization.
//
//   const env = await startKube();          // in mocha `before`
//   const core = env.kubeConfig.makeApiClient(CoreV1Api);
//   await env.stop();                       // in mocha `after`
//
// Everything lives in a fresh temporary directory (certificates, etcd data, process logs), which
// stop() removes. Process output goes to log files there, never to the test output; when startup
// fails, the thrown Error carries the tail of the failing process's stderr.

import { type ChildProcess, execFile, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as https from "node:https";
import * as http from "node:http";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { promisify } from "node:util";

import { KubeConfig } from "@kubernetes/client-node";

import { requireTestenvBinary } from "../tooling/testenv-paths";

const execFileAsync = promisify(execFile);

export interface StartKubeOptions {
  /** Bound on the whole startup (etcd healthy + apiserver /readyz 200). Default 90 s. */
  readonly readyTimeoutMs?: number;
  /** Extra kube-apiserver flags, appended last (so they override the defaults). */
  readonly extraApiServerArgs?: readonly string[];
  /**
   * A second, IPv6 Service range (`fd00:10:96::/112`): the cluster becomes dual-stack, so the
   * apiserver accepts Services with `ipFamilyPolicy` PreferDualStack / RequireDualStack or an IPv6
   * family. Unset: IPv4 only, and such Services are refused (or, PreferDualStack, left IPv4).
   */
  readonly serviceIPv6Range?: string;
  /** Keep the temporary directory after stop() (for debugging a failing test). Default false. */
  readonly keepDataDir?: boolean;
}

export interface KubeEnv {
  /** Admin kubeconfig (client cert in group system:masters), self-contained (data embedded). */
  readonly kubeconfigPath: string;
  /** `https://127.0.0.1:<port>` */
  readonly server: string;
  /** A KubeConfig loaded from kubeconfigPath. */
  readonly kubeConfig: KubeConfig;
  /** The temporary directory holding pki/, etcd/, logs/ and the kubeconfig files. */
  readonly dataDir: string;
  /** PEM file of the CA that signed the serving and client certificates. */
  readonly caCertPath: string;
  /** SIGTERM both processes, wait for them (SIGKILL after a bound), remove dataDir. Idempotent. */
  stop(): Promise<void>;
}

export interface UserKubeconfig {
  readonly kubeconfigPath: string;
  readonly kubeConfig: KubeConfig;
}

const DEFAULT_READY_TIMEOUT_MS = 90_000;
const POLL_INTERVAL_MS = 100;
const PROBE_TIMEOUT_MS = 2_000;
const STOP_GRACE_MS = 10_000;
const STDERR_TAIL_LINES = 40;

/** Children still running, killed synchronously if the test process exits without stop(). */
const liveChildren = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) {
    return;
  }
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const child of liveChildren) {
      child.kill("SIGKILL");
    }
  });
}

/** Starts etcd and kube-apiserver on free 127.0.0.1 ports and waits until /readyz answers 200. */
export async function startKube(opts: StartKubeOptions = {}): Promise<KubeEnv> {
  const etcdBin = requireTestenvBinary("etcd");
  const apiserverBin = requireTestenvBinary("kube-apiserver");
  const deadline = Date.now() + (opts.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS);

  const dataDir = await fs.promises.mkdtemp(path.join(os.tmpdir(), "dccm-kube-"));
  const processes: ManagedProcess[] = [];
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) {
      return;
    }
    stopped = true;
    // apiserver first, so it does not spend its shutdown complaining about a missing etcd.
    for (const proc of [...processes].reverse()) {
      await proc.terminate(STOP_GRACE_MS);
    }
    if (opts.keepDataDir !== true) {
      await fs.promises.rm(dataDir, { recursive: true, force: true });
    }
  };

  try {
    const pki = await generatePki(dataDir);
    const logDir = path.join(dataDir, "logs");
    await fs.promises.mkdir(logDir);

    const [etcdClientPort, etcdPeerPort, apiserverPort] = await freePorts(3);
    const etcdUrl = `http://127.0.0.1:${etcdClientPort}`;
    const etcdPeerUrl = `http://127.0.0.1:${etcdPeerPort}`;

    const etcd = await ManagedProcess.start(
      "etcd",
      etcdBin,
      [
        "--name=dccm-test",
        `--data-dir=${path.join(dataDir, "etcd")}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${etcdPeerUrl}`,
        `--initial-advertise-peer-urls=${etcdPeerUrl}`,
        `--initial-cluster=dccm-test=${etcdPeerUrl}`,
        "--unsafe-no-fsync=true",
        "--log-level=warn",
      ],
      logDir,
    );
    processes.push(etcd);
    await waitUntil(etcd, deadline, "etcd /health", async () => {
      const res = await httpGet(`${etcdUrl}/health`, {});
      return res.status === 200 && res.body.includes('"health":"true"');
    });

    const server = `https://127.0.0.1:${apiserverPort}`;
    const apiserver = await ManagedProcess.start(
      "kube-apiserver",
      apiserverBin,
      [
        "--advertise-address=127.0.0.1",
        "--bind-address=127.0.0.1",
        `--secure-port=${apiserverPort}`,
        `--etcd-servers=${etcdUrl}`,
        `--tls-cert-file=${pki.servingCert}`,
        `--tls-private-key-file=${pki.servingKey}`,
        `--client-ca-file=${pki.caCert}`,
        "--anonymous-auth=false",
        "--authorization-mode=RBAC",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        `--service-account-key-file=${pki.saPublicKey}`,
        `--service-account-signing-key-file=${pki.saPrivateKey}`,
        // Dual-stack needs nothing more of the apiserver than a range per family (IPv4 first, so
        // IPv4 stays the primary family and single-stack Services are what they were).
        `--service-cluster-ip-range=10.96.0.0/16${opts.serviceIPv6Range !== undefined ? `,${opts.serviceIPv6Range}` : ""}`,
        // ServiceAccount admission only matters for Pods and wants the token controller we do
        // not run; these tests create Services, Nodes, Events, Leases and ConfigMaps.
        "--disable-admission-plugins=ServiceAccount",
        "--enable-priority-and-fairness=false",
        "--profiling=false",
        "--v=1",
        ...(opts.extraApiServerArgs ?? []),
      ],
      logDir,
    );
    processes.push(apiserver);

    const tls = {
      ca: await fs.promises.readFile(pki.caCert),
      cert: await fs.promises.readFile(pki.adminCert),
      key: await fs.promises.readFile(pki.adminKey),
    };
    await waitUntil(apiserver, deadline, "kube-apiserver /readyz", async () => {
      const res = await httpGet(`${server}/readyz`, tls);
      return res.status === 200;
    });

    const kubeconfigPath = path.join(dataDir, "admin.kubeconfig");
    await writeKubeconfig(kubeconfigPath, server, "admin", pki.caCert, pki.adminCert, pki.adminKey);
    const kubeConfig = loadKubeConfig(kubeconfigPath);

    return { kubeconfigPath, server, kubeConfig, dataDir, caCertPath: pki.caCert, stop };
  } catch (cause) {
    // The error already carries the tail of the failing process's stderr; the directory goes
    // unless the caller asked to keep it.
    try {
      await stop();
    } catch (cleanupError) {
      throw new AggregateError([cause, cleanupError], `startKube failed and so did its cleanup`, { cause });
    }
    if (cause instanceof StartupError) {
      throw cause;
    }
    throw new Error(`startKube failed: ${errorMessage(cause)}`, { cause });
  }
}

/**
 * Issues a client certificate for `user` in `groups` (signed by the environment's CA) and writes a
 * kubeconfig for it: a restricted identity for RBAC tests. No RBAC bindings are created.
 */
export async function makeUserKubeconfig(
  env: KubeEnv,
  user: string,
  groups: readonly string[] = [],
): Promise<UserKubeconfig> {
  for (const name of [user, ...groups]) {
    if (!/^[A-Za-z0-9][A-Za-z0-9:._@-]*$/.test(name)) {
      throw new Error(`makeUserKubeconfig: unsupported user or group name ${JSON.stringify(name)}`);
    }
  }
  const pkiDir = path.join(env.dataDir, "pki");
  const fileBase = `user-${user.replace(/[^A-Za-z0-9._-]/g, "_")}`;
  const subject = `/CN=${user}${groups.map((g) => `/O=${g}`).join("")}`;
  const { cert, key } = await issueCert(pkiDir, fileBase, subject, "extendedKeyUsage=clientAuth");
  const kubeconfigPath = path.join(env.dataDir, `${fileBase}.kubeconfig`);
  await writeKubeconfig(kubeconfigPath, env.server, user, env.caCertPath, cert, key);
  return { kubeconfigPath, kubeConfig: loadKubeConfig(kubeconfigPath) };
}

/**
 * A kubeconfig authenticating with a bearer token (a ServiceAccount's, from a TokenRequest), as an
 * in-cluster pod would: `name` names its user and its file in the environment's directory.
 */
export async function makeTokenKubeconfig(env: KubeEnv, name: string, token: string): Promise<UserKubeconfig> {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) {
    throw new Error(`makeTokenKubeconfig: unsupported name ${JSON.stringify(name)}`);
  }
  const kubeconfigPath = path.join(env.dataDir, `token-${name}.kubeconfig`);
  await writeKubeconfigFile(kubeconfigPath, env.server, name, env.caCertPath, { token });
  return { kubeconfigPath, kubeConfig: loadKubeConfig(kubeconfigPath) };
}

// ---------------------------------------------------------------------------------------------
// Certificates (openssl CLI)

interface Pki {
  readonly caCert: string;
  readonly servingCert: string;
  readonly servingKey: string;
  readonly adminCert: string;
  readonly adminKey: string;
  readonly saPrivateKey: string;
  readonly saPublicKey: string;
}

async function openssl(args: readonly string[], cwd: string): Promise<void> {
  try {
    await execFileAsync("openssl", args, { cwd });
  } catch (cause) {
    const stderr = isRecord(cause) && typeof cause["stderr"] === "string" ? cause["stderr"].trim() : "";
    throw new Error(`openssl ${args[0] ?? ""} failed${stderr === "" ? "" : `: ${stderr}`}`, { cause });
  }
}

const EC_KEY = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"] as const;

async function generatePki(dataDir: string): Promise<Pki> {
  const dir = path.join(dataDir, "pki");
  await fs.promises.mkdir(dir, { mode: 0o700 });
  await openssl(
    [
      "req",
      "-x509",
      ...EC_KEY,
      "-keyout",
      "ca.key",
      "-out",
      "ca.crt",
      "-days",
      "2",
      "-subj",
      "/CN=dccm-test-ca",
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign",
    ],
    dir,
  );
  const serving = await issueCert(
    dir,
    "apiserver",
    "/CN=kube-apiserver",
    "extendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost",
  );
  const admin = await issueCert(dir, "admin", "/CN=admin/O=system:masters", "extendedKeyUsage=clientAuth");
  await openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "sa.key"], dir);
  await openssl(["pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub"], dir);
  return {
    caCert: path.join(dir, "ca.crt"),
    servingCert: serving.cert,
    servingKey: serving.key,
    adminCert: admin.cert,
    adminKey: admin.key,
    saPrivateKey: path.join(dir, "sa.key"),
    saPublicKey: path.join(dir, "sa.pub"),
  };
}

/** Key + certificate signed by `<dir>/ca.{crt,key}`, with the given subject and v3 extensions. */
async function issueCert(
  dir: string,
  base: string,
  subject: string,
  extensions: string,
): Promise<{ cert: string; key: string }> {
  const extFile = `${base}.ext`;
  await fs.promises.writeFile(
    path.join(dir, extFile),
    `basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n${extensions}\n`,
  );
  await openssl(["req", "-new", ...EC_KEY, "-keyout", `${base}.key`, "-out", `${base}.csr`, "-subj", subject], dir);
  await openssl(
    [
      "x509",
      "-req",
      "-in",
      `${base}.csr`,
      "-CA",
      "ca.crt",
      "-CAkey",
      "ca.key",
      "-CAcreateserial",
      "-days",
      "2",
      "-extfile",
      extFile,
      "-out",
      `${base}.crt`,
    ],
    dir,
  );
  return { cert: path.join(dir, `${base}.crt`), key: path.join(dir, `${base}.key`) };
}

// ---------------------------------------------------------------------------------------------
// kubeconfig

async function writeKubeconfig(
  file: string,
  server: string,
  user: string,
  caFile: string,
  certFile: string,
  keyFile: string,
): Promise<void> {
  const b64 = async (f: string): Promise<string> => (await fs.promises.readFile(f)).toString("base64");
  await writeKubeconfigFile(file, server, user, caFile, {
    "client-certificate-data": await b64(certFile),
    "client-key-data": await b64(keyFile),
  });
}

async function writeKubeconfigFile(
  file: string,
  server: string,
  user: string,
  caFile: string,
  credentials: Record<string, string>,
): Promise<void> {
  // JSON is valid YAML, and every kubeconfig reader accepts it.
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: "dccm-test",
        cluster: { server, "certificate-authority-data": (await fs.promises.readFile(caFile)).toString("base64") },
      },
    ],
    users: [{ name: user, user: credentials }],
    contexts: [{ name: `${user}@dccm-test`, context: { cluster: "dccm-test", user } }],
    "current-context": `${user}@dccm-test`,
  };
  await fs.promises.writeFile(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
}

function loadKubeConfig(file: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(file);
  return kc;
}

// ---------------------------------------------------------------------------------------------
// Processes

class StartupError extends Error {
  override readonly name = "StartupError";
}

export class ManagedProcess {
  private readonly exited: Promise<void>;
  private exitInfo: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** Spawn failure (ENOENT, EACCES) or a failed kill(), as reported by the 'error' event. */
  private lastError: Error | undefined;

  private constructor(
    readonly name: string,
    private readonly child: ChildProcess,
    readonly stderrPath: string,
  ) {
    this.exited = new Promise((resolve) => {
      child.once("exit", (code, signal) => {
        this.exitInfo = { code, signal };
        liveChildren.delete(child);
        resolve();
      });
    });
    child.on("error", (err) => {
      this.lastError = err;
    });
  }

  /** Spawns `bin args`, stdout/stderr to `<logDir>/<name>.{stdout,stderr}.log`. */
  static async start(name: string, bin: string, args: readonly string[], logDir: string): Promise<ManagedProcess> {
    const stdoutPath = path.join(logDir, `${name}.stdout.log`);
    const stderrPath = path.join(logDir, `${name}.stderr.log`);
    const out = await fs.promises.open(stdoutPath, "a");
    const err = await fs.promises.open(stderrPath, "a");
    try {
      const child = spawn(bin, args, { stdio: ["ignore", out.fd, err.fd], cwd: logDir });
      const proc = new ManagedProcess(name, child, stderrPath);
      // Spawn failures arrive as an 'error' event instead of 'spawn'.
      await new Promise<void>((resolve, reject) => {
        child.once("spawn", () => resolve());
        child.once("error", (cause) => reject(new Error(`could not start ${name} (${bin})`, { cause })));
      });
      installExitHook();
      liveChildren.add(child);
      return proc;
    } finally {
      await out.close();
      await err.close();
    }
  }

  get hasExited(): boolean {
    return this.exitInfo !== undefined;
  }

  async startupError(reason: string): Promise<StartupError> {
    const tail = await tailOfFile(this.stderrPath, STDERR_TAIL_LINES);
    const exit =
      this.exitInfo === undefined
        ? "still running"
        : `exited with ${this.exitInfo.signal ?? `code ${String(this.exitInfo.code)}`}`;
    const spawnError = this.lastError === undefined ? "" : `; process error: ${this.lastError.message}`;
    return new StartupError(
      `${this.name} ${reason} (${exit}${spawnError}); last lines of its stderr ` +
        `(startKube({ keepDataDir: true }) keeps ${this.stderrPath}):\n${tail === "" ? "(empty)" : tail}`,
    );
  }

  /** SIGTERM, wait up to graceMs, then SIGKILL and wait. */
  async terminate(graceMs: number): Promise<void> {
    if (this.hasExited) {
      return;
    }
    this.child.kill("SIGTERM");
    const timer = delay(graceMs, "timeout" as const, { ref: false });
    const first = await Promise.race([this.exited.then(() => "exited" as const), timer]);
    if (first === "timeout") {
      this.child.kill("SIGKILL");
      await this.exited;
    }
  }

  /** Resolves when the process exits (never rejects). */
  waitExit(): Promise<void> {
    return this.exited;
  }
}

/**
 * Polls `probe` every POLL_INTERVAL_MS until it returns true. Fails (with the tail of the
 * process's stderr) when the process exits first or the deadline passes. Probe errors
 * (connection refused while the server starts) count as "not yet".
 */
export async function waitUntil(
  proc: ManagedProcess,
  deadline: number,
  what: string,
  probe: () => Promise<boolean>,
): Promise<void> {
  let lastProbeError: unknown;
  for (;;) {
    if (proc.hasExited) {
      throw await proc.startupError(`exited before ${what} succeeded`);
    }
    try {
      if (await probe()) {
        return;
      }
      lastProbeError = undefined;
    } catch (err) {
      lastProbeError = err;
    }
    if (Date.now() >= deadline) {
      const detail = lastProbeError === undefined ? "" : `, last probe error: ${errorMessage(lastProbeError)}`;
      throw await proc.startupError(`not ready: ${what} timed out${detail}`);
    }
    // Wake early if the process dies during the interval.
    await Promise.race([delay(POLL_INTERVAL_MS), proc.waitExit()]);
  }
}

interface TlsOptions {
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
}

function httpGet(url: string, tls: TlsOptions): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const onResponse = (res: http.IncomingMessage): void => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    };
    const req =
      u.protocol === "https:"
        ? https.get(u, { ...tls, timeout: PROBE_TIMEOUT_MS, agent: false }, onResponse)
        : http.get(u, { timeout: PROBE_TIMEOUT_MS, agent: false }, onResponse);
    req.on("timeout", () => req.destroy(new Error(`GET ${url} timed out after ${PROBE_TIMEOUT_MS} ms`)));
    req.on("error", reject);
  });
}

/** Distinct free TCP ports on 127.0.0.1 (bound to port 0, then released). */
export async function freePorts(count: number): Promise<number[]> {
  const servers: net.Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const srv = net.createServer();
      servers.push(srv);
      ports.push(
        await new Promise<number>((resolve, reject) => {
          srv.once("error", reject);
          srv.listen(0, "127.0.0.1", () => {
            const addr = srv.address();
            if (addr === null || typeof addr === "string") {
              reject(new Error(`unexpected server address ${String(addr)}`));
            } else {
              resolve(addr.port);
            }
          });
        }),
      );
    }
    return ports;
  } finally {
    await Promise.all(servers.map((srv) => new Promise<void>((resolve) => srv.close(() => resolve()))));
  }
}

async function tailOfFile(file: string, lines: number): Promise<string> {
  try {
    const text = await fs.promises.readFile(file, "utf8");
    return text.trimEnd().split("\n").slice(-lines).join("\n");
  } catch (err) {
    return `(could not read ${file}: ${errorMessage(err)})`;
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null;
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
