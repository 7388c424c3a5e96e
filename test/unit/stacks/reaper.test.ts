/**
 * stacks/reaper.ts: the marker test on /proc environments (table), the freeze-then-kill rounds
 * (against a fake /proc), and real processes: a daemon killed with SIGKILL leaves no marked
 * process, wherever it sits in the process tree, and nothing unmarked is touched.
 */
import * as assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import {
  environCarries,
  markedProcesses,
  newProcessMarker,
  PROCESS_OWNER_VARIABLE,
  reapMarked,
  type Signaller,
} from "../../../stacks/reaper";
import { eventually } from "../../support/wait";

const environ = (...entries: string[]): Buffer => Buffer.from(entries.map((entry) => `${entry}\0`).join(""));

describe("reaper: environCarries", () => {
  const marker = "41-abc";
  const cases: Array<[string, Buffer, boolean]> = [
    ["the marker among others", environ("PATH=/bin", `DCCM_PROCESS_OWNER=${marker}`, "HOME=/root"), true],
    ["the marker last, without a final NUL", Buffer.from(`PATH=/bin\0DCCM_PROCESS_OWNER=${marker}`), true],
    ["another daemon's marker", environ("DCCM_PROCESS_OWNER=41-abd"), false],
    ["a marker that only starts with ours", environ(`DCCM_PROCESS_OWNER=${marker}0`), false],
    ["our marker as the tail of another variable", environ(`X_DCCM_PROCESS_OWNER=${marker}`), false],
    ["our marker inside a value", environ(`NOTE=DCCM_PROCESS_OWNER=${marker}`), false],
    ["an empty environment", Buffer.alloc(0), false],
  ];
  for (const [title, input, expected] of cases) it(title, () => assert.equal(environCarries(input, marker), expected));

  it("a new marker names the process and is never the same twice", () => {
    const a = newProcessMarker(123);
    const b = newProcessMarker(123);
    assert.match(a, /^123-[0-9a-f-]{36}$/);
    assert.notEqual(a, b);
    assert.equal(PROCESS_OWNER_VARIABLE, "DCCM_PROCESS_OWNER");
  });
});

describe("reaper: finding and killing marked processes in /proc", () => {
  let procRoot: string;
  const marker = "7-m";
  const addProcess = (pid: number, entries: string[]): void => {
    fs.mkdirSync(path.join(procRoot, String(pid)));
    fs.writeFileSync(path.join(procRoot, String(pid), "environ"), environ(...entries));
  };

  beforeEach(() => {
    procRoot = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-proc-"));
    addProcess(10, [`DCCM_PROCESS_OWNER=${marker}`]);
    addProcess(11, ["PATH=/bin"]);
    addProcess(12, [`DCCM_PROCESS_OWNER=${marker}`, "PULUMI_HOME=/x"]);
    addProcess(3, [`DCCM_PROCESS_OWNER=${marker}`]);
    // Not a process, and a process whose environ cannot be read (another user's, or gone).
    fs.mkdirSync(path.join(procRoot, "self"));
    fs.mkdirSync(path.join(procRoot, "99"));
  });
  afterEach(() => fs.rmSync(procRoot, { recursive: true, force: true }));

  it("lists the marked pids, in order, skipping itself, non-processes and unreadable ones", () => {
    assert.deepEqual(markedProcesses(marker, 12, procRoot), [3, 10]);
    assert.deepEqual(markedProcesses(marker, 1, procRoot), [3, 10, 12]);
    assert.deepEqual(markedProcesses("other", 1, procRoot), []);
  });

  it("freezes every marked process, looks again for ones forked meanwhile, then kills them all", () => {
    const sent: string[] = [];
    const signaller: Signaller = {
      kill: (pid, signal) => {
        sent.push(`${signal} ${pid}`);
        // Process 10 forks a child before it is frozen: the next look must find it.
        if (pid === 10 && signal === "SIGSTOP") addProcess(20, [`DCCM_PROCESS_OWNER=${marker}`]);
        if (pid === 12 && signal === "SIGKILL") throw Object.assign(new Error("kill ESRCH"), { code: "ESRCH" });
      },
    };
    assert.deepEqual(reapMarked(marker, { self: 1, procRoot, signaller }), [3, 10, 12, 20]);
    assert.deepEqual(sent, [
      "SIGSTOP 3",
      "SIGSTOP 10",
      "SIGSTOP 12",
      "SIGSTOP 20",
      "SIGKILL 3",
      "SIGKILL 10",
      "SIGKILL 12",
      "SIGKILL 20",
    ]);
  });

  it("signals nothing when no process is marked", () => {
    const sent: string[] = [];
    assert.deepEqual(
      reapMarked("nobody", { self: 1, procRoot, signaller: { kill: (pid, signal) => sent.push(`${signal} ${pid}`) } }),
      [],
    );
    assert.deepEqual(sent, []);
  });
});

const alive = (pid: number): boolean => fs.existsSync(`/proc/${pid}`) && !/^State:\s+Z/m.test(readStatus(pid));
function readStatus(pid: number): string {
  try {
    return fs.readFileSync(`/proc/${pid}/status`, "utf8");
  } catch {
    return "";
  }
}

