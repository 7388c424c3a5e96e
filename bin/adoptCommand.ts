/**
 * `dccm adopt`: brings the stock GCE CCM's load balancers and routes into dccm's stacks with no new
 * IP (adopt/). `--dry-run` shows per Service what would be promoted, imported, updated field by
 * field, replaced and created, reading the daemon's stacks read-only (and previewing the stacks the
 * backend lacks in an empty one of its own); `--to backend-service --service NS/NAME`
 * moves one adopted target-pool Service to a backend service (the daemon applies it).
 */
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as k8s from "@kubernetes/client-node";
import { adoptStock, type AdoptionReport } from "../adopt/adopter";
import { formatAdoption } from "../adopt/report";
import { regionalResourceId } from "../gce/ids";
import { isRecord } from "../runtime/guards";
import { encryptionProblem } from "../daemon/config";
import { readClusterUid } from "../watcher/identity";
import { ConfigMapLedger, listServiceClasses } from "../leaks/ledger";
import { ServiceWriter } from "../controllers/service/services";
import { StackRunner } from "../stacks/runner";
import { clusterProjectName } from "../stacks/project";
import { localBackendUrl } from "../stacks/backend";
import { ANNOTATION_BACKEND, loadBalancerName, type Config } from "../model";
import { COMPUTE_SCOPE, ComputeClient } from "../gce";
import { listCluster, readClusterId } from "../watcher/list";
import {
  clusterConfig,
  commandHelp,
  computeEndpointOf,
  configFlag,
  describeFailure,
  GCP_FLAGS_NOTE,
  parseCommand,
  READER_FLAGS,
  readReaderFlags,
  stringFlag,
  UsageError,
  type HelpEntry,
  kubeConfigOf,
} from "./options";

/** adopt's own flags and the shared ones, in help order. */
const ADOPT_FLAGS: readonly HelpEntry[] = [
  { name: "dry-run", help: "print what would be promoted, imported, updated (field by field), replaced," },
  "                                       created and left; change nothing in GCE, the cluster or the backend",
  { name: "allow-replace", help: "adopt even stacks whose first up would replace a resource" },
  {
    name: "to",
    value: "backend-service",
    help: "move one adopted target-pool Service (--service) to a backend service",
  },
  { name: "service", value: "NAMESPACE/NAME", help: "the Service --to moves" },
  READER_FLAGS.kubeconfig,
  configFlag(["GCP keys", "stateDir", "backendUrl", "secretsProvider", "computeEndpoint"]),
  READER_FLAGS.stateDir,
  READER_FLAGS.backendUrl,
  READER_FLAGS.secretsProvider,
  READER_FLAGS.computeEndpoint,
];

export const ADOPT_HELP = commandHelp(
  [
    "usage: dccm adopt [--kubeconfig FILE] [--config FILE] [--dry-run] [--allow-replace] [FLAG ...]",
    "       dccm adopt --to backend-service --service NAMESPACE/NAME [--kubeconfig FILE] [--config FILE] [FLAG ...]",
    "adopts the stock GCE CCM's load balancers and routes into dccm's stacks, keeping every IP: each in-use",
    "ephemeral IP is promoted to the static address dccm declares, then each stack's first pulumi up imports",
    "what exists under dccm's names (the stock CCM's) and updates it in place to dccm's shape. Stop the stock",
    "CCM's service and route controllers first. Refuses any stack whose adoption would replace a resource.",
    "exit codes: 0 adopted (or would be, with --dry-run), 1 a stack refused or failed, 2 usage error.",
  ],
  ADOPT_FLAGS,
  [GCP_FLAGS_NOTE],
);

interface AdoptFlags {
  dryRun: boolean;
  allowReplace: boolean;
  to?: "backend-service";
  service?: { namespace: string; name: string };
  backendUrl: string;
  secretsProvider?: string;
  computeEndpoint?: string;
}

