// controllers/status.ts (the rows of /status, fed in the order the daemon learns things) and
// `dccm status` (the table, its --help, and the backend read when no daemon answers) as a child process.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import {
  formatQuotaTable,
  formatStatusTable,
  printableUrl,
  STATUS_HELP,
  statusTitle,
  tableError,
} from "../../../bin/statusCommand";
import {
  compareStacks,
  MAX_INGRESS,
  MAX_TEXT,
  parseStatusDocument,
  StatusBook,
  type StatusRow,
} from "../../../controllers/status";
import { runDccm, type CliRun } from "../../support/cli";

/** A clock the test moves: each call of now() returns the next second from 18:00:00. */
function clock(): () => Date {
  let tick = 0;
  return () => new Date(Date.UTC(2026, 10, 23, 18, 0, tick++));
}

const T0 = new Date("2026-11-23T17:59:00.000Z");

function row(stack: string, fields: Partial<StatusRow> = {}): StatusRow {
  const service = stack.startsWith("service.") ? stack.slice("service.".length).replace(".", "/") : null;
  return {
    stack,
    kind: stack === "cluster" ? "cluster" : "service",
    service,
    lastUp: null,
    ingress: stack === "cluster" ? null : [],
    lastDriftCorrection: null,
    lastError: null,
    ...fields,
  };
}

