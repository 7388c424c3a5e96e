/**
 * `dccm preview`: what the daemon would do with the desired state of the live cluster (or of a
 * snapshot), as a plan of the daemon's own stacks: same project `dccm-<clusterId>`, same backend,
 * same stack names, same inline program. Read-only (see READ_ONLY below); the pure part (which
 * stacks change, the plan as text and JSON, the exit code) is preview/plan.ts.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { encryptionProblem } from "../daemon/config";
import { readClusterUid } from "../watcher/identity";
import {
  changesByStack,
  decideStacks,
  desiredStacks,
  engineRuns,
  exitCode,
  formatPlan,
  mapLimit,
  planDocument,
  previewParallelism,
  previewQuotas,
  resourceChange,
  stackPlan,
  type DesiredStacks,
  type EngineRun,
  type RecordedStack,
  type RejectedService,
  type ResourceChange,
  type PreviewQuotas,
  type StackDecision,
  type StackPlan,
} from "../preview/plan";
import { ComputeClient, readProjectQuotas } from "../gce";

import { clusterProjectName } from "../stacks/project";
import { hasPendingCreates, outputsWithHeldAddresses, recordedService } from "../stacks/deployment";
import { checkStackIdentity, recordedClusterUid } from "../stacks/identity";
import { PreviewEngine } from "../stacks/previewRuns";
import {
  CLUSTER_STACK,
  isServiceStack,
  parseServiceStack,
  reservesTransiently,
  serviceKey,
  type Config,
  stackScope,
} from "../model";
import { snapshotFromKubectlJson, type DumpContents } from "../watcher/kubectlDump";
import { listCluster } from "../watcher/list";
import {
  clusterConfig,
  computeEndpointOf,
  clusterIdFromCluster,
  commandHelp,
  configFlag,
  describeFailure,
  GCP_FLAGS_NOTE,
  parseCommand,
  READER_FLAGS,
  readReaderFlags,
  stringFlag,
  type FlagValues,
  type HelpEntry,
  kubeConfigOf,
} from "./options";
import { thisMachine } from "../runtime/parallelism";
import { HASH_OUTPUT, ingressOf, recordedAddress, stackProgramOutputs } from "../components/outputs";
import type { Adoption } from "../components/adoption";
import { publishedIpv4 } from "../controllers/service/addressPins";

/** preview's own flags and the shared ones, in help order. */
const PREVIEW_FLAGS: readonly HelpEntry[] = [
  { ...READER_FLAGS.kubeconfig, help: `${READER_FLAGS.kubeconfig.help}; always read for its identity` },
  configFlag(["GCP keys", "stateDir", "backendUrl", "secretsProvider", "computeEndpoint"]),
  {
    name: "snapshot",
    value: "FILE",
    help: "desired state from `kubectl get nodes,services -A -o json` instead of the live cluster",
  },
  { name: "json", help: "one JSON document (changes, summary, stacks, rejected) instead of the text plan" },
  READER_FLAGS.stateDir,
  READER_FLAGS.backendUrl,
  READER_FLAGS.secretsProvider,
  {
    name: "quotas",
    help: "also read the project's GCE quotas (regions.get, projects.get): their headroom, and the new Services the daemon would hold for quota",
  },
  READER_FLAGS.computeEndpoint,
  {
    name: "parallelism",
    value: "N",
    key: "parallelism",
    help: "engine runs at once (default: half the daemon's, one per two cores, at least 1; each run keeps the pulumi CLI and the provider plugin busy)",
  },
];

export const PREVIEW_HELP = commandHelp(
  [
    "usage: dccm preview [--kubeconfig FILE] [--config FILE] [--snapshot FILE] [--json] [FLAG ...]",
    "shows what dccm daemon would change: the desired state of the cluster (or of --snapshot) against the",
    "daemon's own stacks (project dccm-<clusterId> in its backend). Only stacks whose recorded desired-state",
    "hash differs get a pulumi preview; nothing is written to the backend and no stack lock is taken.",
    "exit codes: 0 nothing would change, 2 something would (or a usage error, with this help on stderr), 1 error.",
  ],
  PREVIEW_FLAGS,
  [GCP_FLAGS_NOTE],
);

