/**
 * `npx dccm demo`, the README's first command, run as a user runs it: in a plain non-interactive
 * shell (no job control, no terminal), from the checkout. It prints what to try; its three Nodes
 * are initialized, each gets its route and each zone its instance group; a Service created through
 * the printed kubeconfig gets the emulator's address; the dccm commands it prints (status, preview,
 * drift) run as printed, in a fresh shell; then it is stopped three ways (SIGTERM to the shell's
 * command, the death of its parent, its own SIGKILL) and no process it started is left: every
 * process carries a marker in its environment, and /proc is searched for it.
 */
import * as assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as readline from "node:readline";
import * as k8s from "@kubernetes/client-node";
import {
  demoConfig,
  demoConfigText,
  demoFiles,
  demoInstructions,
  DEMO_CLUSTER_ID,
  DEMO_PROJECT,
  UNINITIALIZED_TAINT,
} from "../../bin/demoSetup";
import { loadBalancerName } from "../../model";
import { PROCESS_OWNER_VARIABLE } from "../../stacks/reaper";
import { repoRoot } from "../support/tooling/testenv-paths";
import { eventually } from "../support/wait";

/** The marker every process of one demo inherits (the daemon marks its pulumi runs with its own marker, under the same variable). */
const MARKER_VARIABLE = "DCCM_DEMO_E2E_MARKER";

interface Demo {
  readonly shell: ChildProcess;
  readonly marker: string;
  /** The shell's command's exit: its code, or the signal that ended it. */
  readonly exited: Promise<number | NodeJS.Signals | null>;
  readonly stdout: string[];
  readonly stderr: string[];
}

function startDemo(): Demo {
  const marker = randomUUID();
  const env: NodeJS.ProcessEnv = { ...process.env, [MARKER_VARIABLE]: marker };
  // What the demo must make up itself: no passphrase, no backend, no Pulumi home of the caller's.
  for (const name of [
    "PULUMI_CONFIG_PASSPHRASE",
    "PULUMI_CONFIG_PASSPHRASE_FILE",
    "PULUMI_BACKEND_URL",
    "PULUMI_HOME",
    PROCESS_OWNER_VARIABLE,
  ])
    delete env[name];
  const shell = spawn("bash", ["-c", "npx dccm demo --listen 127.0.0.1:0"], {
    cwd: repoRoot(),
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  readline.createInterface({ input: shell.stdout as NodeJS.ReadableStream }).on("line", (line) => stdout.push(line));
  readline.createInterface({ input: shell.stderr as NodeJS.ReadableStream }).on("line", (line) => stderr.push(line));
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) =>
    shell.once("exit", (code, signal) => resolve(code ?? signal)),
  );
  return { shell, marker, exited, stdout, stderr };
}

/** The processes carrying the demo's marker, by pid, with their command names. */
function demoProcesses(marker: string): Map<number, string> {
  const carriers = new Map<number, string>();
  for (const pid of markedProcessesOf(marker)) {
    try {
      carriers.set(pid, fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim());
    } catch {
      // Gone between the two reads.
    }
  }
  return carriers;
}