describe("controllers/status: StatusBook", () => {
  it("tracks stacks in cluster-first order, one empty row each, and ignores facts of untracked stacks", () => {
    const book = new StatusBook(clock());
    for (const stack of ["service.web.b", "service.default.z", "cluster", "service.default.a"]) book.track(stack);
    book.track("cluster");
    book.ran("service.gone.x", "up", T0, 10);
    book.ingress("service.gone.x", ["10.0.0.1"]);
    book.driftCorrected("service.gone.x", "ForwardingRule x (create)");
    book.reconciled("service.gone.x", { kind: "giveUp", reason: "x" });
    assert.deepEqual(book.list(), [
      row("cluster"),
      row("service.default.a"),
      row("service.default.z"),
      row("service.web.b"),
    ]);
  });

  // Each case: the calls the daemon makes, in its order, and the row they leave.
  const cases: { name: string; feed: (book: StatusBook) => void; expected: StatusRow }[] = [
    {
      name: "an up that succeeded, then its reconcile ok, then the ingress written",
      feed: (book) => {
        book.ran("service.default.web", "up", T0, 2345.6);
        book.ingress("service.default.web", ["203.0.113.7"]);
        book.reconciled("service.default.web", { kind: "ok" });
      },
      expected: row("service.default.web", {
        lastUp: { at: "2026-11-23T17:59:00.000Z", operation: "up", result: "ok", durationMs: 2346 },
        ingress: ["203.0.113.7"],
      }),
    },
    {
      name: "an up that failed: its reconcile's retry is its result and the last error",
      feed: (book) => {
        book.ran("service.default.web", "up", T0, 1200);
        book.reconciled("service.default.web", {
          kind: "retry",
          error: new Error("pulumi up of stack service.default.web failed", { cause: new Error("error: 503 boom") }),
        });
      },
      expected: row("service.default.web", {
        lastUp: { at: "2026-11-23T17:59:00.000Z", operation: "up", result: "retry", durationMs: 1200 },
        lastError: {
          at: "2026-11-23T18:00:00.000Z",
          message: "pulumi up of stack service.default.web failed: error: 503 boom",
        },
      }),
    },
    {
      name: "a failure before any run (an invalid Service) leaves the last up alone",
      feed: (book) => {
        book.ran("service.default.web", "up", T0, 900);
        book.reconciled("service.default.web", { kind: "ok" });
        book.reconciled("service.default.web", {
          kind: "giveUp",
          reason: "the Service is invalid: spec.ports[0].protocol: SCTP is not supported",
        });
      },
      expected: row("service.default.web", {
        lastUp: { at: "2026-11-23T17:59:00.000Z", operation: "up", result: "ok", durationMs: 900 },
        lastError: {
          at: "2026-11-23T18:00:00.000Z",
          message: "the Service is invalid: spec.ports[0].protocol: SCTP is not supported",
        },
      }),
    },
    {
      name: "a later success keeps the last error (with its time) and replaces the last up",
      feed: (book) => {
        book.ran("service.default.web", "up", T0, 900);
        book.reconciled("service.default.web", { kind: "retry", error: new Error("boom") });
        book.ran("service.default.web", "refresh", new Date("2026-11-23T18:10:00.000Z"), 4000);
        book.driftCorrected("service.default.web", "ForwardingRule default/web:forwarding-rule-tcp (create)");
        book.reconciled("service.default.web", { kind: "ok" });
      },
      expected: row("service.default.web", {
        lastUp: { at: "2026-11-23T18:10:00.000Z", operation: "refresh", result: "ok", durationMs: 4000 },
        lastError: { at: "2026-11-23T18:00:00.000Z", message: "boom" },
        lastDriftCorrection: {
          at: "2026-11-23T18:00:01.000Z",
          putBack: "ForwardingRule default/web:forwarding-rule-tcp (create)",
        },
      }),
    },
    {
      name: "a locked stack: the run's result is retryAfter, which is no error",
      feed: (book) => {
        book.ran("service.default.web", "up", T0, 50);
        book.reconciled("service.default.web", { kind: "retryAfter", ms: 5000, reason: "stack locked" });
      },
      expected: row("service.default.web", {
        lastUp: { at: "2026-11-23T17:59:00.000Z", operation: "up", result: "retryAfter", durationMs: 50 },
      }),
    },
    {
      name: "a result without a run in its reconcile leaves the last up's result as it was",
      feed: (book) => {
        book.ran("service.default.web", "up", T0, 50);
        book.reconciled("service.default.web", { kind: "ok" });
        book.reconciled("service.default.web", {
          kind: "retryAfter",
          ms: 1000,
          reason: "waiting for the cluster stack",
        });
      },
      expected: row("service.default.web", {
        lastUp: { at: "2026-11-23T17:59:00.000Z", operation: "up", result: "ok", durationMs: 50 },
      }),
    },
    {
      name: "bounded: at most MAX_INGRESS IPs, messages and put-backs cut to MAX_TEXT characters",
      feed: (book) => {
        book.ingress(
          "service.default.web",
          Array.from({ length: 20 }, (_, i) => `10.0.0.${i}`),
        );
        book.driftCorrected("service.default.web", "p".repeat(5000));
        book.reconciled("service.default.web", { kind: "giveUp", reason: "m".repeat(5000) });
      },
      expected: row("service.default.web", {
        ingress: Array.from({ length: MAX_INGRESS }, (_, i) => `10.0.0.${i}`),
        lastDriftCorrection: { at: "2026-11-23T18:00:00.000Z", putBack: `${"p".repeat(MAX_TEXT - 1)}…` },
        lastError: { at: "2026-11-23T18:00:01.000Z", message: `${"m".repeat(MAX_TEXT - 1)}…` },
      }),
    },
    {
      name: "the cluster stack: a drift pass that put a route back",
      feed: (book) => {
        book.ran("cluster", "refresh", T0, 3000);
        book.driftCorrected("cluster", "Route k8s-node-a1 (create)");
        book.reconciled("cluster", { kind: "ok" });
      },
      expected: row("cluster", {
        lastUp: { at: "2026-11-23T17:59:00.000Z", operation: "refresh", result: "ok", durationMs: 3000 },
        lastDriftCorrection: { at: "2026-11-23T18:00:00.000Z", putBack: "Route k8s-node-a1 (create)" },
      }),
    },
  ];
  for (const { name, feed, expected } of cases) {
    it(name, () => {
      const book = new StatusBook(clock());
      book.track(expected.stack);
      feed(book);
      assert.deepEqual(book.list(), [expected]);
    });
  }

  it("until its reconcile's result, an ended run leaves the row's previous last up whole", () => {
    const book = new StatusBook(clock());
    book.track("service.default.web");
    book.ran("service.default.web", "up", T0, 900);
    book.reconciled("service.default.web", { kind: "retry", error: new Error("boom") });
    book.ran("service.default.web", "up", new Date("2026-11-23T18:05:00.000Z"), 1000);
    const before = { at: "2026-11-23T17:59:00.000Z", operation: "up", result: "retry", durationMs: 900 };
    assert.deepEqual(book.list()[0].lastUp, before);
    book.reconciled("service.default.web", { kind: "ok" });
    assert.deepEqual(book.list()[0].lastUp, {
      at: "2026-11-23T18:05:00.000Z",
      operation: "up",
      result: "ok",
      durationMs: 1000,
    });
  });

  it("a dropped stack's row is gone, and the result that follows its removal does not bring it back", () => {
    const book = new StatusBook(clock());
    book.track("service.default.web");
    book.ran("service.default.web", "destroy", T0, 100);
    book.drop("service.default.web");
    book.reconciled("service.default.web", { kind: "ok" });
    assert.deepEqual(book.list(), []);
    // Made again (the Service came back): a new row, nothing of the old one.
    book.track("service.default.web");
    book.reconciled("service.default.web", { kind: "ok" });
    assert.deepEqual(book.list(), [row("service.default.web")]);
  });

  it("list() hands out copies", () => {
    const book = new StatusBook(clock());
    book.track("service.default.web");
    book.ingress("service.default.web", ["10.0.0.1"]);
    const [listed] = book.list();
    listed.ingress?.push("10.0.0.2");
    assert.deepEqual(book.list()[0].ingress, ["10.0.0.1"]);
  });
});

