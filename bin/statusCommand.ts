/**
 * `dccm status`: one row per stack, from the daemon's `/status` (what it learned while running:
 * last up, ingress, drift correction, error) or, when the daemon cannot be reached, from the
 * backend (the stacks and the ingress they record; nothing else is known there).
 */
import { describeError, pulumiFailure } from "../runtime/errors";

import {
  compareStacks,
  emptyRow,
  parseStatusDocument,
  type QuotaStatus,
  type StatusDocument,
  type StatusRow,
} from "../controllers/status";
import { clusterProjectName } from "../stacks/project";
import { recordedService, stackOutputs } from "../stacks/deployment";
import { readEveryStack } from "../stacks/reader";
import {
  clusterIdFromCluster,
  clusterIdOf,
  commandHelp,
  configFlag,
  describeFailure,
  parseCommand,
  READER_FLAGS,
  readReaderFlags,
  stringFlag,
  UsageError,
  type FlagValues,
  type HelpEntry,
  kubeConfigOf,
} from "./options";
import { ingressOf } from "../components/outputs";

export const DEFAULT_STATUS_URL = "http://127.0.0.1:10258";
/** How long the daemon may take to answer before the backend is read instead. */
const DAEMON_TIMEOUT_MS = 5000;
/** Longer error messages are cut in the table (--json has them whole). */
const TABLE_MESSAGE_CHARS = 200;

/** status's own flags and the shared ones, in help order. */
const STATUS_FLAGS: readonly HelpEntry[] = [
  { name: "url", value: "URL", help: `the daemon's listener (default ${DEFAULT_STATUS_URL})` },
  { name: "json", help: "print JSON instead of the table" },
  "  for the backend, when the daemon cannot be reached:",
  configFlag(["clusterId", "stateDir", "backendUrl"]),
  {
    ...READER_FLAGS.kubeconfig,
    help: "the cluster, read only for clusterId when the config has none (default: $KUBECONFIG, else ~/.kube/config)",
  },
  READER_FLAGS.stateDir,
  READER_FLAGS.backendUrl,
  READER_FLAGS.clusterId,
];

export const STATUS_HELP = commandHelp(
  [
    "usage: dccm status [--url URL] [--kubeconfig FILE] [--config FILE] [--backend-url URL] [--json]",
    "prints one row per stack (the cluster stack first, then the Services by namespace and name): last up",
    "(start, operation, result, duration), ingress, last drift correction and last error, from the daemon's",
    "/status; when the daemon cannot be reached, the stacks and their recorded ingress from the backend.",
  ],
  STATUS_FLAGS,
  ["exit 0: the rows were printed (from the daemon or the backend); 1: neither could be read; 2: usage."],
);

/** What `dccm status --json` prints. */
export type StatusReport =
  | ({ source: "daemon"; url: string } & StatusDocument)
  | { source: "backend"; backend: string; project: string; stacks: StatusRow[] };

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
  const failure = pulumiFailure(message);
  return failure === undefined ? message : `${failure.said}: ${failure.engineError}`;
}

/**
 * The last error stays after a later success (so an operator sees what happened at night); next to
 * an `ok` run that started after it, it is marked as past, not read as the current state.
 */
function staleMark(row: StatusRow): string {
  const up = row.lastUp;
  return up !== null && row.lastError !== null && up.result === "ok" && Date.parse(up.at) > Date.parse(row.lastError.at)
    ? "(before the last ok run) "
    : "";
}

const COLUMNS = [
  "STACK",
  "SERVICE",
  "LAST UP",
  "RESULT",
  "DURATION",
  "INGRESS",
  "DRIFT CORRECTED",
  "LAST ERROR",
] as const;

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
    row.lastDriftCorrection === null
      ? "-"
      : `${seconds(row.lastDriftCorrection.at)} ${oneLine(row.lastDriftCorrection.putBack, TABLE_MESSAGE_CHARS)}`,
    row.lastError === null
      ? "-"
      : `${seconds(row.lastError.at)} ${staleMark(row)}${oneLine(tableError(row.lastError.message), TABLE_MESSAGE_CHARS)}`,
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