/*
 * READ_ONLY. What the pulumi CLI 3.248 does on a diy (file://, gs://, s3://) backend, from its
 * source (pkg/backend/diy/backend.go and lock.go):
 * - `pulumi preview` (diyBackend.Preview) calls apply() with DryRun and no Lock(): unlike Update,
 *   Refresh and Destroy it never writes `.pulumi/locks/…`. DryRun also means no snapshot manager
 *   (no checkpoint written), no addToHistory and no backupStack (no `.pulumi/history` or
 *   `.pulumi/backups` file).
 * - `pulumi destroy --preview-only` (diyBackend.Destroy with PreviewOnly) takes the same
 *   DryRun path before the Lock() of a real destroy.
 * - `pulumi stack select` and `stack export` only read (GetStack, the checkpoint); the backend's
 *   `.pulumi/meta.yaml` is written only when it is missing (ensurePulumiMeta), i.e. for a backend
 *   the daemon never wrote, whose stacks this command then does not find anyway.
 * So a preview neither waits for nor stalls a running `up` of the daemon. What it writes goes to
 * its own temporary workspaces (Pulumi.yaml, the stack's settings file) and to PULUMI_HOME's
 * workspace file, never to the backend. A stack the backend does not have yet is previewed
 * against an empty temporary file:// backend, since selecting it would create it. The checkpoint
 * read may be one an `up` of the daemon is writing at that moment: the plan is then against that
 * state, as any read without a lock is.
 */

interface Where {
  clusterUid: string;
  /** The engine runs and the reader of the daemon's stacks (stacks/previewRuns.ts), in our temporary directory. */
  engine: PreviewEngine;
  /** Engine runs at once. */
  parallelism: number;
}

export async function runPreview(argv: string[]): Promise<number> {
  // A usage error goes to bin/dccm.ts: exit 2 with PREVIEW_HELP, as for every subcommand.
  const flags = parseCommand(argv, PREVIEW_FLAGS, { gcpFlags: true }).values;
  if (flags.help === true) {
    process.stdout.write(`${PREVIEW_HELP}\n`);
    return 0;
  }
  // Our workspaces hold stack settings (salts): the owner's only, as the daemon's.
  process.umask(0o077);
  try {
    const { plans, rejected, quotas } = await preview(flags);
    process.stdout.write(
      flags.json === true
        ? `${JSON.stringify(planDocument(plans, rejected, quotas), null, 2)}\n`
        : formatPlan(plans, rejected, quotas),
    );
    return exitCode(plans);
  } catch (error) {
    // Exit 1 for every failure, bad input included: 2 would read as "something would change".
    process.stderr.write(`dccm preview: ${describeFailure(error)}\n`);
    return 1;
  }
}

/** The snapshot file, or one list of the live cluster. */
function readDump(snapshotPath: string | undefined, kubeConfig: k8s.KubeConfig): Promise<DumpContents> {
  if (snapshotPath === undefined) return listCluster(kubeConfig);
  let text: string;
  try {
    text = fs.readFileSync(snapshotPath, "utf8");
  } catch (error) {
    throw new Error(`--snapshot ${snapshotPath}: ${(error as Error).message}`, { cause: error });
  }
  return Promise.resolve(snapshotFromKubectlJson(text, snapshotPath));
}