describe("controllers/status: compareStacks and parseStatusDocument", () => {
  it("orders the cluster stack first, then Services by namespace and name, then other names", () => {
    const stacks = ["service.b.x", "odd", "service.a-b.y", "service.a.z", "cluster", "service.a.y"];
    assert.deepEqual([...stacks].sort(compareStacks), [
      "cluster",
      "service.a.y",
      "service.a.z",
      "service.a-b.y",
      "service.b.x",
      "odd",
    ]);
  });

  const good = {
    leader: true,
    synced: true,
    stacks: [
      row("cluster", { lastUp: { at: "2026-11-23T18:00:00.000Z", operation: "up", result: "ok", durationMs: 5 } }),
      row("service.default.web", {
        ingress: ["10.0.0.1"],
        lastError: { at: "2026-11-23T18:00:00.000Z", message: "boom" },
      }),
    ],
  };
  const QUOTAS = {
    readAt: "2026-11-23T18:00:00.000Z",
    quotas: [{ quota: "STATIC_ADDRESSES", scope: "region", region: "us-central1", limit: 8, usage: 3, headroom: 5 }],
    held: ["service.default.b"],
  };
  const cases: [string, unknown, unknown][] = [
    ["a document as /status writes it", JSON.parse(JSON.stringify(good)), good],
    ["not an object", [], "expected an object with leader, synced and stacks"],
    ["no synced", { leader: true, stacks: [] }, "expected an object with leader, synced and stacks"],
    [
      "a row without a stack name",
      { leader: true, synced: true, stacks: [{ kind: "cluster" }] },
      "stacks[0] is not a stack's row",
    ],
    [
      "an unknown result",
      {
        leader: false,
        synced: false,
        stacks: [row("cluster", { lastUp: { at: "x", operation: "up", result: "fine" as "ok", durationMs: 1 } })],
      },
      "stacks[0] is not a stack's row",
    ],
    [
      "ingress not a list of strings",
      { leader: false, synced: false, stacks: [{ ...row("service.a.b"), ingress: [1] }] },
      "stacks[0] is not a stack's row",
    ],
    [
      "an error without its message",
      { leader: false, synced: false, stacks: [{ ...row("service.a.b"), lastError: { at: "x" } }] },
      "stacks[0] is not a stack's row",
    ],
    ["with the quota rows (a daemon with Compute access)", { ...good, quotas: QUOTAS }, { ...good, quotas: QUOTAS }],
    [
      "quota rows with a limit that is not a number",
      { ...good, quotas: { ...QUOTAS, quotas: [{ ...QUOTAS.quotas[0], limit: "8" }] } },
      "quotas is not the quotas' status",
    ],
  ];
  for (const [name, input, expected] of cases) {
    it(name, () => assert.deepEqual(parseStatusDocument(input), expected));
  }
});