export async function runAdopt(argv: string[]): Promise<number> {
  const { values } = parseCommand(argv, ADOPT_FLAGS, { gcpFlags: true });
  if (values.help === true) {
    process.stdout.write(`${ADOPT_HELP}\n`);
    return 0;
  }
  const { kubeconfig, shared, backend } = readReaderFlags(values, process.env);
  const computeEndpoint = computeEndpointOf(values, shared);
  const flags = adoptFlags(
    values["dry-run"] === true,
    values["allow-replace"] === true,
    stringFlag(values, "to"),
    stringFlag(values, "service"),
  );
  const where: AdoptFlags = {
    ...flags,
    backendUrl: backend.backendUrl,
    ...(backend.secretsProvider !== undefined ? { secretsProvider: backend.secretsProvider } : {}),
    ...(computeEndpoint !== undefined ? { computeEndpoint } : {}),
  };
  const kubeConfig = kubeConfigOf(kubeconfig);
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  const config = await clusterConfig(shared, () => readClusterId(core));
  process.umask(0o077);
  try {
    if (where.to !== undefined && where.service !== undefined)
      return await moveToBackendService(core, config, where, where.service);
    return await adopt(kubeConfig, core, config, where);
  } catch (error) {
    process.stderr.write(`dccm adopt: ${describeFailure(error)}\n`);
    return 1;
  }
}

function adoptFlags(
  dryRun: boolean,
  allowReplace: boolean,
  to: string | undefined,
  service: string | undefined,
): Pick<AdoptFlags, "dryRun" | "allowReplace" | "to" | "service"> {
  if (to === undefined && service !== undefined)
    throw new UsageError("adopt: --service goes with --to backend-service");
  if (to === undefined) return { dryRun, allowReplace };
  if (to !== "backend-service") throw new UsageError(`adopt: --to "${to}" is not backend-service`);
  if (dryRun || allowReplace)
    throw new UsageError("adopt: --to backend-service takes neither --dry-run nor --allow-replace");
  const match =
    service === undefined ? null : /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)\/([a-z0-9]([-a-z0-9]*[a-z0-9])?)$/.exec(service);
  if (match === null) throw new UsageError("adopt: --to backend-service needs --service NAMESPACE/NAME");
  return { dryRun, allowReplace, to, service: { namespace: match[1], name: match[3] } };
}

function computeClient(where: AdoptFlags): ComputeClient {
  return new ComputeClient({
    ...(where.computeEndpoint !== undefined ? { endpoint: where.computeEndpoint } : {}),
    scopes: [COMPUTE_SCOPE],
  });
}

