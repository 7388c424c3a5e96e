/**
 * `dccm status`: one row per stack, from the daemon's `/status` (what it learned while running:
 * last up, ingress, drift correction, error) or, when the daemon cannot be reached, from the
 * backend (the stacks and the ingress they record; nothing else is known there).
 */
import * as path from "node:path";
import { parseArgs } from "node:util";
import * as k8s from "@kubernetes/client-node";
import { describeError } from "../runtime/errors";
import { DAEMON_DEFAULTS, splitConfig } from "../daemon/config";

import { compareStacks, emptyRow, parseStatusDocument, type StatusDocument, type StatusRow } from "../controllers/status";
import { localBackendUrl } from "../stacks/runner";
import { clusterProjectName } from "../stacks/project";
import { recordedService, stackOutputs } from "../stacks/deployment";
import { readEveryStack } from "../stacks/reader";
import { loadKubeConfig, readClusterId } from "../watcher/list";
import { configFromFlags, parseFlags, UsageError } from "./options";
import { ingressOf } from "../components/outputs";

export const DEFAULT_STATUS_URL = "http://127.0.0.1:10258";
/** How long the daemon may take to answer before the backend is read instead. */
const DAEMON_TIMEOUT_MS = 5000;
/** Longer error messages are cut in the table (--json has them whole). */
const TABLE_MESSAGE_CHARS = 200;

export const STATUS_HELP = [
  "usage: dccm status [--url URL] [--kubeconfig FILE] [--config FILE] [--backend-url URL] [--json]",
  "prints one row per stack (the cluster stack first, then the Services by namespace and name): last up",
  "(start, operation, result, duration), ingress, last drift correction and last error, from the daemon's",
  "/status; when the daemon cannot be reached, the stacks and their recorded ingress from the backend.",
  `  --url URL                            the daemon's listener (default ${DEFAULT_STATUS_URL})`,
  "  --json                               print JSON instead of the table",
  "  for the backend, when the daemon cannot be reached:",
  "  --config FILE                        the config file of dccm daemon (clusterId, stateDir, backendUrl)",
  "  --kubeconfig FILE                    the cluster, read only for clusterId when the config has none (default: $KUBECONFIG, else ~/.kube/config)",
  `  --state-dir DIR                      [stateDir] where the daemon's default backend is (default ${DAEMON_DEFAULTS.stateDir})`,
  "  --backend-url URL                    [backendUrl] the daemon's Pulumi backend (default $PULUMI_BACKEND_URL, else file://<state-dir>/backend)",
  "  --clusterId ID                       [clusterId] instead of the config file's",
  "  -h, --help                           print this help",
  "exit 0: the rows were printed (from the daemon or the backend); 1: neither could be read; 2: usage.",
].join("\n");

/** What `dccm status --json` prints. */
export type StatusReport = ({ source: "daemon"; url: string } & StatusDocument) | { source: "backend"; backend: string; project: string; stacks: StatusRow[] };

/** `2026-11-23T18:01:02.345Z` → `2026-11-23T18:01:02Z`: a table needs no milliseconds. */
function seconds(iso: string): string {
  return iso.replace(/\.\d+Z$/, "Z");
}

function oneLine(text: string, limit: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > limit ? `${line.slice(0, limit - 1)}…` : line;
}

/**
 * A failed pulumi CLI run reads, through describeError, as the CLI's command line followed by every
 * progress line that says "error": the table keeps what the daemon said and the engine's first
 * error (`pulumi up of stack … failed: Error creating ForwardingRule: googleapi: Error 400: …`).
 * Any other message is kept as it is; --json has every message whole.
 */
export function tableError(message: string): string {
  const cli = /^(.*?)(?::\s*stderr:)?:?\s*Command failed with exit code \d+: pulumi /s.exec(message);
  if (cli === null) return message;
  const engine = /\berror: (.+?)(?=\s+\+\s|\s+error:|$)/s.exec(message.slice(cli[0].length));
  return engine === null ? message : `${cli[1]}: ${engine[1]}`;
}

