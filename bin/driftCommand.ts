/**
 * `dccm drift`: observe-only. Lists GCE as a drift pass does and compares it with what each stack
 * last applied, as the backend records it (drift/report.ts); prints what differs. It changes
 * nothing: no stack is run, refreshed or written (the backend is only read), and every Compute
 * call is a list or a get.
 */
import * as k8s from "@kubernetes/client-node";
import pino from "pino";
import { appliedFromDeployment } from "../drift/applied";
import { listDeclared } from "../drift/scanner";
import { driftExitCode, driftReport, formatDriftReport, type RecordedStack } from "../drift/report";
import { COMPUTE_SCOPE, ComputeClient } from "../gce";
import { CLUSTER_STACK } from "../model";
import { recordedService } from "../stacks/deployment";
import { clusterProjectName } from "../stacks/project";
import { readEveryStack } from "../stacks/reader";
import { readClusterId } from "../watcher/list";
import {
  clusterConfig,
  commandHelp,
  computeEndpointOf,
  CLUSTER_STACKS_COMPUTE_FLAGS,
  describeFailure,
  GCP_FLAGS_NOTE,
  kubeConfigOf,
  parseCommand,
  readReaderFlags,
  UsageError,
  type HelpEntry,
} from "./options";
import { printableUrl } from "./statusCommand";

const DRIFT_FLAGS: readonly HelpEntry[] = [
  { name: "json", help: "print the report as JSON" },
  ...CLUSTER_STACKS_COMPUTE_FLAGS,
];

export const DRIFT_HELP = commandHelp(
  [
    "usage: dccm drift [--json] [--kubeconfig FILE] [--config FILE] [FLAG ...]",
    "lists GCE as the daemon's drift pass does and prints, per stack, each resource that is missing or differs from",
    "what the stack last applied (as its backend records it). Observe-only: it runs, refreshes and writes no stack and",
    "calls no mutating Compute method; the daemon repairs drift on its own pass, or now with dccm refresh NAMESPACE/NAME.",
  ],
  DRIFT_FLAGS,
  [
    GCP_FLAGS_NOTE,
    "exit 0: no drift; 2: drift found; 1: error (the cluster, the backend or Compute could not be read).",
  ],
);

export async function runDrift(argv: string[]): Promise<number> {
  const { values } = parseCommand(argv, DRIFT_FLAGS, { gcpFlags: true });
  if (values.help === true) {
    process.stdout.write(`${DRIFT_HELP}\n`);
    return 0;
  }
  const { kubeconfig, shared, backend } = readReaderFlags(values, process.env);
  const computeEndpoint = computeEndpointOf(values, shared);
  const core = kubeConfigOf(kubeconfig).makeApiClient(k8s.CoreV1Api);
  // A config problem is a usage error (bin/dccm.ts: one line, exit 2), as in dccm gc.
  const config = await clusterConfig(shared, () => readClusterId(core));
  try {
    const project = clusterProjectName(config.clusterId);
    const read = await readEveryStack({ backendUrl: backend.backendUrl, projectName: project });
    if (!read.some(({ stack }) => stack === CLUSTER_STACK)) {
      process.stderr.write(
        `dccm drift: the backend ${printableUrl(backend.backendUrl)} has no stack "${CLUSTER_STACK}" in project ${project}: nothing to compare (check --backend-url, --state-dir and clusterId)\n`,
      );
      return 1;
    }
    const stacks: RecordedStack[] = read.map(({ stack, deployment }) => {
      const ref = recordedService(stack, deployment);
      // A stack never updated holds nothing to compare.
      const resources = deployment === undefined ? [] : appliedFromDeployment(deployment);
      return { stack, ...(ref !== undefined ? { service: `${ref.namespace}/${ref.name}` } : {}), resources };
    });
    const compute = new ComputeClient({
      ...(computeEndpoint !== undefined ? { endpoint: computeEndpoint } : {}),
      scopes: [COMPUTE_SCOPE],
    });
    const applied = stacks.flatMap(({ stack, resources }) =>
      resources === undefined ? [] : [{ stack, resources, generation: 0 }],
    );
    const listed = await listDeclared(
      {
        compute,
        project: config.project,
        networkProject: config.networkProject,
        region: config.region,
        logger: pino({ level: "silent" }),
      },
      applied,
      {},
    );
    const report = driftReport(config.project, stacks, listed);
    process.stdout.write(
      `${values.json === true ? JSON.stringify(report, null, 2) : formatDriftReport(report).join("\n")}\n`,
    );
    return driftExitCode(report);
  } catch (error) {
    if (error instanceof UsageError) throw error;
    process.stderr.write(`dccm drift: ${describeFailure(error)}\n`);
    return 1;
  }
}