describe("dccm status: the table", () => {
  const rows: StatusRow[] = [
    row("service.default.bad", {
      lastUp: { at: "2026-11-23T18:01:02.345Z", operation: "up", result: "retry", durationMs: 4321 },
      lastError: {
        at: "2026-11-23T18:01:06.700Z",
        message: "pulumi up of stack service.default.bad failed:\n  error: 503 boom",
      },
    }),
    row("cluster", { lastUp: { at: "2026-11-23T18:00:00.000Z", operation: "up", result: "ok", durationMs: 2100 } }),
    row("service.default.web", {
      lastUp: { at: "2026-11-23T18:10:00.000Z", operation: "refresh", result: "ok", durationMs: 950 },
      ingress: ["203.0.113.7", "2001:db8::7"],
      lastDriftCorrection: {
        at: "2026-11-23T18:10:03.000Z",
        putBack: "ForwardingRule default/web:forwarding-rule-tcp (create)",
      },
    }),
    row("service.kube-system.dns"),
  ];

  it("one line per stack, cluster first, unknowns as -, columns padded, no trailing blanks", () => {
    assert.deepEqual(formatStatusTable(rows), [
      "STACK                    SERVICE          LAST UP                       RESULT  DURATION  INGRESS                  DRIFT CORRECTED                                                               LAST ERROR",
      "cluster                  -                2026-11-23T18:00:00Z up       ok      2.1s      -                        -                                                                             -",
      "service.default.bad      default/bad      2026-11-23T18:01:02Z up       retry   4.3s      -                        -                                                                             2026-11-23T18:01:06Z pulumi up of stack service.default.bad failed: error: 503 boom",
      "service.default.web      default/web      2026-11-23T18:10:00Z refresh  ok      0.9s      203.0.113.7,2001:db8::7  2026-11-23T18:10:03Z ForwardingRule default/web:forwarding-rule-tcp (create)  -",
      "service.kube-system.dns  kube-system/dns  -                             -       -         -                        -                                                                             -",
    ]);
  });

  it("the quota rows the daemon last read, under the stacks; nothing before a read or without Compute access", () => {
    assert.deepEqual(
      formatQuotaTable({
        readAt: "2026-11-23T18:00:00.123Z",
        quotas: [
          { quota: "STATIC_ADDRESSES", scope: "region", region: "us-central1", limit: 8, usage: 3, headroom: 5 },
          { quota: "FORWARDING_RULES", scope: "global", limit: 15, usage: 15, headroom: 0 },
        ],
        held: ["service.default.b", "service.default.c"],
      }),
      [
        "",
        "GCE quotas read at 2026-11-23T18:00:00Z; held for quota: service.default.b, service.default.c",
        "QUOTA             SCOPE               USAGE  LIMIT  HEADROOM",
        "STATIC_ADDRESSES  region us-central1  3      8      5",
        "FORWARDING_RULES  global              15     15     0",
      ],
    );
    assert.deepEqual(formatQuotaTable({ readAt: null, quotas: [], held: [] }), []);
    assert.deepEqual(formatQuotaTable(undefined), []);
  });

  it("an error older than the last run that succeeded is marked as before it, not shown as if current", () => {
    const lastUp = {
      at: "2026-11-23T18:10:00.000Z",
      operation: "up" as const,
      result: "ok" as const,
      durationMs: 1000,
    };
    const lastError = {
      at: "2026-11-23T18:01:06.700Z",
      message: "pulumi up of stack service.a.b failed: error: 503 boom",
    };
    const cell = (fields: Partial<StatusRow>): string =>
      (formatStatusTable([row("service.a.b", fields)])[1] ?? "").split("  ").pop() ?? "";
    assert.deepEqual(
      [
        cell({ lastUp, lastError }),
        cell({ lastUp: { ...lastUp, result: "retry" }, lastError }),
        cell({ lastUp: { ...lastUp, at: "2026-11-23T18:00:00.000Z" }, lastError }),
      ],
      [
        "2026-11-23T18:01:06Z (before the last ok run) pulumi up of stack service.a.b failed: error: 503 boom",
        "2026-11-23T18:01:06Z pulumi up of stack service.a.b failed: error: 503 boom",
        "2026-11-23T18:01:06Z pulumi up of stack service.a.b failed: error: 503 boom",
      ],
    );
  });

  it("no stacks: the header alone", () => {
    assert.deepEqual(formatStatusTable([]), [
      "STACK  SERVICE  LAST UP  RESULT  DURATION  INGRESS  DRIFT CORRECTED  LAST ERROR",
    ]);
  });

  it("a long error is cut to 200 characters in the table", () => {
    const [, line] = formatStatusTable([
      row("service.a.b", { lastError: { at: "2026-11-23T18:00:00.000Z", message: "e".repeat(300) } }),
    ]);
    assert.equal(
      line,
      `service.a.b  a/b      -        -       -         -        -                2026-11-23T18:00:00Z ${"e".repeat(199)}…`,
    );
  });

  const errors: [string, string, string][] = [
    [
      "a pulumi CLI failure: what the daemon said and the engine's first error",
      "pulumi up of stack service.default.bad failed: stderr: Command failed with exit code 1: pulumi up --yes --skip-preview --client=127.0.0.1:42675 " +
        "--exec-kind auto.inline --event-log tcp://127.0.0.1:38859 --stack service.default.bad --non-interactive +  gcp:compute:ForwardingRule " +
        "default/bad:forwarding-rule-tcp creating (0s) error: Error creating ForwardingRule: googleapi: Error 400: refused, invalid +  " +
        "gcp:compute:ForwardingRule default/bad:forwarding-rule-tcp **creating failed** error: Error creating ForwardingRule: googleapi: Error 400: refused, invalid +  " +
        "pulumi:pulumi:Stack dccm-e2e0cafe-service.default.bad creating (2s) error: update failed",
      "pulumi up of stack service.default.bad failed: Error creating ForwardingRule: googleapi: Error 400: refused, invalid",
    ],
    [
      "a CLI failure without stderr",
      "pulumi destroy of stack s failed: Command failed with exit code 255: pulumi destroy --yes error: the stack is locked",
      "pulumi destroy of stack s failed: the stack is locked",
    ],
    [
      "a CLI failure naming no error: as it is",
      "pulumi up of stack s failed: Command failed with exit code 1: pulumi up --yes",
      "pulumi up of stack s failed: Command failed with exit code 1: pulumi up --yes",
    ],
    [
      "any other message: as it is",
      "the Service is invalid: spec.ports[0].protocol: SCTP is not supported",
      "the Service is invalid: spec.ports[0].protocol: SCTP is not supported",
    ],
  ];
  for (const [name, message, expected] of errors) {
    it(`tableError: ${name}`, () => assert.equal(tableError(message), expected));
  }

  const titles: [string, Parameters<typeof statusTitle>[0], string][] = [
    [
      "a synced leader",
      { source: "daemon", url: "http://127.0.0.1:10258", leader: true, synced: true, stacks: [] },
      "daemon http://127.0.0.1:10258: leader, initial lists synced",
    ],
    [
      "a leader still listing",
      { source: "daemon", url: "http://h:1", leader: true, synced: false, stacks: [] },
      "daemon http://h:1: leader, initial lists not synced yet",
    ],
    [
      "a standby",
      { source: "daemon", url: "http://h:1", leader: false, synced: false, stacks: [] },
      "daemon http://h:1: standby (the leader's /status has the rows)",
    ],
    [
      "the backend",
      { source: "backend", backend: "gs://bucket/dccm", project: "dccm-c0ffee", stacks: [row("cluster")] },
      "backend gs://bucket/dccm, project dccm-c0ffee: 1 stacks (recorded ingress only; the daemon knows the rest)",
    ],
  ];
  for (const [name, report, expected] of titles) {
    it(`title: ${name}`, () => assert.equal(statusTitle(report), expected));
  }

  const urls: [string, string][] = [
    ["file:///var/lib/dccm/backend", "file:///var/lib/dccm/backend"],
    ["gs://bucket/prefix", "gs://bucket/prefix"],
    ["https://user:secret@api.example.com/x?token=abc", "https://api.example.com/x"],
    ["not a url", "not a url://…"],
  ];
  for (const [url, expected] of urls) {
    it(`printableUrl(${url})`, () => assert.equal(printableUrl(url), expected));
  }
});

