/**
 * `dccm status` as an operator runs it, against `dccm daemon` as a process on the offline
 * environment: one healthy LoadBalancer Service and one whose `up` fails for real (GCE refuses its
 * forwarding rule: a fault injected in the emulator), then the same command once the daemon is
 * stopped, which reads the backend instead.
 */
import * as assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as path from "node:path";
import type * as k8s from "@kubernetes/client-node";
import { lbService } from "../support/e2e/cluster";
import { processCluster, type DaemonProcesses } from "../support/e2e/daemon-process";
import type { TestEnv } from "../support/e2e/env";
import { repoRoot } from "../support/tooling/testenv-paths";
import { eventually } from "../support/wait";
import { parseStatusDocument } from "../../controllers/status";

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `dccm status ARGS` with the operator's environment: `env` (the bucket's STORAGE_EMULATOR_HOST, the pulumi CLI's PATH). */
function dccmStatus(env: Record<string, string>, ...args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [path.join(repoRoot(), "dist", "bin", "dccm.js"), "status", ...args],
      { timeout: 120_000, env: { ...process.env, ...env } },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== "number") {
          reject(new Error(`dccm status ${args.join(" ")}`, { cause: error }));
          return;
        }
        resolve({ code: error === null ? 0 : (error.code as number), stdout, stderr });
      },
    );
  });
}

/**
 * The table with what changes from run to run taken out: each ISO time (`2026-11-23T18:01:02Z`)
 * becomes `<time>`, each duration (`12.3s`) `<s>`, and the padding between columns (two spaces or
 * more; no cell holds two spaces in a row) ` | `, since the widths follow the durations.
 */
function normalised(table: string): string[] {
  return table
    .trimEnd()
    .split("\n")
    .map((line) =>
      line
        .replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/g, "<time>")
        .replace(/(^| )\d+\.\ds(?= |$)/g, "$1<s>")
        .replace(/ {2,}/g, " | "),
    );
}

/** The message of the GCE error (400 `invalid`) the emulator answers for the forwarding rule. */
const FAULT = "forwarding rule refused by status.e2e.ts";

describe("dccm status", function () {
  this.timeout(900_000);
  let env: TestEnv;
  let core: k8s.CoreV1Api;
  let daemons: DaemonProcesses;

  before(async () => {
    ({ env, core, daemons } = await processCluster({ backend: "gs" }));
  });
  after(async () => {
    daemons?.killAll();
    await env?.stop();
  });

  it("prints a row per stack from the daemon (a healthy and a failing Service), then from the backend once the daemon is stopped", async () => {
    const daemon = daemons.start();
    await daemons.waitReady(daemon);
    await daemons.waitClusterApplied(daemon);
    const url = `http://127.0.0.1:${await daemon.port}`;

    await core.createNamespacedService({ namespace: "default", body: lbService("web") });
    const ip = await eventually(
      "web's ingress",
      async () =>
        (await core.readNamespacedService({ name: "web", namespace: "default" })).status?.loadBalancer?.ingress?.[0]
          ?.ip,
      240_000,
    );
    // Only now: every forwarding rule created from here on is refused, and web's exists already.
    env.gce.injectFault({ kind: "forwardingRules", operation: "create", status: 400, message: FAULT, count: 1000 });
    await core.createNamespacedService({ namespace: "default", body: lbService("bad") });
    await eventually(
      "bad's up failed and was scheduled for a retry",
      async () => {
        const document = parseStatusDocument(await (await fetch(`${url}/status`)).json());
        if (typeof document === "string") throw new Error(document);
        const bad = document.stacks.find((row) => row.stack === "service.default.bad");
        return bad?.lastUp?.result === "retry" && bad.lastError !== null ? true : undefined;
      },
      240_000,
    );

    const fromDaemon = await dccmStatus(env.pulumiEnv, "--url", url);
    assert.equal(fromDaemon.code, 0, fromDaemon.stderr);
    assert.equal(fromDaemon.stderr, "");
    // The quotas as the daemon read them before the first ups (when, within 30 s of web's, sets the usage).
    const document = parseStatusDocument(await (await fetch(`${url}/status`)).json());
    if (typeof document === "string") throw new Error(document);
    const quotas = document.quotas;
    assert.ok(quotas !== undefined && quotas.readAt !== null, "the daemon read the quotas");
    assert.deepEqual(
      quotas.quotas.map((row) => [row.quota, row.region ?? row.scope, row.limit, row.usage + row.headroom]),
      [
        ["STATIC_ADDRESSES", "us-central1", 1_000_000, 1_000_000],
        ["INTERNAL_ADDRESSES", "us-central1", 1_000_000, 1_000_000],
        ["FORWARDING_RULES", "global", 1_000_000, 1_000_000],
        ["BACKEND_SERVICES", "global", 1_000_000, 1_000_000],
        ["TARGET_POOLS", "global", 1_000_000, 1_000_000],
        ["HEALTH_CHECKS", "global", 1_000_000, 1_000_000],
        ["FIREWALLS", "global", 1_000_000, 1_000_000],
        ["ROUTES", "global", 1_000_000, 1_000_000],
      ],
    );
    assert.deepEqual(normalised(fromDaemon.stdout), [
      `daemon ${url}: leader, initial lists synced`,
      "STACK | SERVICE | LAST UP | RESULT | DURATION | INGRESS | DRIFT CORRECTED | LAST ERROR",
      "cluster | - | <time> up | ok | <s> | - | - | -",
      `service.default.bad | default/bad | <time> up | retry | <s> | - | - | <time> pulumi up of stack service.default.bad failed: Error creating ForwardingRule: googleapi: Error 400: ${FAULT}, invalid`,
      `service.default.web | default/web | <time> up | ok | <s> | ${ip} | - | -`,
      "",
      "GCE quotas read at <time>; held for quota: none",
      "QUOTA | SCOPE | USAGE | LIMIT | HEADROOM",
      ...quotas.quotas.map(
        (row) =>
          `${row.quota} | ${row.region !== undefined ? `region ${row.region}` : row.scope} | ${row.usage} | ${row.limit} | ${row.headroom}`,
      ),
    ]);

    assert.equal(await daemons.stop(daemon), 0);
    const configPath = path.join(env.dir, "config.json");
    const fromBackend = await dccmStatus(env.pulumiEnv, "--url", url, "--config", configPath);
    assert.equal(fromBackend.code, 0, fromBackend.stderr);
    assert.match(
      fromBackend.stderr,
      new RegExp(
        `^dccm status: the daemon at ${url} cannot be reached \\(fetch failed: connect ECONNREFUSED 127\\.0\\.0\\.1:\\d+\\); reading the backend instead\\n$`,
      ),
    );
    assert.deepEqual(normalised(fromBackend.stdout), [
      `backend ${env.backendUrl}, project dccm-e2e0cafe: 3 stacks (recorded ingress only; the daemon knows the rest)`,
      "STACK | SERVICE | LAST UP | RESULT | DURATION | INGRESS | DRIFT CORRECTED | LAST ERROR",
      "cluster | - | - | - | - | - | - | -",
      "service.default.bad | default/bad | - | - | - | - | - | -",
      `service.default.web | default/web | - | - | - | ${ip} | - | -`,
    ]);
  });
});