async function adopt(
  kubeConfig: k8s.KubeConfig,
  core: k8s.CoreV1Api,
  config: Config,
  where: AdoptFlags,
): Promise<number> {
  const clusterUid = await readClusterUid(kubeConfig);
  // Stacks under a clusterId other than the cluster's would be a second set of load balancers.
  await new ConfigMapLedger(core, config.clusterId).verifyClusterId(
    config.loadBalancerClasses,
    clusterUid,
    listServiceClasses(core),
  );
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-adopt-"));
  try {
    const projectName = clusterProjectName(config.clusterId);
    // Both runs read the real stacks (a dry run decrypts them to preview them).
    const noEncryption = encryptionProblem({ secretsProvider: where.secretsProvider }, process.env);
    if (noEncryption !== undefined) throw new Error(noEncryption);
    const runner = new StackRunner({
      clusterUid,
      backendUrl: where.backendUrl,
      ...(where.secretsProvider !== undefined ? { secretsProvider: where.secretsProvider } : {}),
      env: {},
      workDir: path.join(workDir, "workspaces"),
      projectName,
      readOnly: where.dryRun,
    });
    // A dry run previews the stacks the backend lacks in an empty backend of its own (selecting them in the real one would create them).
    const newStacks = where.dryRun ? emptyBackendRunner(workDir, projectName, clusterUid) : undefined;
    const { snapshot } = await listCluster(kubeConfig);
    const report: AdoptionReport = await adoptStock(
      {
        compute: computeClient(where),
        runner,
        ...(newStacks !== undefined ? { newStacks } : {}),
        ...(where.dryRun ? {} : { services: new ServiceWriter(core) }),
        config,
        log: (line) => process.stderr.write(`dccm adopt: ${line}\n`),
      },
      snapshot,
      { dryRun: where.dryRun, allowReplace: where.allowReplace },
    );
    process.stdout.write(formatAdoption(report, where.dryRun));
    return report.stacks.some((stack) => stack.refused !== undefined) ? 1 : 0;
  } finally {
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}

function emptyBackendRunner(workDir: string, projectName: string, clusterUid: string): StackRunner {
  fs.mkdirSync(path.join(workDir, "empty-backend"), { recursive: true });
  return new StackRunner({
    clusterUid,
    backendUrl: localBackendUrl(path.join(workDir, "empty-backend")),
    secretsProvider: "passphrase",
    // Nothing is encrypted there that anyone reads again: a throwaway passphrase.
    env: { PULUMI_CONFIG_PASSPHRASE: crypto.randomBytes(16).toString("hex") },
    workDir: path.join(workDir, "new-workspaces"),
    projectName,
  });
}

/**
 * The move of one Service from its target pool to a backend service: its forwarding rule must be
 * recreated (a rule's target pool cannot become a backend service in place). A Service that
 * reserves `<lb>` for life (addressReservation `always`, or TCP and UDP sharing its IP) must hold its
 * IP as that static address first (the one adoption promoted), or as the user's loadBalancerIP;
 * under `transient` the daemon reserves the rule's IP for the run that recreates it
 * (controllers/service/addressPins.ts). The annotation is what the daemon then applies, this Service alone.
 */
async function moveToBackendService(
  core: k8s.CoreV1Api,
  config: Config,
  where: AdoptFlags,
  ref: { namespace: string; name: string },
): Promise<number> {
  const key = `${ref.namespace}/${ref.name}`;
  const service = await core.readNamespacedService(ref).catch((error: unknown) => {
    throw new Error(`reading Service ${key}`, { cause: error });
  });
  const uid = service.metadata?.uid ?? "";
  const lb = loadBalancerName(uid);
  // Two reads of the Service's own resources, not a listing of every collection.
  const compute = computeClient(where);
  const regional = (collection: string): string => regionalResourceId(config.project, config.region, collection, lb);
  const field = (resource: unknown, name: string): unknown => (isRecord(resource) ? resource[name] : undefined);
  const ip = field(await compute.getResource("forwardingRules.get", regional("forwardingRules")), "IPAddress");
  const address = await compute.getResource("addresses.get", regional("addresses"));
  const protocols = new Set((service.spec?.ports ?? []).map((port) => port.protocol ?? "TCP"));
  const reservesForLife = config.addressReservation === "always" || protocols.size > 1;
  if (
    reservesForLife &&
    service.spec?.loadBalancerIP === undefined &&
    (address === undefined || field(address, "address") !== ip)
  ) {
    process.stderr.write(
      `dccm adopt: Service ${key}: its IP ${String(ip)} is not a static address ${lb} yet; run dccm adopt first, or the move would change the IP\n`,
    );
    return 1;
  }
  if (service.metadata?.annotations?.[ANNOTATION_BACKEND] === "backend-service") {
    process.stdout.write(`Service ${key} is already on a backend service\n`);
    return 0;
  }
  await new ServiceWriter(core).setAnnotation(ref.namespace, ref.name, ANNOTATION_BACKEND, "backend-service");
  process.stdout.write(
    `Service ${key}: annotated ${ANNOTATION_BACKEND}: backend-service; dccm daemon recreates its forwarding rule on ${String(ip)} and deletes its target pool\n`,
  );
  return 0;
}