/** Processes (other than this one) whose initial environment holds `DCCM_DEMO_E2E_MARKER=<marker>`. */
function markedProcessesOf(marker: string): number[] {
  const wanted = `${MARKER_VARIABLE}=${marker}`;
  const found: number[] = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${entry}/environ`, "utf8").split("\0").includes(wanted)) found.push(Number(entry));
    } catch {
      // Not ours, or gone.
    }
  }
  return found;
}

interface Printed {
  readonly text: string;
  readonly kubeconfig: string;
  readonly computeEndpoint: string;
  readonly config: string;
  readonly statusUrl: string;
}

async function printed(demo: Demo): Promise<Printed> {
  let end: number | NodeJS.Signals | null | undefined;
  demo.exited.then(
    (value) => (end = value),
    () => undefined,
  );
  // A demo that ended before printing (e.g. `sh: 1: dccm: Permission denied`) fails the case at once, not after the bound.
  const shown = await eventually(
    () => `the demo's instructions (stdout: ${demo.stdout.join("\n")}; stderr: ${demo.stderr.join("\n")})`,
    () =>
      demo.stdout.some((line) => line.includes("--dry-run   # "))
        ? { text: `${demo.stdout.join("\n")}\n` }
        : end !== undefined
          ? { ended: end }
          : undefined,
    600_000,
  );
  const text = shown.text;
  if (text === undefined)
    assert.fail(
      `the demo ended (${String(shown.ended)}) before it printed its instructions; stderr: ${demo.stderr.join("\n")}`,
    );
  const field = (name: string): string => {
    const match = new RegExp(`^  ${name} +(\\S+)`, "m").exec(text);
    assert.ok(match?.[1] !== undefined, `${name} in:\n${text}`);
    return match[1];
  };
  const status = /^ {2}npx dccm status --url (\S+)$/m.exec(text)?.[1];
  assert.ok(status !== undefined, text);
  const result = {
    text,
    kubeconfig: field("kubeconfig"),
    computeEndpoint: field("Compute API"),
    config: field("config"),
    statusUrl: status,
  };
  const backendUrl = field("stacks");
  const files = demoFiles(path.dirname(result.config));
  const configText = fs.readFileSync(result.config, "utf8");
  // The config the daemon and the printed commands read: the environment's endpoint and bucket.
  assert.equal(configText, demoConfigText(demoConfig({ ...result, backendUrl }, files.stateDir, "30s")));
  assert.equal(backendUrl, "gs://dccm-e2e-state/dccm");
  // Exactly what the command prints, with this run's paths and ports.
  assert.equal(text, demoInstructions({ ...result, backendUrl, files, configText }, 30_000));
  return result;
}

