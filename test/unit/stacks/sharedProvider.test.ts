/**
 * stacks/sharedProvider.ts: the port line the engine reads (table), where the engine looks for the
 * plugin (table), the restart decision (table), and real processes: connections forwarded to the
 * plugin of the moment, a killed plugin's connections closed and a new plugin started on the same
 * attach port, a plugin that never announces a port retried with the backoff.
 */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import {
  parseAnnouncedPort,
  pluginCandidates,
  restartPlan,
  SharedProvider,
  type PluginLookup,
  type PortLine,
  type RestartPolicy,
} from "../../../stacks/sharedProvider";
import { eventually } from "../../support/wait";

describe("stacks/sharedProvider: parseAnnouncedPort", () => {
  const cases: Array<[string, string, PortLine]> = [
    ["nothing yet", "", undefined],
    ["a port without its newline yet", "38835", undefined],
    ["a port line", "38835\n", { port: 38835 }],
    ["a port line, then more output", "38835\nlistening\n", { port: 38835 }],
    ["a port with surrounding blanks and CRLF", " 1 \r\n", { port: 1 }],
    ["the highest port", "65535\n", { port: 65535 }],
    ["port 0", "0\n", { error: 'expected a port on the first line of the plugin\'s stdout, got "0"' }],
    [
      "above the highest port",
      "65536\n",
      { error: 'expected a port on the first line of the plugin\'s stdout, got "65536"' },
    ],
    [
      "a log line first",
      "starting provider\n38835\n",
      { error: 'expected a port on the first line of the plugin\'s stdout, got "starting provider"' },
    ],
    [
      "an empty first line",
      "\n38835\n",
      { error: 'expected a port on the first line of the plugin\'s stdout, got ""' },
    ],
  ];
  for (const [title, stdout, expected] of cases)
    it(title, () => assert.deepEqual(parseAnnouncedPort(stdout), expected));
});

describe("stacks/sharedProvider: pluginCandidates (the engine's order: PATH, then the plugin cache)", () => {
  const base: PluginLookup = {
    pathEnv: "/a/bin:/usr/bin",
    pulumiHome: undefined,
    home: "/root",
    ignoreAmbient: false,
    version: "9.37.0",
  };
  const cases: Array<[string, PluginLookup, string[]]> = [
    [
      "PATH in order, then ~/.pulumi",
      base,
      [
        "/a/bin/pulumi-resource-gcp",
        "/usr/bin/pulumi-resource-gcp",
        "/root/.pulumi/plugins/resource-gcp-v9.37.0/pulumi-resource-gcp",
      ],
    ],
    [
      "PULUMI_HOME",
      { ...base, pathEnv: "/a/bin", pulumiHome: "/p" },
      ["/a/bin/pulumi-resource-gcp", "/p/plugins/resource-gcp-v9.37.0/pulumi-resource-gcp"],
    ],
    [
      "PULUMI_IGNORE_AMBIENT_PLUGINS: the cache only",
      { ...base, ignoreAmbient: true },
      ["/root/.pulumi/plugins/resource-gcp-v9.37.0/pulumi-resource-gcp"],
    ],
    [
      "no PATH, empty entries skipped",
      { ...base, pathEnv: "::" },
      ["/root/.pulumi/plugins/resource-gcp-v9.37.0/pulumi-resource-gcp"],
    ],
  ];
  for (const [title, lookup, expected] of cases) it(title, () => assert.deepEqual(pluginCandidates(lookup), expected));
});

describe("stacks/sharedProvider: restartPlan", () => {
  const policy: RestartPolicy = { backoffBaseMs: 1000, backoffMaxMs: 60_000, healthyAfterMs: 60_000 };
  const cases: Array<[string, number, number, { failures: number; delayMs: number }]> = [
    ["the first exit, soon after the start", 0, 500, { failures: 1, delayMs: 1000 }],
    ["a second exit in a row", 1, 500, { failures: 2, delayMs: 2000 }],
    ["a seventh: capped", 6, 10, { failures: 7, delayMs: 60_000 }],
    ["after a minute of work: the first failure again", 6, 60_000, { failures: 1, delayMs: 1000 }],
    ["just under a minute: still in a row", 3, 59_999, { failures: 4, delayMs: 8000 }],
  ];
  for (const [title, before, ranMs, expected] of cases)
    it(title, () => assert.deepEqual(restartPlan(before, ranMs, policy), expected));
});

/** A plugin stand-in: answers each connection with its own pid, after announcing its port (or not). */
function fakePlugin(dir: string, announce: string): string {
  const file = path.join(dir, "pulumi-resource-gcp");
  const script = [
    `#!${process.execPath}`,
    'const net = require("node:net");',
    "const server = net.createServer((socket) => socket.end(String(process.pid)));",
    `server.listen(0, "127.0.0.1", () => process.stdout.write(${announce}));`,
  ].join("\n");
  fs.writeFileSync(file, `${script}\n`, { mode: 0o755 });
  return file;
}

function ask(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    let answer = "";
    socket.on("data", (chunk: Buffer) => (answer += chunk.toString("utf8")));
    socket.on("end", () => resolve(answer));
    socket.on("error", reject);
  });
}

describe("SharedProvider (real processes)", function () {
  this.timeout(30_000);
  const policy: RestartPolicy = { backoffBaseMs: 50, backoffMaxMs: 200, healthyAfterMs: 60_000 };
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-shared-provider-"))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("forwards the attach port to the plugin, and to a new plugin after the first was killed", async () => {
    const exits: string[] = [];
    const provider = new SharedProvider({
      env: {},
      pluginPath: fakePlugin(dir, "`${server.address().port}\\n`"),
      ...policy,
      onExit: (reason, delayMs) => exits.push(`${reason} → ${delayMs} ms`),
    });
    try {
      const env = await provider.start();
      const port = Number(/^gcp:(\d+)$/.exec(env.PULUMI_DEBUG_PROVIDERS)?.[1]);
      const first = provider.pid;
      assert.equal(await ask(port), String(first));
      process.kill(first ?? 0, "SIGKILL");
      await eventually(
        "a new plugin",
        () => (provider.pid !== undefined && provider.pid !== first ? true : undefined),
        10_000,
        20,
      );
      assert.deepEqual(exits, ["exited (code null, signal SIGKILL) → 50 ms"]);
      assert.equal(await ask(port), String(provider.pid));
    } finally {
      await provider.stop();
    }
  });

  it("a plugin that announces no port is stopped and tried again, the wait doubling", async () => {
    const exits: string[] = [];
    const plugin = fakePlugin(dir, '"listening\\n"');
    const provider = new SharedProvider({
      env: {},
      pluginPath: plugin,
      ...policy,
      onExit: (reason, delayMs) => exits.push(`${reason} → ${delayMs} ms`),
    });
    try {
      await provider.start();
      await eventually("three failed starts", () => (exits.length >= 3 ? true : undefined), 10_000, 20);
      const reason = `pulumi-resource-gcp (${plugin}) did not start: expected a port on the first line of the plugin's stdout, got "listening"`;
      assert.deepEqual(exits.slice(0, 3), [`${reason} → 50 ms`, `${reason} → 100 ms`, `${reason} → 200 ms`]);
      assert.equal(provider.pid, undefined);
    } finally {
      await provider.stop();
    }
  });
});