const COLUMNS = ["STACK", "SERVICE", "LAST UP", "RESULT", "DURATION", "INGRESS", "DRIFT CORRECTED", "LAST ERROR"] as const;

/** Pure: one row's cells, `-` for what is not known. */
export function statusCells(row: StatusRow): string[] {
  const up = row.lastUp;
  return [
    row.stack,
    row.service ?? "-",
    up === null ? "-" : `${seconds(up.at)} ${up.operation}`,
    up === null ? "-" : up.result,
    up === null ? "-" : `${(up.durationMs / 1000).toFixed(1)}s`,
    row.ingress === null || row.ingress.length === 0 ? "-" : row.ingress.join(","),
    row.lastDriftCorrection === null ? "-" : `${seconds(row.lastDriftCorrection.at)} ${oneLine(row.lastDriftCorrection.putBack, TABLE_MESSAGE_CHARS)}`,
    row.lastError === null ? "-" : `${seconds(row.lastError.at)} ${oneLine(tableError(row.lastError.message), TABLE_MESSAGE_CHARS)}`,
  ];
}

/** Pure: the table's lines, the header first; columns padded to their widest cell, the last one not. */
export function formatStatusTable(rows: readonly StatusRow[]): string[] {
  const cells = [[...COLUMNS], ...[...rows].sort((a, b) => compareStacks(a.stack, b.stack)).map(statusCells)];
  const widths = COLUMNS.map((_, column) => Math.max(...cells.map((line) => line[column].length)));
  return cells.map((line) =>
    line
      .map((cell, column) => (column === line.length - 1 ? cell : cell.padEnd(widths[column])))
      .join("  ")
      .trimEnd(),
  );
}

/** Pure: the line above the table. */
export function statusTitle(report: StatusReport): string {
  if (report.source === "backend") return `backend ${report.backend}, project ${report.project}: ${report.stacks.length} stacks (recorded ingress only; the daemon knows the rest)`;
  const role = report.leader ? (report.synced ? "leader, initial lists synced" : "leader, initial lists not synced yet") : "standby (the leader's /status has the rows)";
  return `daemon ${report.url}: ${role}`;
}

/** A URL for printing: no user, password or query (a backend URL may carry credentials there). */
export function printableUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = "";
    parsed.password = "";
    parsed.search = "";
    return parsed.toString();
  } catch {
    return `${url.split(":")[0]}://…`;
  }
}

interface StatusArgs {
  url: string;
  json: boolean;
  kubeconfig: string | undefined;
  config: string | undefined;
  stateDir: string | undefined;
  backendUrl: string | undefined;
  clusterId: string | undefined;
}

function parseStatusArgs(argv: string[]): StatusArgs | "help" {
  const { values } = parseFlags(() =>
    parseArgs({
      args: argv,
      options: {
        help: { type: "boolean", short: "h" },
        url: { type: "string" },
        json: { type: "boolean" },
        kubeconfig: { type: "string" },
        config: { type: "string" },
        "state-dir": { type: "string" },
        "backend-url": { type: "string" },
        clusterId: { type: "string" },
      },
      strict: true,
      allowPositionals: false,
    }),
  );
  if (values.help === true) return "help";
  return {
    url: (values.url ?? DEFAULT_STATUS_URL).replace(/\/+$/, ""),
    json: values.json === true,
    kubeconfig: values.kubeconfig,
    config: values.config,
    stateDir: values["state-dir"],
    backendUrl: values["backend-url"],
    clusterId: values.clusterId,
  };
}

/** The daemon's /status, or why it could not be read. */
async function readDaemon(url: string): Promise<StatusDocument | { failed: string }> {
  let response: Response;
  try {
    response = await fetch(`${url}/status`, { signal: AbortSignal.timeout(DAEMON_TIMEOUT_MS) });
  } catch (error) {
    return { failed: describeError(error) };
  }
  if (response.status !== 200) return { failed: `GET /status answered ${response.status}` };
  let body: unknown;
  try {
    body = await response.json();
  } catch (error) {
    return { failed: `GET /status answered no JSON (${describeError(error)})` };
  }
  const parsed = parseStatusDocument(body);
  return typeof parsed === "string" ? { failed: `GET /status answered an unexpected document: ${parsed}` } : parsed;
}