const QUOTA_COLUMNS = ["QUOTA", "SCOPE", "USAGE", "LIMIT", "HEADROOM"] as const;

/**
 * Pure: the GCE quotas a load balancer consumes, as the daemon last read them (a blank line, a
 * title, the table), and the Services held for them; nothing without a read.
 */
export function formatQuotaTable(quotas: QuotaStatus | undefined): string[] {
  if (quotas === undefined || quotas.readAt === null) return [];
  const cells = [
    [...QUOTA_COLUMNS],
    ...quotas.quotas.map((row) => [
      row.quota,
      row.region !== undefined ? `region ${row.region}` : row.scope,
      String(row.usage),
      String(row.limit),
      String(row.headroom),
    ]),
  ];
  const widths = QUOTA_COLUMNS.map((_, column) => Math.max(...cells.map((line) => line[column].length)));
  const table = cells.map((line) =>
    line
      .map((cell, column) => (column === line.length - 1 ? cell : cell.padEnd(widths[column])))
      .join("  ")
      .trimEnd(),
  );
  const held = quotas.held.length === 0 ? "none" : quotas.held.join(", ");
  return ["", `GCE quotas read at ${seconds(quotas.readAt)}; held for quota: ${held}`, ...table];
}

/** Pure: the line above the table. */
export function statusTitle(report: StatusReport): string {
  if (report.source === "backend")
    return `backend ${report.backend}, project ${report.project}: ${report.stacks.length} stacks (recorded ingress only; the daemon knows the rest)`;
  const role = report.leader
    ? report.synced
      ? "leader, initial lists synced"
      : "leader, initial lists not synced yet"
    : "standby (the leader's /status has the rows)";
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
  /** The shared flags (--config, --kubeconfig, --state-dir, --backend-url, --clusterId), read only for the backend. */
  values: FlagValues;
}

function parseStatusArgs(argv: string[]): StatusArgs | "help" {
  const { values } = parseCommand(argv, STATUS_FLAGS);
  if (values.help === true) return "help";
  return {
    url: (stringFlag(values, "url") ?? DEFAULT_STATUS_URL).replace(/\/+$/, ""),
    json: values.json === true,
    values,
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
  const { kubeconfig, shared, backend } = readReaderFlags(args.values, process.env);
  const clusterId = await clusterIdOf(shared.model, () => clusterIdFromCluster(kubeConfigOf(kubeconfig)));
  return { backendUrl: backend.backendUrl, project: clusterProjectName(clusterId) };
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
    if (ref !== undefined && deployment !== undefined)
      row.ingress = ingressOf(stackOutputs(deployment), ref[0], ref[1]);
    rows.push(row);
  }
  return rows.sort((a, b) => compareStacks(a.stack, b.stack));
}

function print(report: StatusReport, json: boolean): void {
  const lines = json
    ? [JSON.stringify(report, null, 2)]
    : [
        statusTitle(report),
        ...formatStatusTable(report.stacks),
        ...(report.source === "daemon" ? formatQuotaTable(report.quotas) : []),
      ];
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
    print(
      {
        source: "daemon",
        url: args.url,
        ...daemon,
        stacks: [...daemon.stacks].sort((a, b) => compareStacks(a.stack, b.stack)),
      },
      args.json,
    );
    return 0;
  }
  process.stderr.write(
    `dccm status: the daemon at ${args.url} cannot be reached (${daemon.failed}); reading the backend instead\n`,
  );
  try {
    const { backendUrl, project } = await backendOf(args);
    const stacks = await readBackend(backendUrl, project);
    if (stacks.length === 0) {
      process.stderr.write(
        `dccm status: the backend ${printableUrl(backendUrl)} has no stack of project ${project} (check --backend-url, --state-dir and clusterId)\n`,
      );
      return 1;
    }
    print({ source: "backend", backend: printableUrl(backendUrl), project, stacks }, args.json);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) throw error;
    process.stderr.write(`dccm status: reading the backend failed too: ${describeFailure(error)}\n`);
    return 1;
  }
}
