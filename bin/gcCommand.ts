/**
 * `dccm gc`: lists the GCE resources of this cluster that no stack owns, with why each is taken for
 * this cluster's (leaks/classify.ts), and deletes the proven ones an operator confirms.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { readClusterUid } from "../watcher/identity";
import { StackRunner } from "../stacks/runner";
import { clusterProjectName } from "../stacks/project";
import { describeError } from "../runtime/errors";
import { CLUSTER_STACK, type Config } from "../model";
import { COMPUTE_SCOPE, ComputeClient } from "../gce";
import { clusterFacts, detectLeaks } from "../leaks/detector";
import type { Leak } from "../leaks/classify";
import { deleteObserved } from "../gce/listing";
import type { Projects } from "../gce/resources";
import { formatLeaks, formatOutcomes, gcHeader, planGc, type DeleteOutcome, type GcRequest } from "../leaks/gc";
import { ClusterIdRefusedError, ConfigMapLedger, listServiceClasses, type ServiceClasses } from "../leaks/ledger";
import { listCluster, readClusterId } from "../watcher/list";
import {
  clusterConfig,
  commandHelp,
  computeEndpointOf,
  CLUSTER_STACKS_COMPUTE_FLAGS,
  describeFailure,
  GCP_FLAGS_NOTE,
  parseCommand,
  readReaderFlags,
  UsageError,
  type HelpEntry,
  kubeConfigOf,
} from "./options";

/** gc's own flags and the shared ones, in help order. */
const GC_FLAGS: readonly HelpEntry[] = [
  { name: "dry-run", help: "print the leaks, delete nothing" },
  { name: "yes", help: "delete every proven leak" },
  ...CLUSTER_STACKS_COMPUTE_FLAGS,
];

export const GC_HELP = commandHelp(
  [
    "usage: dccm gc [--kubeconfig FILE] [--config FILE] [FLAG ...] --dry-run | --yes | RESOURCE ...",
    "lists the GCE resources of this cluster that no stack owns and says why each is taken for this cluster's;",
    "deletes only proven ones (dccm's ledger in the cluster, or the cluster ID in name and description), and only",
    "those confirmed: --yes for all of them, or each RESOURCE (kind/scope/name, as --dry-run prints it).",
  ],
  GC_FLAGS,
  [GCP_FLAGS_NOTE],
);

export async function runGc(argv: string[]): Promise<number> {
  const { values, positionals } = parseCommand(argv, GC_FLAGS, { gcpFlags: true, positionals: true });
  if (values.help === true) {
    process.stdout.write(`${GC_HELP}\n`);
    return 0;
  }
  const request = gcRequest(values["dry-run"] === true, values.yes === true, positionals);
  const { kubeconfig, shared, backend } = readReaderFlags(values, process.env);
  const computeEndpoint = computeEndpointOf(values, shared);
  const kubeConfig = kubeConfigOf(kubeconfig);
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  const config = await clusterConfig(shared, () => readClusterId(core));

  process.umask(0o077);
  try {
    return await checkAndDelete(kubeConfig, core, config, request, {
      backendUrl: backend.backendUrl,
      computeEndpoint,
      secretsProvider: backend.secretsProvider,
    });
  } catch (error) {
    // The cluster, the backend or Compute failed us (or a stack is another cluster's): say which, no stack trace.
    process.stderr.write(`dccm gc: ${describeFailure(error)}\n`);
    return 1;
  }
}

/** Deletes each leak in turn; one that fails does not stop the others. */
async function deleteLeaks(
  compute: ComputeClient,
  projects: Projects,
  leaks: readonly Leak[],
): Promise<DeleteOutcome[]> {
  const outcomes: DeleteOutcome[] = [];
  for (const leak of leaks) {
    try {
      outcomes.push({ leak, result: await deleteObserved(compute, projects, leak.resource) });
    } catch (error) {
      // GCE refuses what another resource still uses (resourceInUseByAnotherResource): the rest go on.
      outcomes.push({ leak, result: "failed", error: describeError(error) });
    }
  }
  return outcomes;
}

/** False (and why on stderr) when this cluster is managed under another clusterId: then nothing of it is ours to delete. */
async function clusterIdVerified(
  ledger: ConfigMapLedger,
  loadBalancerClasses: readonly string[],
  clusterUid: string,
  services: ServiceClasses,
): Promise<boolean> {
  try {
    await ledger.verifyClusterId(loadBalancerClasses, clusterUid, services);
    return true;
  } catch (error) {
    if (!(error instanceof ClusterIdRefusedError)) throw error;
    process.stderr.write(`dccm gc: nothing listed or deleted: ${error.message}\n`);
    return false;
  }
}