async function preview(
  flags: FlagValues,
): Promise<{ plans: StackPlan[]; rejected: RejectedService[]; quotas?: PreviewQuotas }> {
  const { kubeconfig, shared, backend } = readReaderFlags(flags, process.env);
  const { backendUrl, secretsProvider } = backend;
  const noEncryption = encryptionProblem({ secretsProvider }, process.env);
  if (noEncryption !== undefined) throw new Error(`${noEncryption} (the preview decrypts the daemon's stacks)`);
  const parallelism = previewParallelism(stringFlag(flags, "parallelism"), shared.daemon.parallelism, thisMachine());
  const kubeConfig = kubeConfigOf(kubeconfig);
  const dump = await readDump(stringFlag(flags, "snapshot"), kubeConfig);
  // The snapshot's (or the live list's) ConfigMap kube-system/ingress-uid, else the cluster's.
  const config = await clusterConfig(shared, async () => dump.clusterId ?? (await clusterIdFromCluster(kubeConfig)));
  const clusterUid = await readClusterUid(kubeConfig);
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-preview-"));
  try {
    const where: Where = {
      clusterUid,
      engine: await PreviewEngine.open({ backendUrl, projectName: clusterProjectName(config.clusterId), workDir }),
      parallelism,
    };
    const wanted = desiredStacks(dump.snapshot, config);
    const planned = await planStacks(where, config, wanted, dump);
    if (flags.quotas !== true) return planned;
    const computeEndpoint = computeEndpointOf(flags, shared);
    return { ...planned, quotas: await quotasOf(config, computeEndpoint, planned.decisions, wanted) };
  } finally {
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}

/** The quotas as the daemon would read them before each new Service's first up; a failed read is said, never fatal. */
async function quotasOf(
  config: Config,
  computeEndpoint: string | undefined,
  decisions: readonly StackDecision[],
  wanted: DesiredStacks,
): Promise<PreviewQuotas> {
  const compute = new ComputeClient(computeEndpoint !== undefined ? { endpoint: computeEndpoint } : {});
  try {
    return previewQuotas(decisions, wanted.desired, await readProjectQuotas(compute, config.project, config.region));
  } catch (error) {
    return { read: false, error: describeFailure(error) };
  }
}

/** New stacks previewed together in one engine run: its memory (CLI, provider, program) is this many Services' at most. */
export const CREATES_PER_RUN = 25;

async function planStacks(
  where: Where,
  config: Config,
  wanted: DesiredStacks,
  dump: DumpContents,
): Promise<{ plans: StackPlan[]; rejected: RejectedService[]; decisions: StackDecision[] }> {
  const recorded = await readRecorded(where);
  const decisions = decideStacks(wanted, recorded, dump.snapshot.services, config.loadBalancerClasses);
  const changes = new Map<string, ResourceChange[]>();
  const outcomes = await mapLimit(engineRuns(decisions, CREATES_PER_RUN), where.parallelism, (run) =>
    runEngine(where, run, wanted, heldIps(recorded)),
  );
  for (const outcome of outcomes) for (const [stack, list] of outcome) changes.set(stack, list);
  const plans: StackPlan[] = [];
  const rejected: RejectedService[] = [];
  for (const decision of decisions) {
    if (decision.kind === "rejected")
      rejected.push({
        service: decision.service,
        stack: decision.stack,
        messages: decision.messages,
        hasStack: decision.hasStack,
      });
    else plans.push(stackPlan(decision, changes.get(decision.stack) ?? []));
  }
  return { plans, rejected, decisions };
}

/** The recorded hash of every stack of the project; a stack of another cluster stops the preview. */
async function readRecorded(where: Where): Promise<Map<string, RecordedStack>> {
  // The reader lists the checkpoint directory or runs `pulumi stack ls`.
  const reader = where.engine.reader;
  const recorded = new Map<string, RecordedStack>();
  for (const stack of await reader.listStacks()) {
    if (stack !== CLUSTER_STACK && !isServiceStack(stack)) continue;
    const deployment = await readDeployment(where, stack);
    const outputs = deployment === undefined ? {} : outputsWithHeldAddresses(deployment);
    checkStackIdentity(stack, deployment === undefined ? undefined : recordedClusterUid(deployment), where.clusterUid);
    const hash = outputs[HASH_OUTPUT];
    // Pending creates of a killed run: the daemon recovers them and runs `up --refresh`, whatever the hash.
    const pending = hasPendingCreates(deployment);
    // A shortened stack name does not say its Service: the stack does.
    const service =
      stack === CLUSTER_STACK || parseServiceStack(stack) !== undefined
        ? undefined
        : recordedService(stack, deployment);
    const ref = service ?? parseServiceStack(stack);
    recorded.set(stack, {
      hash: typeof hash === "string" && !pending ? hash : undefined,
      ...(service !== undefined ? { service: serviceKey(service.namespace, service.name) } : {}),
      ...(ref !== undefined && recordedAddress(outputs, ref.namespace, ref.name).holdsAddress
        ? { holdsAddress: true as const }
        : {}),
      ...(ref !== undefined ? ipv4Of(outputs, ref) : {}),
    });
  }
  return recorded;
}

/** The pin the daemon's run of a transient Service's stack holds its IP with; none for others. */
function pinned(wanted: DesiredStacks, stack: string, ip: string | undefined): Adoption | undefined {
  const service = wanted.desired.services.find((candidate) => candidate.stack === stack);
  if (ip === undefined || service === undefined || !reservesTransiently(service)) return undefined;
  return { imports: new Set(), addressPins: new Map([[service.key, { ip, reserve: false }]]) };
}

function ipv4Of(outputs: Record<string, unknown>, ref: { namespace: string; name: string }): { ipv4?: string } {
  const ip = publishedIpv4(ingressOf(outputs, ref.namespace, ref.name));
  return ip !== undefined ? { ipv4: ip } : {};
}

/** The stack's deployment: its checkpoint file on a file:// backend when certain, else `pulumi stack export`. */
async function readDeployment(where: Where, stack: string): Promise<Record<string, unknown> | undefined> {
  try {
    return await where.engine.reader.readDeployment(stack);
  } catch (error) {
    throw new Error(`reading stack ${stack} (pulumi stack export)`, { cause: error });
  }
}

/** The program of `stacks` (the daemon's, stacks/runner.ts, each with the hash and identity its next up would record), run as one. */
/**
 * The IPv4 address each Service stack published (its recorded ingress), by stack: a change that
 * replaces a transient Service's forwarding rule runs holding it in the daemon
 * (controllers/service/addressPins.ts), so the preview declares its rules on it too.
 */
function heldIps(recorded: ReadonlyMap<string, RecordedStack>): Map<string, string> {
  const ips = new Map<string, string>();
  for (const [stack, record] of recorded) if (record.ipv4 !== undefined) ips.set(stack, record.ipv4);
  return ips;
}

function program(
  where: Where,
  stacks: readonly string[],
  wanted: DesiredStacks,
  ips: ReadonlyMap<string, string>,
): () => Record<string, unknown> {
  return () => {
    const outputs = stacks.map((stack) =>
      stackProgramOutputs(
        wanted.desired,
        stackScope(stack, wanted.services.get(stack)),
        wanted.hashes.get(stack),
        where.clusterUid,
        pinned(wanted, stack, ips.get(stack)),
      ),
    );
    // One stack's outputs as its up records them; a run of new stacks together records nothing anyone reads.
    return outputs.length === 1 ? outputs[0] : {};
  };
}

/**
 * One engine run (stacks/previewRuns.ts): `pulumi preview` of the daemon's program, `pulumi destroy
 * --preview-only`, or a preview of new stacks together; their changes by stack.
 */
async function runEngine(
  where: Where,
  run: EngineRun,
  wanted: DesiredStacks,
  ips: ReadonlyMap<string, string>,
): Promise<Map<string, ResourceChange[]>> {
  const changes: ResourceChange[] = [];
  const stacks = run.kind === "creates" ? run.stacks : [run.decision.stack];
  const engineRun =
    run.kind === "creates"
      ? { kind: "creates" as const, stacks }
      : { kind: run.decision.kind === "destroy" ? ("destroy" as const) : ("update" as const), stack: stacks[0] };
  await where.engine.run(engineRun, program(where, stacks, wanted, ips), (metadata) => {
    const change = resourceChange(metadata);
    if (change !== undefined) changes.push(change);
  });
  return run.kind === "creates" ? changesByStack(changes) : new Map([[stacks[0], changes]]);
}