/** A stand-in daemon: starts its Reaper, then marked processes as the CLI and a plugin would sit. */
const FAKE_DAEMON = `
const { spawn } = require("node:child_process");
const { Reaper, PROCESS_OWNER_VARIABLE } = require(process.argv[2]);
const marker = process.argv[3];
const reaper = new Reaper({ marker, onExit: (code, signal) => process.stdout.write(JSON.stringify({ reaperExit: { code, signal } }) + "\\n") });
reaper.start();
const env = { ...process.env, [PROCESS_OWNER_VARIABLE]: marker };
// The CLI: a child in the daemon's process group.
const cli = spawn("sleep", ["600"], { env, stdio: "ignore" });
// A plugin: a grandchild in a process group of its own, as the CLI starts plugins.
const shell = spawn("sh", ["-c", "sleep 600 & echo $!; wait"], { env, detached: true, stdio: ["ignore", "pipe", "ignore"] });
shell.stdout.once("data", (data) => {
  process.stdout.write(JSON.stringify({ reaper: reaper.pid, marked: [cli.pid, shell.pid, Number(String(data).trim())] }) + "\\n");
});
process.stdin.on("data", (data) => { if (String(data).startsWith("stop")) reaper.stop(); if (String(data).startsWith("kill-reaper")) process.kill(reaper.pid, "SIGKILL"); });
setInterval(() => undefined, 1000);
`;

interface FakeDaemon {
  process: ChildProcess;
  lines: AsyncIterator<Record<string, unknown>>;
}

function startFakeDaemon(dir: string, marker: string): FakeDaemon {
  const script = path.join(dir, "fake-daemon.js");
  fs.writeFileSync(script, FAKE_DAEMON);
  const child = spawn(process.execPath, [script, path.join(__dirname, "../../../stacks/reaper.js"), marker], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  async function* lines(): AsyncGenerator<Record<string, unknown>> {
    let buffered = "";
    for await (const chunk of child.stdout as AsyncIterable<Buffer>) {
      buffered += chunk.toString();
      let newline: number;
      while ((newline = buffered.indexOf("\n")) >= 0) {
        yield JSON.parse(buffered.slice(0, newline)) as Record<string, unknown>;
        buffered = buffered.slice(newline + 1);
      }
    }
  }
  return { process: child, lines: lines() };
}

async function nextLine(daemon: FakeDaemon): Promise<Record<string, unknown>> {
  const next = await daemon.lines.next();
  assert.equal(next.done, false, "the fake daemon ended its output");
  return next.value;
}

describe("reaper: real processes", function () {
  this.timeout(30_000);
  let dir: string;
  let bystander: ChildProcess;
  const leftovers: number[] = [];

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-reaper-"));
    // Same user, same kind of process, another daemon's marker: must be left alone.
    bystander = spawn("sleep", ["600"], {
      env: { ...process.env, [PROCESS_OWNER_VARIABLE]: "another-daemon" },
      stdio: "ignore",
    });
  });
  afterEach(() => {
    bystander.kill("SIGKILL");
    for (const pid of leftovers.splice(0)) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone, as it should be.
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("a daemon killed with SIGKILL: its CLI and its plugin in another process group die with it; nothing else does", async () => {
    const daemon = startFakeDaemon(dir, newProcessMarker());
    const { reaper, marked } = (await nextLine(daemon)) as { reaper: number; marked: number[] };
    leftovers.push(reaper, ...marked);
    assert.equal(marked.every(alive), true);
    daemon.process.kill("SIGKILL");
    await eventually(
      "the marked processes and the reaper to be gone",
      () => ([reaper, ...marked].some(alive) ? undefined : true),
      10_000,
      10,
    );
    assert.equal(alive(bystander.pid ?? 0), true, "a process with another marker was killed");
  });

  it("a reaper that dies is started again and still does its work", async () => {
    const daemon = startFakeDaemon(dir, newProcessMarker());
    const first = (await nextLine(daemon)) as { reaper: number; marked: number[] };
    leftovers.push(first.reaper, ...first.marked);
    daemon.process.stdin?.write("kill-reaper\n");
    assert.deepEqual(await nextLine(daemon), { reaperExit: { code: null, signal: "SIGKILL" } });
    assert.equal(first.marked.every(alive), true, "killing the reaper must not kill the processes it watches");
    daemon.process.kill("SIGKILL");
    await eventually(
      "the marked processes to be gone",
      () => (first.marked.some(alive) ? undefined : true),
      10_000,
      10,
    );
  });

  it("a clean stop: the reaper exits and kills what is left; the daemon then exits with nothing keeping it alive", async () => {
    const daemon = startFakeDaemon(dir, newProcessMarker());
    const { reaper, marked } = (await nextLine(daemon)) as { reaper: number; marked: number[] };
    leftovers.push(reaper, ...marked);
    daemon.process.stdin?.write("stop\n");
    await eventually(
      "the reaper and the marked processes to be gone",
      () => ([reaper, ...marked].some(alive) ? undefined : true),
      10_000,
      10,
    );
    assert.equal(alive(daemon.process.pid ?? 0), true, "the daemon itself is not the reaper's to kill");
    daemon.process.kill("SIGKILL");
  });
});