async function checkAndDelete(
  kubeConfig: k8s.KubeConfig,
  core: k8s.CoreV1Api,
  config: Config,
  request: GcRequest,
  where: { backendUrl: string; computeEndpoint: string | undefined; secretsProvider: string | undefined },
): Promise<number> {
  const { backendUrl, computeEndpoint, secretsProvider } = where;
  const clusterUid = await readClusterUid(kubeConfig);
  const ledger = new ConfigMapLedger(core, config.clusterId);
  if (!(await clusterIdVerified(ledger, config.loadBalancerClasses, clusterUid, listServiceClasses(core)))) return 1;
  // Our own workspaces: the daemon's state directory is only ever read (through the backend).
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-gc-"));
  try {
    const runner = new StackRunner({
      clusterUid,
      backendUrl,
      ...(secretsProvider !== undefined ? { secretsProvider } : {}),
      env: {},
      workDir,
      projectName: clusterProjectName(config.clusterId),
    });
    const compute = new ComputeClient({
      ...(computeEndpoint !== undefined ? { endpoint: computeEndpoint } : {}),
      scopes: [COMPUTE_SCOPE],
    });
    const detection = await detectLeaks({
      compute,
      project: config.project,
      networkProject: config.networkProject,
      region: config.region,
      config: {
        clusterId: config.clusterId,
        clusterUid,
        clusterName: config.clusterName,
        configureRoutes: config.configureRoutes,
      },
      clusterUid,
      ledger,
      reader: () => runner.stackReader({ readCheckpoints: false }),
      cluster: async () => clusterFacts((await listCluster(kubeConfig)).snapshot, config.loadBalancerClasses),
    });
    // Without a cluster stack applied by this cluster, the backend is empty, another one, or not
    // yet written: every load balancer would look leaked.
    if (!detection.ownership.stacks.includes(CLUSTER_STACK) || detection.ownership.clusterStackUid !== clusterUid) {
      process.stderr.write(
        `dccm gc: the backend ${backendUrl} has no stack "${CLUSTER_STACK}" of this cluster in project ${clusterProjectName(config.clusterId)} ` +
          `(${detection.ownership.stacks.includes(CLUSTER_STACK) ? "it records no cluster identity yet" : "no such stack"}): ` +
          "without it every resource would look leaked, so nothing is listed or deleted (check --backend-url, --state-dir and clusterId)\n",
      );
      return 1;
    }
    const out = (lines: string[]): void => {
      process.stdout.write(`${lines.join("\n")}\n`);
    };
    out([
      gcHeader({
        clusterId: config.clusterId,
        clusterUid,
        project: config.project,
        stacks: detection.ownership.stacks.length,
        ledgerEntries: detection.ledgerEntries,
      }),
    ]);
    const plan = planGc(detection.leaks, request);
    if (plan.kind === "print") {
      out(formatLeaks(detection.leaks));
      return 0;
    }
    if (plan.kind === "refuse") {
      process.stderr.write(`dccm gc: nothing deleted:\n${plan.problems.map((problem) => `  ${problem}`).join("\n")}\n`);
      return 1;
    }
    const outcomes = await deleteLeaks(compute, config, plan.leaks);
    out(formatOutcomes(outcomes, detection.leaks.filter((leak) => leak.proof === "unproven").length));
    return outcomes.some((outcome) => outcome.result === "failed") ? 1 : 0;
  } finally {
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}

function gcRequest(dryRun: boolean, yes: boolean, ids: readonly string[]): GcRequest {
  const chosen = [dryRun, yes, ids.length > 0].filter(Boolean).length;
  if (chosen === 0) {
    throw new UsageError(
      "gc deletes only what you confirm: --dry-run to see the leaks, then --yes (every proven leak) or the resources by name (dccm gc --help)",
    );
  }
  if (chosen > 1) throw new UsageError("gc: --dry-run, --yes and RESOURCE names exclude each other");
  if (dryRun) return { kind: "dryRun" };
  if (yes) return { kind: "all" };
  for (const id of ids) {
    if (!/^[A-Za-z]+\/[a-z0-9-]+\/[a-z0-9-]+$/.test(id))
      throw new UsageError(`gc: "${id}" is not a resource as --dry-run prints it (kind/scope/name)`);
  }
  return { kind: "named", ids };
}