function dccm(...args: string[]): CliRun {
  // The backend comes from the config file alone.
  return runDccm(args, { unset: ["PULUMI_BACKEND_URL"] });
}

/** A port nothing listens on (bound, then closed). */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A checkpoint file as the pulumi CLI writes it (version 3), with the root stack's outputs. */
function checkpoint(stack: string, outputs: Record<string, unknown> | undefined): string {
  const latest =
    outputs === undefined
      ? undefined
      : {
          manifest: {},
          resources: [
            {
              urn: `urn:pulumi:${stack}::dccm-c0ffee::pulumi:pulumi:Stack::dccm-c0ffee-${stack}`,
              type: "pulumi:pulumi:Stack",
              outputs,
            },
          ],
        };
  return JSON.stringify({
    version: 3,
    checkpoint: { stack: `organization/dccm-c0ffee/${stack}`, ...(latest === undefined ? {} : { latest }) },
  });
}

describe("dccm status: the command", function () {
  this.timeout(60_000);
  let dir: string;
  let configPath: string;
  let url: string;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-status-test-"));
    configPath = path.join(dir, "dccm.yaml");
    fs.writeFileSync(configPath, `clusterId: c0ffee\nstateDir: ${dir}/state\n`);
    url = `http://127.0.0.1:${await closedPort()}`;
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("--help prints STATUS_HELP, exit 0", () => {
    assert.deepEqual(dccm("status", "--help"), { status: 0, stdout: `${STATUS_HELP}\n`, stderr: "" });
  });

  it("an unknown flag: exit 2, one line, then where the status usage is", () => {
    const run = dccm("status", "--nope");
    assert.deepEqual(run, {
      status: 2,
      stdout: "",
      stderr: "dccm: unknown flag --nope\nsee dccm status --help\n",
    });
  });

  it("no daemon and an empty backend: both named on stderr, exit 1", () => {
    const run = dccm("status", "--url", url, "--config", configPath);
    assert.deepEqual(run, {
      status: 1,
      stdout: "",
      stderr:
        `dccm status: the daemon at ${url} cannot be reached (fetch failed: connect ECONNREFUSED 127.0.0.1:${url.split(":")[2]}); reading the backend instead\n` +
        `dccm status: the backend file://${dir}/state/backend has no stack of project dccm-c0ffee (check --backend-url, --state-dir and clusterId)\n`,
    });
  });

  it("no daemon: the backend's stacks with their recorded ingress, everything else -, exit 0", () => {
    const stacks = path.join(dir, "state", "backend", ".pulumi", "stacks", "dccm-c0ffee");
    fs.mkdirSync(stacks, { recursive: true });
    fs.writeFileSync(path.join(dir, "state", "backend", ".pulumi", "meta.yaml"), "version: 1\n");
    fs.writeFileSync(
      path.join(stacks, "cluster.json"),
      checkpoint("cluster", { instanceGroups: {}, routes: {}, loadBalancers: {} }),
    );
    fs.writeFileSync(
      path.join(stacks, "service.default.web.json"),
      checkpoint("service.default.web", {
        loadBalancers: { "default/web": { ingress: ["203.0.113.7"], resources: {} } },
      }),
    );
    fs.writeFileSync(path.join(stacks, "service.default.new.json"), checkpoint("service.default.new", undefined));
    const run = dccm("status", "--url", url, "--config", configPath);
    assert.deepEqual(run, {
      status: 0,
      stdout: [
        `backend file://${dir}/state/backend, project dccm-c0ffee: 3 stacks (recorded ingress only; the daemon knows the rest)`,
        "STACK                SERVICE      LAST UP  RESULT  DURATION  INGRESS      DRIFT CORRECTED  LAST ERROR",
        "cluster              -            -        -       -         -            -                -",
        "service.default.new  default/new  -        -       -         -            -                -",
        "service.default.web  default/web  -        -       -         203.0.113.7  -                -",
        "",
      ].join("\n"),
      stderr: `dccm status: the daemon at ${url} cannot be reached (fetch failed: connect ECONNREFUSED 127.0.0.1:${url.split(":")[2]}); reading the backend instead\n`,
    });
    const json = dccm("status", "--url", url, "--config", configPath, "--json");
    assert.equal(json.status, 0);
    assert.deepEqual(JSON.parse(json.stdout), {
      source: "backend",
      backend: `file://${dir}/state/backend`,
      project: "dccm-c0ffee",
      stacks: [row("cluster"), row("service.default.new"), row("service.default.web", { ingress: ["203.0.113.7"] })],
    });
  });
});