/** The printed lines that run a command (not the comment after it), in order. */
function printedCommands(text: string): string[] {
  return [...text.matchAll(/^ {2}((?:source|kubectl|curl|npx) .*?)(?: {2,}# .*)?$/gm)].map((match) => match[1] ?? "");
}

/** One printed dccm command, run as a user pastes it into another shell: the printed `source` first, nothing inherited of the demo. */
async function runPrinted(
  shown: Printed,
  command: string,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const commands = printedCommands(shown.text);
  const source = commands.find((line) => line.startsWith("source "));
  const line = commands.find((printedLine) => printedLine.startsWith(command));
  assert.ok(source !== undefined && line !== undefined, `${command} among ${commands.join("\n")}`);
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const name of Object.keys(env)) if (/^(PULUMI_|KUBECONFIG$|STORAGE_EMULATOR_HOST$)/.test(name)) delete env[name];
  const shell = spawn("bash", ["-c", `${source} && ${line}`], {
    cwd: repoRoot(),
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  shell.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
  shell.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => shell.once("exit", (exit) => resolve(exit)));
  return { code, stdout, stderr };
}

/** The emulator's resources of one kind (GET /emulator/resources, as the printed curl lines ask). */
async function emulated(
  shown: Printed,
  kind: string,
): Promise<{ scope: string; name: string; properties: Record<string, unknown> }[]> {
  const answer = await fetch(new URL(`/emulator/resources?kind=${kind}`, shown.computeEndpoint));
  assert.equal(answer.status, 200);
  return (await answer.json()) as { scope: string; name: string; properties: Record<string, unknown> }[];
}

/** Three Nodes initialized as a CCM initializes them, a route each, an instance group per zone. */
async function seeTheWholeCcm(shown: Printed): Promise<void> {
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromFile(shown.kubeconfig);
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  const initialized = await eventually("the three Nodes initialized with their routes", async () => {
    const nodes = (await core.listNode()).items.map((node) => ({
      name: node.metadata?.name,
      providerID: node.spec?.providerID,
      zone: node.metadata?.labels?.["topology.kubernetes.io/zone"],
      uninitialized: (node.spec?.taints ?? []).some((taint) => taint.key === UNINITIALIZED_TAINT),
      route: node.status?.conditions?.find((condition) => condition.type === "NetworkUnavailable")?.reason,
    }));
    return nodes.length === 3 && nodes.every((node) => !node.uninitialized && node.route === "RouteCreated")
      ? nodes
      : undefined;
  });
  assert.deepEqual(initialized, [
    {
      name: "node-a1",
      providerID: "gce://dccm-test/us-central1-a/node-a1",
      zone: "us-central1-a",
      uninitialized: false,
      route: "RouteCreated",
    },
    {
      name: "node-a2",
      providerID: "gce://dccm-test/us-central1-a/node-a2",
      zone: "us-central1-a",
      uninitialized: false,
      route: "RouteCreated",
    },
    {
      name: "node-b1",
      providerID: "gce://dccm-test/us-central1-b/node-b1",
      zone: "us-central1-b",
      uninitialized: false,
      route: "RouteCreated",
    },
  ]);
  const routes = (await emulated(shown, "routes")).map((route) => ({
    destRange: route.properties.destRange,
    nextHop: String(route.properties.nextHopInstance).split("/zones/")[1],
  }));
  assert.deepEqual(
    routes.sort((a, b) => String(a.destRange).localeCompare(String(b.destRange))),
    [
      { destRange: "10.64.1.0/24", nextHop: "us-central1-a/instances/node-a1" },
      { destRange: "10.64.2.0/24", nextHop: "us-central1-a/instances/node-a2" },
      { destRange: "10.64.3.0/24", nextHop: "us-central1-b/instances/node-b1" },
    ],
  );
  const groups = (await emulated(shown, "instanceGroups")).map((group) => ({
    zone: group.scope,
    name: group.name,
    instances: ((group.properties.instances ?? []) as string[]).map((link) => link.split("/").pop()).sort(),
  }));
  assert.deepEqual(groups, [
    { zone: "us-central1-a", name: `k8s-ig--${DEMO_CLUSTER_ID}`, instances: ["node-a1", "node-a2"] },
    { zone: "us-central1-b", name: `k8s-ig--${DEMO_CLUSTER_ID}`, instances: ["node-b1"] },
  ]);
}

/** hello's ingress IP, the emulator's IP of its forwarding rule (ephemeral: addressReservation transient, the default). */
async function createServiceAndSeeItsIp(shown: Printed): Promise<string> {
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromFile(shown.kubeconfig);
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  const created = await core.createNamespacedService({
    namespace: "default",
    body: {
      metadata: { name: "hello" },
      spec: { type: "LoadBalancer", ports: [{ port: 80, targetPort: 8080, protocol: "TCP" }] },
    },
  });
  const ip = await eventually(
    "hello's ingress IP",
    async () =>
      (await core.readNamespacedService({ name: "hello", namespace: "default" })).status?.loadBalancer?.ingress?.[0]
        ?.ip,
  );
  const rule = (await (
    await fetch(
      `${shown.computeEndpoint}projects/${DEMO_PROJECT}/regions/us-central1/forwardingRules/${loadBalancerName(created.metadata?.uid ?? "")}`,
    )
  ).json()) as {
    IPAddress?: string;
  };
  assert.equal(ip, rule.IPAddress);
  return ip;
}

/** status, preview and drift as printed, each in a fresh shell that sources the printed file: exit 0, exactly this. */
async function printedCommandsAnswer(shown: Printed, ingress: string): Promise<void> {
  // The preview answers 0 once the daemon's last run after the Service is recorded; until then 2 (something to do).
  const preview = await eventually(
    "dccm preview with nothing to change",
    async () => {
      const answer = await runPrinted(shown, "npx dccm preview");
      return answer.code === 0 ? answer : undefined;
    },
    120_000,
    1000,
  );
  assert.deepEqual(preview, {
    code: 0,
    stdout:
      "Unchanged stacks: cluster, service.default.hello\nPlan: 0 to create, 0 to update, 0 to replace, 0 to delete, 2 unchanged stacks\n",
    stderr: "",
  });
  const drift = await runPrinted(shown, "npx dccm drift");
  assert.deepEqual(
    { ...drift, stdout: drift.stdout.replace(/ with \d+ GCE resources /, " with N GCE resources ") },
    {
      code: 0,
      stdout: "no drift: 2 stacks compared with N GCE resources of project dccm-test; nothing was changed\n",
      stderr: "",
    },
  );
  const status = await runPrinted(shown, "npx dccm status");
  // The stacks, then (after a blank line) the GCE quotas the daemon read before hello's first up.
  const [stacks = "", quotas = ""] = status.stdout.trimEnd().split("\n\n");
  const [title, header, ...rows] = stacks.split("\n");
  const [quotaTitle, quotaHeader, ...quotaRows] = quotas.split("\n");
  const quotaCells = quotaRows.map((row) => row.split(/ {2,}/));
  assert.deepEqual(
    {
      title: quotaTitle?.replace(/ at .*;/, " at T;"),
      header: quotaHeader?.split(/ {2,}/),
      quotas: quotaCells.map(([quota, scope, , limit]) => [quota, scope, limit]),
      // usage + headroom = limit: usage itself depends on when, within the 30 s read, the read was.
      consistent: quotaCells.every(
        ([, , usage, limit, headroom]) => Number(usage) + Number(headroom) === Number(limit),
      ),
    },
    {
      title: "GCE quotas read at T; held for quota: none",
      header: ["QUOTA", "SCOPE", "USAGE", "LIMIT", "HEADROOM"],
      quotas: [
        ["STATIC_ADDRESSES", "region us-central1", "1000000"],
        ["INTERNAL_ADDRESSES", "region us-central1", "1000000"],
        ["FORWARDING_RULES", "global", "1000000"],
        ["BACKEND_SERVICES", "global", "1000000"],
        ["TARGET_POOLS", "global", "1000000"],
        ["HEALTH_CHECKS", "global", "1000000"],
        ["FIREWALLS", "global", "1000000"],
        ["ROUTES", "global", "1000000"],
      ],
      consistent: true,
    },
  );
  assert.deepEqual(
    {
      code: status.code,
      stderr: status.stderr,
      title,
      header: header?.split(/ {2,}/),
      rows: rows.map((row) =>
        row
          .split(/ {2,}/)
          .map((cell) => cell.replace(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ /, "T ").replace(/^\d+\.\ds$/, "Ns")),
      ),
    },
    {
      code: 0,
      stderr: "",
      title: `daemon ${shown.statusUrl}: leader, initial lists synced`,
      header: ["STACK", "SERVICE", "LAST UP", "RESULT", "DURATION", "INGRESS", "DRIFT CORRECTED", "LAST ERROR"],
      rows: [
        ["cluster", "-", "T up", "ok", "Ns", "-", "-", "-"],
        ["service.default.hello", "default/hello", "T up", "ok", "Ns", ingress, "-", "-"],
      ],
    },
  );
}

describe("npx dccm demo (the README's first command)", function () {
  this.timeout(900_000);
  const started: Demo[] = [];

  after(() => {
    // Whatever a failed case left: not the next test's problem.
    for (const demo of started) for (const pid of markedProcessesOf(demo.marker)) process.kill(pid, "SIGKILL");
  });

  it("prints what to try; three Nodes initialized with a route each and a group per zone; a Service gets the emulator's address; status, preview and drift run as printed; SIGTERM to the shell's command stops everything", async () => {
    const demo = startDemo();
    started.push(demo);
    const shown = await printed(demo);
    // Only what it starts was asked for: no helm, no stock CCM.
    assert.deepEqual(
      demo.stderr.filter((line) => line.startsWith("testenv: ready")).map((line) => line.replace(/ v[^ ,]+/g, " vX")),
      [
        "testenv: ready in .testenv/bin: kube-apiserver vX, etcd vX, pulumi vX, pulumi-language-nodejs vX, fake-gcs-server vX",
      ],
    );
    await seeTheWholeCcm(shown);
    await printedCommandsAnswer(shown, await createServiceAndSeeItsIp(shown));
    const running = new Set(demoProcesses(demo.marker).values());
    for (const name of ["etcd", "kube-apiserver", "node"])
      assert.ok(running.has(name), `${name} among ${[...running].join(", ")}`);
    demo.shell.kill("SIGTERM");
    // The shell ran npx in its place; npx hands the signal on to the demo, waits for it, then ends by the same signal.
    assert.equal(await demo.exited, "SIGTERM");
    assert.deepEqual(
      await eventually(
        "no process of the demo left",
        () => (demoProcesses(demo.marker).size === 0 ? [] : undefined),
        30_000,
      ),
      [],
    );
    assert.deepEqual(demo.stderr.slice(-2), [
      "dccm demo: stopping kube-apiserver, etcd, the GCE emulator and fake-gcs-server",
      "dccm demo: stopped; nothing it started is left running",
    ]);
  });

  for (const victim of ["its parent (npx)", "the demo itself"] as const) {
    it(`SIGKILL of ${victim}: nothing it started is left running`, async () => {
      const demo = startDemo();
      started.push(demo);
      await printed(demo);
      const processes = demoProcesses(demo.marker);
      // The shell runs `npx` in its place; npx runs the demo through a shell of its own.
      const demoPid = [...processes.keys()].find(
        (pid) =>
          fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes("demo") && processes.get(pid) === "node",
      );
      assert.ok(demoPid !== undefined, [...processes.values()].join(", "));
      process.kill(victim === "the demo itself" ? demoPid : (demo.shell.pid ?? 0), "SIGKILL");
      assert.deepEqual(
        await eventually(
          "no process of the demo left",
          () => (demoProcesses(demo.marker).size === 0 ? [] : undefined),
          60_000,
        ),
        [],
      );
    });
  }

  it("the README's script for the environment alone, as pasted: it waits for the file, and the environment ends with the script", async () => {
    const readme = fs.readFileSync(path.join(repoRoot(), "docs", "development", "offline-environment.md"), "utf8");
    const start = readme.indexOf("    npm run -s testenv -- up --json-file /tmp/dccm-testenv.json");
    const end = readme.indexOf("\n\n", start);
    assert.ok(start > 0 && end > start, "the script is in the README");
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "dccm-recipe-")), "testenv.json");
    const script = readme
      .slice(start, end)
      .split("\n")
      .map((line) => line.replace(/^ {4}/, "").replace(/\s+# .*$/, ""))
      .join("\n")
      .replaceAll("/tmp/dccm-testenv.json", file);
    const marker = randomUUID();
    const env: NodeJS.ProcessEnv = { ...process.env, [MARKER_VARIABLE]: marker };
    const shell = spawn("bash", ["-c", script], { cwd: repoRoot(), env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    shell.stdout?.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => shell.once("exit", (exit) => resolve(exit)));
    const launched = stdout.trim();
    assert.deepEqual([code, launched.endsWith("/admin.kubeconfig")], [0, true], stdout);
    // The script has ended: the launcher saw its ancestor go, stopped everything, and removed the file.
    assert.deepEqual(
      await eventually(
        "no process of the environment left",
        () => (demoProcesses(marker).size === 0 ? [] : undefined),
        60_000,
      ),
      [],
    );
    assert.deepEqual([fs.existsSync(file), fs.existsSync(launched)], [false, false]);
  });
});