/** Where the daemon keeps its stacks, as `dccm daemon` and `dccm gc` find it. */
async function backendOf(args: StatusArgs): Promise<{ backendUrl: string; project: string }> {
  const shared = splitConfig(configFromFlags({}, args.config));
  const fromFile = (key: "stateDir" | "backendUrl"): string | undefined => {
    const value = shared.daemon[key];
    return value === undefined || value === null ? undefined : String(value);
  };
  let clusterId = args.clusterId ?? (typeof shared.model.clusterId === "string" ? shared.model.clusterId : undefined);
  clusterId ??= await readClusterId(loadKubeConfig(args.kubeconfig).makeApiClient(k8s.CoreV1Api));
  if (clusterId === undefined) throw new Error("no clusterId: in neither --clusterId, the config file nor the cluster's ConfigMap kube-system/ingress-uid");
  const stateDir = args.stateDir ?? fromFile("stateDir") ?? DAEMON_DEFAULTS.stateDir;
  const fromEnv = process.env.PULUMI_BACKEND_URL === "" ? undefined : process.env.PULUMI_BACKEND_URL;
  const backendUrl = args.backendUrl ?? fromFile("backendUrl") ?? fromEnv ?? localBackendUrl(path.join(stateDir, "backend"));
  return { backendUrl, project: clusterProjectName(clusterId) };
}

/**
 * The stacks and their recorded outputs, read only (stacks/reader.ts readEveryStack): a file://
 * backend's checkpoint files, else `pulumi stack export` in a workspace of its own.
 */
async function readBackend(backendUrl: string, project: string): Promise<StatusRow[]> {
  const rows: StatusRow[] = [];
  for (const { stack, deployment } of await readEveryStack({ backendUrl, projectName: project })) {
    // A shortened stack name does not say its Service: the stack does.
    const row = emptyRow(stack, recordedService(stack, deployment));
    const ref = row.service?.split("/");
    if (ref !== undefined && deployment !== undefined) row.ingress = ingressOf(stackOutputs(deployment), ref[0], ref[1]);
    rows.push(row);
  }
  return rows.sort((a, b) => compareStacks(a.stack, b.stack));
}

function print(report: StatusReport, json: boolean): void {
  const lines = json ? [JSON.stringify(report, null, 2)] : [statusTitle(report), ...formatStatusTable(report.stacks)];
  process.stdout.write(`${lines.join("\n")}\n`);
}

/** Usage errors (flags, an unreadable --config) are thrown as UsageError: bin/dccm.ts prints them with STATUS_HELP, exit 2. */
export async function runStatus(argv: string[]): Promise<number> {
  const args = parseStatusArgs(argv);
  if (args === "help") {
    process.stdout.write(`${STATUS_HELP}\n`);
    return 0;
  }
  const daemon = await readDaemon(args.url);
  if (!("failed" in daemon)) {
    print({ source: "daemon", url: args.url, ...daemon, stacks: [...daemon.stacks].sort((a, b) => compareStacks(a.stack, b.stack)) }, args.json);
    return 0;
  }
  process.stderr.write(`dccm status: the daemon at ${args.url} cannot be reached (${daemon.failed}); reading the backend instead\n`);
  try {
    const { backendUrl, project } = await backendOf(args);
    const stacks = await readBackend(backendUrl, project);
    if (stacks.length === 0) {
      process.stderr.write(`dccm status: the backend ${printableUrl(backendUrl)} has no stack of project ${project} (check --backend-url, --state-dir and clusterId)\n`);
      return 1;
    }
    print({ source: "backend", backend: printableUrl(backendUrl), project, stacks }, args.json);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    process.stderr.write(`dccm status: reading the backend failed too: ${describeError(error)}\n`);
    return 1;
  }
}
