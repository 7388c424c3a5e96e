/**
 * Pulumi stacks through the Automation API: one workspace per stack, reused across runs, each
 * running the same declareStack as index.ts with the desired state captured for that run.
 */
import type { AsyncLocalStorage } from "node:async_hooks";
import * as fs from "node:fs";
import * as path from "node:path";
import {
  ConcurrentUpdateError,
  LocalWorkspace,
  PulumiCommand,
  StackAlreadyExistsError,
  StackNotFoundError,
  type EngineEvent,
  type InlineProgramArgs,
  type LocalWorkspaceOptions,
  type OutputMap,
  type Stack,
  type StepEventMetadata,
  type UpdateSummary,
  type Workspace,
} from "@pulumi/pulumi/automation";
import type { Adoption } from "../components/adoption";
import { gceResourceId } from "../gce/ids";
import { deploymentStates, RunStates, type ResourceState } from "./states";
import { FileBackend } from "./checkpoints";
import { TwoStepInterrupt } from "./interrupt";
import { parseServiceKey, serviceStackName, type DesiredState, nameFromUrn, type Scope } from "../model";
import { isRecord } from "../runtime/guards";
import { SERVICE_KEY_OUTPUT, stackProgramOutputs, CLUSTER_UID_OUTPUT, HASH_OUTPUT, stackSlice, hasProgramOutputs, PROGRAM_OUTPUTS } from "../components/outputs";
import { StackBusyError } from "./errors";

export const PROJECT_NAME = "dccm";

/**
 * The daemon's Pulumi project is per cluster: a daemon pointed at the wrong cluster with a shared
 * backend then sees no stacks of the other cluster, so it can never destroy them as orphans.
 */
export function clusterProjectName(clusterId: string): string {
  return `${PROJECT_NAME}-${clusterId}`;
}

export interface StackRunnerOptions {
  /** PULUMI_BACKEND_URL; `file://<dir>` by default so the daemon needs no account. */
  backendUrl: string;
  /** e.g. `passphrase` (PULUMI_CONFIG_PASSPHRASE) or `gcpkms://…`. */
  secretsProvider?: string;
  /** Extra environment for the pulumi CLI. */
  env: Record<string, string>;
  /** Where workspaces live (one directory per stack). */
  workDir: string;
  /** The pulumi CLI; `pulumi` on PATH when absent. */
  pulumiCommand?: PulumiCommand;
  /** Pulumi project of the stacks; `dccm` when absent. */
  projectName?: string;
  /** Told when pending creates of a killed run were adopted into a stack. */
  onAdopted?: (stack: string, urns: string[]) => void;
  /**
   * Identity of the cluster (UID of its kube-system Namespace), recorded by every run as the output
   * `dccmClusterUid`: a copied config file cannot fake it, so a daemon pointed at another cluster
   * can tell the stacks are not its own.
   */
  clusterUid?: string;
  /**
   * Read a file:// backend's checkpoints directly instead of through `pulumi stack ls` / `stack
   * export` (stacks/checkpoints.ts). Default true; false: always through the CLI.
   */
  readCheckpoints?: boolean;
  /**
   * How long a cancelled run (deadline or shutdown) may take to end cleanly before the CLI is
   * interrupted again, which terminates it (stacks/interrupt.ts). Default 20 s: within the daemon's
   * shutdown timeout (30 s), so a stopping daemon still sees its CLI unlock.
   */
  terminateAfterMs?: number;
  /** Told when a cancelled run did not end within terminateAfterMs and is terminated. */
  onTerminate?: (stack: string, operation: "up" | "preview" | "destroy", afterMs: number) => void;
  /** Told when a successful up recorded no stack outputs and is run once more. */
  onOutputsMissing?: (stack: string) => void;
  /** Told when a checkpoint (or `*`: the stack list) could not be read with certainty and the CLI reads it. */
  onCheckpointUnsure?: (stack: string, reason: string) => void;
  /**
   * Told what the stack holds of GCE as last applied (drift/applied.ts): when the stack is first
   * read, after each successful up, and `undefined` (unknown) after a failed or cancelled one.
   */
  onApplied?: (stack: string, states: ResourceState[] | undefined) => void;
  /** Told of a run's late SDK error that arrived after every run had ended (isLateEngineError), instead of ending the process. */
  onLateRunError?: (error: unknown) => void;
  /**
   * Reads the backend's stacks and writes nothing to it (`dccm adopt --dry-run`): a stack is only
   * ever selected, never created; a killed run's pending creates count as held but are not
   * imported back; up, destroy and removeStack refuse. Previews stay read-only on their own
   * (bin/previewCommand.ts READ_ONLY).
   */
  readOnly?: boolean;
}

export interface PutBack {
  urn: string;
  type: string;
  name: string;
  op: string;
}

export interface UpOutcome {
  outputs: Record<string, unknown>;
  /** Resources the run changed (create/update/replace/delete), from engine events. */
  changed: PutBack[];
}

const CHANGING_OPS = new Set(["create", "update", "replace", "delete", "create-replacement", "delete-replaced"]);

interface Entry {
  stack: Stack;
  /** The desired state the next run of this stack's program declares. */
  desired?: DesiredState;
  /** Recorded as the stack output `dccmDesiredHash`, so a restarted daemon can skip unchanged stacks. */
  hash?: string;
  /** Existing GCE resources the next run imports (components/adoption.ts); cleared after it. */
  adoption?: Adoption;
  /** The Pulumi SDK's store of the program run in progress, emptied when the run ends (releaseRunStore). */
  runStore?: Record<string, unknown>;
  /** Pending creates left by a killed run were adopted; the next up must refresh. */
  needsRefresh: boolean;
  /**
   * The last run failed: it may have ended with creates whose outcome the engine never learned (a
   * run terminated at its deadline, stacks/interrupt.ts), recorded as pending. The next up adopts
   * them first, as after a kill: the engine would otherwise drop them and create again, which GCE
   * refuses (409) when the operation completed after all.
   */
  mayHavePending: boolean;
}

export const DEFAULT_TERMINATE_AFTER_MS = 20_000;

export interface Inspection {
  /** The desired-state hash the last successful up applied, if any. */
  hash: string | undefined;
  outputs: Record<string, unknown>;
  /** URNs of pending creates of a killed run, adopted into the state. */
  adopted: string[];
  /** The cluster identity the last successful up recorded (absent: never applied, or an older dccm). */
  clusterUid: string | undefined;
}

const SERVICE_COMPONENT = "dccm:gcp:ServiceLoadBalancer";

/**
 * Pure: the Service a Service stack was made for, from what it records: the output
 * `dccmServiceKey` (a stack with a shortened name, since its first up), else the name of its
 * ServiceLoadBalancer component (`<namespace>/<name>`) or of a pending create's resource
 * (`<namespace>/<name>:<role>`), for a stack whose first up failed or was killed. Only a key whose
 * stack name is `stack` counts. Undefined for a stack that records none of these: it holds no
 * resource either.
 */
export function recordedService(stack: string, deployment: Record<string, unknown> | undefined): { namespace: string; name: string } | undefined {
  if (deployment === undefined) return undefined;
  const candidates: string[] = [];
  const key = stackOutputs(deployment)[SERVICE_KEY_OUTPUT];
  if (typeof key === "string") candidates.push(key);
  const resources = Array.isArray(deployment.resources) ? deployment.resources : [];
  for (const resource of resources) if (isRecord(resource) && resource.type === SERVICE_COMPONENT && typeof resource.urn === "string") candidates.push(nameFromUrn(resource.urn));
  const operations = Array.isArray(deployment.pending_operations) ? deployment.pending_operations : [];
  for (const operation of operations) {
    const urn = isRecord(operation) && isRecord(operation.resource) ? operation.resource.urn : undefined;
    if (typeof urn === "string") candidates.push(nameFromUrn(urn).split(":")[0]);
  }
  for (const candidate of candidates) {
    const ref = parseServiceKey(candidate);
    if (ref !== undefined && serviceStackName(ref.namespace, ref.name) === stack) return ref;
  }
  return undefined;
}

function plainOutputs(outputs: OutputMap): Record<string, unknown> {
  const plain: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(outputs)) plain[key] = value.value;
  return plain;
}

/** The root stack resource's outputs in an exported deployment. */
export function stackOutputs(deployment: Record<string, unknown>): Record<string, unknown> {
  const resources = Array.isArray(deployment.resources) ? deployment.resources : [];
  const root = resources.find((resource: unknown) => isRecord(resource) && resource.type === "pulumi:pulumi:Stack");
  return isRecord(root) && isRecord(root.outputs) ? root.outputs : {};
}

/** The signature key of a serialized secret in a checkpoint (sdk/go/common/resource/sig: Secret). */
const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";
const SIG_KEY = "4dabf18193072939515e22adc298c6dd";

/** Whether a checkpoint value holds a (ciphertext) secret anywhere. */
export function holdsSecret(value: unknown): boolean {
  if (Array.isArray(value)) return value.some(holdsSecret);
  if (!isRecord(value)) return false;
  if (value[SIG_KEY] === SECRET_SIG) return true;
  return Object.values(value).some(holdsSecret);
}

/**
 * A run killed mid-create leaves "pending creates" in the state: the engine would drop them and
 * create again, which GCE refuses (409) since the names are fixed. Our own state recording the
 * create is the proof the resource is ours, so it is adopted under its derivable ID instead; the
 * refresh that follows reads its real state. Returns the adopted URNs.
 */
export function adoptPendingCreates(deployment: Record<string, unknown>): string[] {
  const operations = Array.isArray(deployment.pending_operations) ? deployment.pending_operations : [];
  const resources = Array.isArray(deployment.resources) ? deployment.resources : [];
  const adopted: string[] = [];
  const remaining = operations.filter((operation: unknown) => {
    if (!isRecord(operation) || operation.type !== "creating" || !isRecord(operation.resource)) return true;
    const resource = operation.resource;
    const inputs = isRecord(resource.inputs) ? resource.inputs : {};
    const id = typeof resource.type === "string" ? gceResourceId(resource.type, inputs) : undefined;
    if (id === undefined || resource.custom !== true) return true;
    resources.push({ ...resource, id, outputs: { ...inputs } });
    adopted.push(String(resource.urn));
    return false;
  });
  deployment.pending_operations = remaining;
  deployment.resources = resources;
  return adopted;
}

/**
 * The Pulumi SDK keeps everything a program run registers (the stack resource, its resources and
 * outputs, the engine clients) in a store of its AsyncLocalStorage, `global.asyncLocalStorage`
 * (@pulumi/pulumi runtime/state.js, withLocalStorage), one store per inline run. Each run's gRPC
 * clients create a `dns.promises.Resolver` (@grpc/grpc-js resolver-dns.js), whose native channel
 * Node keeps for the life of the process along with the async context it was made in, that store:
 * measured, every run kept ~0.2 MB for ever (a daemon running 1,000 drift runs an hour would grow
 * 200 MB an hour). Once a run has succeeded (its program has returned), its store lets go of the
 * stack resource, through which it held every resource and output of the run.
 */
export function currentRunStore(): Record<string, unknown> | undefined {
  const storage = (globalThis as { asyncLocalStorage?: AsyncLocalStorage<unknown> }).asyncLocalStorage;
  const store = storage?.getStore();
  return isRecord(store) ? store : undefined;
}

/**
 * Lets go of what a successful run registered: only its root (the stack resource) and its outputs'
 * promises (the SDK's `leakCandidates` set); the settings (engine and monitor clients) stay, so a
 * late log line of the SDK still finds them (runtime/settings.js getEngine reads them).
 */
export function letGoOfRunStore(store: Record<string, unknown> | undefined): void {
  if (store === undefined) return;
  store.stackResource = undefined;
  if (store.leakCandidates instanceof Set) store.leakCandidates.clear();
}

function releaseRunStore(entry: Entry): void {
  letGoOfRunStore(entry.runStore);
  entry.runStore = undefined;
}

/**
 * After a run: what a run declares is kept only while it runs (an idle stack holds no desired
 * state). A failed or cancelled run's store is left as it is (releaseRunStore is for successful
 * ones): its program may still be running (a killed engine's program never returns) and read it.
 */
function settle(entry: Entry): void {
  entry.desired = undefined;
  entry.adoption = undefined;
  entry.runStore = undefined;
}

const PROCESS_ERROR_EVENTS = ["uncaughtException", "unhandledRejection"] as const;

/**
 * The Automation API's inline-program server adds process-wide `uncaughtException` and
 * `unhandledRejection` listeners for each run and removes them only when the program run returns
 * (@pulumi/pulumi automation/server.js, LanguageServer.run): a run whose engine was cancelled or
 * killed never returns, and each leaves two listeners behind (seen: 31 after ~30 runs). While no
 * run is in flight none of them can be legitimate, so the set in place before the first run is
 * restored then.
 */
type Listener = (...args: unknown[]) => void;
// The plain EventEmitter view: process's typed overloads take one event name at a time.
const processEvents: NodeJS.EventEmitter = process;

/**
 * Pure: whether an unhandled rejection is the Pulumi SDK's own, late: a gRPC call of an inline
 * program to its engine (registerResourceOutputs, …) that failed because that run's engine is
 * gone (a failed, cancelled or killed run ends its CLI while its program still registers). Seen
 * at 500 Services: `14 UNAVAILABLE: Connection dropped` after the run had ended, when no run's
 * listener was left to take it, and Node's default for an unhandled rejection ended the daemon.
 */
export function isLateEngineError(reason: unknown): boolean {
  if (!(reason instanceof Error) || !isRecord(reason)) return false;
  return typeof reason.code === "number" && typeof reason.details === "string" && /[\\/]@pulumi[\\/]pulumi[\\/]runtime[\\/]/.test(reason.stack ?? "");
}

/**
 * One for the process: every StackRunner's runs count together (with a guard per runner, one
 * runner going idle would drop the listeners of another's run in flight, and its late-error
 * listener would take the other's rejections as its own).
 */
class ProcessListenerGuard {
  private active = 0;
  private baseline: Map<string, Set<Listener>> | undefined;
  private readonly lateErrorHandlers = new Set<(error: unknown) => void>();
  private listening = false;
  /** Errors our stack programs threw: the SDK rejects with them again once the run is over. */
  private readonly programErrors = new WeakSet<object>();

  /**
   * Between runs, no run's listener takes a late rejection of the SDK: this one does, and lets
   * anything else end the process as Node would (a rejection nobody expected is a bug).
   */
  readonly absorb = (reason: unknown): void => {
    if (this.active > 0) return;
    const ours = isLateEngineError(reason) || (typeof reason === "object" && reason !== null && this.programErrors.has(reason));
    if (!ours) throw reason;
    for (const handler of this.lateErrorHandlers) handler(reason);
  };

  /** Installs the process listener once; `handler` (a runner's onLateRunError) is told of each late error. */
  onLateError(handler: ((error: unknown) => void) | undefined): void {
    if (!this.listening) processEvents.on("unhandledRejection", this.absorb);
    this.listening = true;
    if (handler !== undefined) this.lateErrorHandlers.add(handler);
  }

  /** Runs a stack program, remembering what it throws. */
  async program<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (typeof error === "object" && error !== null) this.programErrors.add(error);
      throw error;
    }
  }

  async around<T>(run: () => Promise<T>): Promise<T> {
    if (this.active++ === 0) {
      this.baseline = new Map(PROCESS_ERROR_EVENTS.map((event) => [event, new Set(processEvents.listeners(event) as Listener[])]));
    }
    try {
      return await run();
    } finally {
      if (--this.active === 0 && this.baseline !== undefined) {
        for (const event of PROCESS_ERROR_EVENTS) {
          const keep = this.baseline.get(event) ?? new Set();
          for (const listener of processEvents.listeners(event) as Listener[]) if (!keep.has(listener)) processEvents.off(event, listener);
        }
        this.baseline = undefined;
      }
    }
  }
}

const PROCESS_GUARD = new ProcessListenerGuard();

/** The process listener that takes late errors of ended runs (tests count process listeners). */
export const lateRunErrorListener: (reason: unknown) => void = PROCESS_GUARD.absorb;

/** The workspace of readOnlyWorkspace (listing and exporting stacks), beside the stacks' own. */
const LIST_WORKSPACE = "_list";

/**
 * Pure: the entries of the workspaces folder to remove at start: the directories (never a file or
 * a symbolic link) named for no stack of the backend, readOnlyWorkspace's own excepted.
 */
export function strayWorkspaces(entries: readonly { name: string; directory: boolean }[], stacks: ReadonlySet<string>): string[] {
  return entries
    .filter((entry) => entry.directory && entry.name !== LIST_WORKSPACE && !stacks.has(entry.name))
    .map((entry) => entry.name)
    .sort();
}

export class StackRunner {
  private readonly entries = new Map<string, Promise<Entry>>();
  /** The backend's stacks as listed (listStacks) plus those created since; undefined until listed. */
  private listed: Set<string> | undefined;
  private readonly listeners = PROCESS_GUARD;

  private readonly projectName: string;
  /** The file:// backend read directly (stacks/checkpoints.ts); undefined for other backends. */
  private readonly files: FileBackend | undefined;
  /**
   * The CLI every workspace runs, checked once (never rejects): without it each workspace would
   * run its own `pulumi version`. When `pulumi` cannot be run, the workspaces are left to fail
   * with the Automation API's own error.
   */
  private readonly pulumiCommand: Promise<PulumiCommand | undefined>;

  constructor(private readonly options: StackRunnerOptions) {
    this.projectName = options.projectName ?? PROJECT_NAME;
    PROCESS_GUARD.onLateError(options.onLateRunError);
    this.files = options.readCheckpoints === false ? undefined : FileBackend.fromUrl(options.backendUrl);
    this.pulumiCommand = options.pulumiCommand !== undefined ? Promise.resolve(options.pulumiCommand) : PulumiCommand.get().catch(() => undefined);
  }

  private async workspaceOptions(stackName: string): Promise<LocalWorkspaceOptions> {
    const workDir = path.join(this.options.workDir, stackName);
    fs.mkdirSync(workDir, { recursive: true, mode: 0o700 });
    const pulumiCommand = await this.pulumiCommand;
    return {
      workDir,
      projectSettings: { name: this.projectName, runtime: "nodejs", backend: { url: this.options.backendUrl } },
      envVars: { PULUMI_BACKEND_URL: this.options.backendUrl, PULUMI_SKIP_UPDATE_CHECK: "true", ...this.options.env },
      ...(this.options.secretsProvider !== undefined ? { secretsProvider: this.options.secretsProvider } : {}),
      ...(pulumiCommand !== undefined ? { pulumiCommand } : {}),
    };
  }

  private entry(stackName: string, scope: Scope): Promise<Entry> {
    let entry = this.entries.get(stackName);
    if (entry === undefined) {
      const holder: { current?: Entry } = {};
      const args: InlineProgramArgs = {
        stackName,
        projectName: this.projectName,
        program: () =>
          PROCESS_GUARD.program(async () => {
            const desired = holder.current?.desired;
            if (desired === undefined) throw new Error(`stack ${stackName}: program run without a desired state`);
            if (holder.current !== undefined) holder.current.runStore = currentRunStore();
            return stackProgramOutputs(desired, scope, holder.current?.hash, this.options.clusterUid, holder.current?.adoption);
          }),
      };
      entry = this.workspaceOptions(stackName)
        .then((options) => this.openStack(args, options))
        .then((stack) => {
          holder.current = { stack: this.readsOwnResults(stackName, stack), needsRefresh: false, mayHavePending: false };
          return holder.current;
        });
      // A failed creation must not be cached: the next run tries again.
      entry.catch(() => this.entries.delete(stackName));
      this.entries.set(stackName, entry);
    }
    return entry;
  }

  /**
   * A stack the backend's listing (listStacks) did not have is created at once (`stack init`):
   * createOrSelect would first run a `stack select` that fails. Created meanwhile by someone else:
   * selected. Without a listing, or for a listed stack, createOrSelect as before.
   */
  private async openStack(args: InlineProgramArgs, options: LocalWorkspaceOptions): Promise<Stack> {
    if (this.options.readOnly === true) return LocalWorkspace.selectStack(args, options);
    if (this.listed === undefined || this.listed.has(args.stackName)) return LocalWorkspace.createOrSelectStack(args, options);
    try {
      const created = await LocalWorkspace.createStack(args, options);
      this.listed.add(args.stackName);
      return created;
    } catch (error) {
      if (error instanceof StackAlreadyExistsError) return LocalWorkspace.selectStack(args, options);
      throw error;
    }
  }

  /**
   * On a file:// backend, the results of a run come from the checkpoint it just wrote. The
   * Automation API ends every up with two `stack output` runs and, like refresh and destroy, one
   * `stack history` run (@pulumi/pulumi automation/stack.js): three CLI starts after the engine is
   * done, 1-2 s each on a busy 2-core machine, on the path from a Service change to its ingress.
   * The outputs are the root stack resource's in the checkpoint (what `stack output` prints); an
   * output holding a secret, or a checkpoint that cannot be read with certainty, goes to the CLI
   * as before. The history summary is not used by dccm: none is returned, as for a stack without
   * history.
   */
  private readsOwnResults(stackName: string, stack: Stack): Stack {
    if (this.files === undefined) return stack;
    const cliOutputs = stack.outputs.bind(stack);
    stack.outputs = async (): Promise<OutputMap> => {
      const deployment = this.readCheckpoint(stackName)?.deployment;
      if (deployment === undefined) return cliOutputs();
      const outputs = stackOutputs(deployment);
      if (holdsSecret(outputs)) return cliOutputs();
      return Object.fromEntries(Object.entries(outputs).map(([key, value]) => [key, { value, secret: false }]));
    };
    stack.info = async (): Promise<UpdateSummary | undefined> => undefined;
    return stack;
  }

  /** Creates the stack in the backend if it is not there yet (before our finalizer goes on a Service). */
  async ensureStack(stackName: string, scope: Scope): Promise<void> {
    this.writable("ensureStack", stackName);
    await this.entry(stackName, scope);
  }

  private writable(operation: string, stackName: string): void {
    if (this.options.readOnly === true) throw new Error(`${operation} of stack ${stackName} refused: this runner only reads the backend`);
  }

  /**
   * Adopts the pending creates a killed run left in `deployment` (see adoptPendingCreates) and,
   * when there were any, imports the repaired state back (`openStack` is only called then).
   */
  private async adoptInto(stackName: string, openStack: () => Promise<Stack>, read: { version: number; features?: string[] }, deployment: Record<string, unknown>): Promise<string[]> {
    // Another cluster's stack is never written, not even to repair it.
    const recorded = stackOutputs(deployment)[CLUSTER_UID_OUTPUT];
    if (typeof recorded === "string" && this.options.clusterUid !== undefined && recorded !== this.options.clusterUid) return [];
    const adopted = adoptPendingCreates(deployment);
    // Read-only: held as the repair would hold them, the repair itself left to the real run.
    if (adopted.length > 0 && this.options.readOnly !== true) {
      try {
        // A version 4 deployment goes back with the features it declares.
        const state = { version: read.version, ...(read.features !== undefined ? { features: read.features } : {}), deployment };
        await (await openStack()).importStack(state);
      } catch (error) {
        throw new Error(`importing stack ${stackName} after adopting ${adopted.length} pending creates`, { cause: error });
      }
      this.options.onAdopted?.(stackName, adopted);
    }
    return adopted;
  }

  /**
   * The stack's deployment from its checkpoint file, when the backend is a file:// one that can be
   * read with certainty (stacks/checkpoints.ts); undefined when the CLI must export it.
   */
  private readCheckpoint(stackName: string): { version: number; features?: string[]; deployment: Record<string, unknown> | undefined } | undefined {
    const read = this.files?.readCheckpoint(this.projectName, stackName);
    if (read === undefined) return undefined;
    if (read.kind === "read") return read;
    if (read.kind === "unsure") this.options.onCheckpointUnsure?.(stackName, read.reason);
    return undefined;
  }

  /**
   * Reads the stack (its checkpoint file, or one `stack export`) and adopts the pending creates a
   * killed run left, importing the repaired state back.
   */
  private async exportAdopting(stackName: string, stack: Stack): Promise<{ deployment: Record<string, unknown> | undefined; adopted: string[] }> {
    let read: { version: number; features?: string[]; deployment: unknown } | undefined = this.readCheckpoint(stackName);
    if (read === undefined) {
      try {
        // The CLI prints `features` with a version 4 deployment; the Automation API types only version and deployment.
        const exported: { version: number; features?: unknown; deployment: unknown } = await stack.exportStack();
        const features = Array.isArray(exported.features) ? exported.features.filter((feature): feature is string => typeof feature === "string") : undefined;
        read = { version: exported.version, ...(features !== undefined ? { features } : {}), deployment: exported.deployment };
      } catch (error) {
        throw new Error(`exporting stack ${stackName}`, { cause: error });
      }
    }
    const deployment = read.deployment;
    if (!isRecord(deployment)) return { deployment: undefined, adopted: [] };
    return { deployment, adopted: await this.adoptInto(stackName, () => Promise.resolve(stack), read, deployment) };
  }

  /**
   * Reads the stack once: adopts pending creates a killed run left, and returns the hash and
   * outputs of the last successful up, so unchanged stacks need no up. On a file:// backend an
   * unchanged stack costs no CLI run: its checkpoint file is read, and the stack is only selected
   * (`stack select`) when a repair must be imported or when it runs.
   */
  async inspect(stackName: string, scope: Scope): Promise<Inspection> {
    const file = this.readCheckpoint(stackName);
    let read: { deployment: Record<string, unknown> | undefined; adopted: string[] };
    if (file === undefined) {
      read = await this.exportAdopting(stackName, (await this.entry(stackName, scope)).stack);
    } else {
      const deployment = file.deployment;
      read = { deployment, adopted: deployment === undefined ? [] : await this.adoptInto(stackName, async () => (await this.entry(stackName, scope)).stack, file, deployment) };
    }
    const { deployment, adopted } = read;
    this.options.onApplied?.(stackName, deployment === undefined ? [] : deploymentStates(deployment));
    if (deployment === undefined) return { hash: undefined, outputs: {}, adopted: [], clusterUid: undefined };
    // Adopted resources carry their inputs as outputs until a refresh reads them.
    if (adopted.length > 0) (await this.entry(stackName, scope)).needsRefresh = true;
    const outputs = stackOutputs(deployment);
    const hash = outputs[HASH_OUTPUT];
    const clusterUid = outputs[CLUSTER_UID_OUTPUT];
    return {
      hash: adopted.length === 0 && typeof hash === "string" ? hash : undefined,
      outputs,
      adopted,
      clusterUid: typeof clusterUid === "string" ? clusterUid : undefined,
    };
  }

  /** The stack's entry, holding what its next program run declares: its slice of `desired`, the hash, the adoption. */
  private async prepared(stackName: string, scope: Scope, desired: DesiredState, opts: { hash?: string; adoption?: Adoption }): Promise<Entry> {
    const entry = await this.entry(stackName, scope);
    entry.desired = stackSlice(desired, scope);
    entry.hash = opts.hash;
    entry.adoption = opts.adoption;
    return entry;
  }

  /**
   * `adoption`: existing GCE resources this run imports (adopt/); a run without it declares the
   * same resources without the import option, which changes nothing once they are in the state.
   */
  async up(stackName: string, scope: Scope, desired: DesiredState, opts: { refresh: boolean; hash?: string; signal?: AbortSignal; adoption?: Adoption }): Promise<UpOutcome> {
    this.writable("pulumi up", stackName);
    const entry = await this.prepared(stackName, scope, desired, opts);
    await this.adoptPendingFirst(stackName, entry);
    const refresh = opts.refresh || entry.needsRefresh;
    const changed: PutBack[] = [];
    const steps = new RunStates();
    const onEvent = (event: EngineEvent): void => {
      const metadata = event.resourcePreEvent?.metadata;
      if (metadata !== undefined && CHANGING_OPS.has(metadata.op)) {
        changed.push({ urn: metadata.urn, type: metadata.type, name: nameFromUrn(metadata.urn), op: metadata.op });
      }
      const outputs = event.resOutputsEvent?.metadata;
      if (outputs !== undefined) steps.record(outputs.op, outputs.new, outputs.old);
    };
    const interrupt = this.interrupt(stackName, "up", opts.signal);
    try {
      // The Automation API only listens for an abort once the CLI runs: an abort that came while
      // the workspace was being prepared would be missed and the whole `up` would run.
      interrupt.signal.throwIfAborted();
      const run = async (withRefresh: boolean): Promise<Record<string, unknown>> =>
        plainOutputs((await this.listeners.around(() => entry.stack.up({ refresh: withRefresh, onEvent, signal: interrupt.signal }))).outputs);
      let outputs = await run(refresh);
      entry.needsRefresh = false;
      if (!hasProgramOutputs(outputs)) {
        // Seen once in CI: a successful up of a new stack recorded no stack outputs at all. Written
        // into the Service's status, that would erase its ingress; the same program run again
        // changes no resource and records them.
        this.options.onOutputsMissing?.(stackName);
        outputs = await run(false);
        if (!hasProgramOutputs(outputs)) throw new Error(`pulumi up of stack ${stackName} succeeded twice but recorded no stack outputs (${PROGRAM_OUTPUTS.join(", ")})`);
      }
      releaseRunStore(entry);
      this.options.onApplied?.(stackName, steps.resources());
      return { outputs, changed };
    } catch (error) {
      this.options.onApplied?.(stackName, undefined);
      if (error instanceof ConcurrentUpdateError) throw new StackBusyError(stackName, { cause: error });
      entry.mayHavePending = true;
      throw new Error(`pulumi up of stack ${stackName} failed`, { cause: error });
    } finally {
      settle(entry);
      interrupt.dispose();
    }
  }

  /**
   * `pulumi preview` of the program with `desired` (read-only: no lock, no checkpoint, see
   * bin/previewCommand.ts READ_ONLY), reporting each step's metadata. What the daemon asks before
   * it adopts: which imported resources the first up would replace.
   */
  async preview(
    stackName: string,
    scope: Scope,
    desired: DesiredState,
    opts: { hash?: string; adoption?: Adoption; onStep: (metadata: StepEventMetadata) => void; refresh?: boolean; signal?: AbortSignal },
  ): Promise<void> {
    const entry = await this.prepared(stackName, scope, desired, opts);
    const onEvent = (event: EngineEvent): void => {
      const metadata = event.resourcePreEvent?.metadata;
      if (metadata !== undefined) opts.onStep(metadata);
    };
    const interrupt = this.interrupt(stackName, "preview", opts.signal);
    try {
      // As before an up: the engine would plan the creates a killed run left pending over again.
      await this.adoptPendingFirst(stackName, entry);
      interrupt.signal.throwIfAborted();
      await this.listeners.around(() => entry.stack.preview({ onEvent, refresh: opts.refresh === true || entry.needsRefresh, signal: interrupt.signal }));
      releaseRunStore(entry);
    } catch (error) {
      throw new Error(`pulumi preview of stack ${stackName} failed`, { cause: error });
    } finally {
      settle(entry);
      interrupt.dispose();
    }
  }

  /** Adopts the pending creates a failed run may have left (mayHavePending), once. */
  private async adoptPendingFirst(stackName: string, entry: Entry): Promise<void> {
    if (!entry.mayHavePending) return;
    // On a file:// backend this reads the checkpoint file: no CLI run unless there is something to adopt.
    const { adopted } = await this.exportAdopting(stackName, entry.stack);
    if (adopted.length > 0) entry.needsRefresh = true;
    entry.mayHavePending = false;
  }

  /** The cancellation of one run: the caller's abort cancels it, and terminates it if it does not end (stacks/interrupt.ts). */
  private interrupt(stackName: string, operation: "up" | "preview" | "destroy", signal: AbortSignal | undefined): TwoStepInterrupt {
    const terminateAfterMs = this.options.terminateAfterMs ?? DEFAULT_TERMINATE_AFTER_MS;
    return new TwoStepInterrupt(signal, terminateAfterMs, () => this.options.onTerminate?.(stackName, operation, terminateAfterMs));
  }

  private async openForDestroy(stackName: string): Promise<Stack | undefined> {
    // A stack this process already opened needs no second `stack select`.
    const open = this.entries.get(stackName);
    try {
      return open !== undefined
        ? (await open).stack
        : this.readsOwnResults(stackName, await LocalWorkspace.selectStack({ stackName, projectName: this.projectName, program: async () => ({}) }, await this.workspaceOptions(stackName)));
    } catch (error) {
      if (error instanceof StackNotFoundError) return undefined;
      throw new Error(`selecting stack ${stackName}`, { cause: error });
    }
  }

  /**
   * Destroys the stack's resources; the stack itself stays (removeStack), so a run cut short after
   * this still finds the proof that the Service was ours. `absent`: there is no such stack.
   */
  async destroy(stackName: string, opts: { signal?: AbortSignal } = {}): Promise<"destroyed" | "absent"> {
    this.writable("pulumi destroy", stackName);
    const stack = await this.openForDestroy(stackName);
    if (stack === undefined) return "absent";
    const interrupt = this.interrupt(stackName, "destroy", opts.signal);
    try {
      // A killed run's pending creates reached GCE but not the state: without adoption, destroy
      // would forget them and leak the resources.
      await this.exportAdopting(stackName, stack);
      // As for up: an abort before the CLI runs would otherwise be missed.
      interrupt.signal.throwIfAborted();
      await stack.destroy({ signal: interrupt.signal });
      this.options.onApplied?.(stackName, []);
      return "destroyed";
    } catch (error) {
      this.options.onApplied?.(stackName, undefined);
      this.entries.delete(stackName);
      if (error instanceof StackNotFoundError) return "absent";
      if (error instanceof ConcurrentUpdateError) throw new StackBusyError(stackName, { cause: error });
      throw new Error(`pulumi destroy of stack ${stackName} failed`, { cause: error });
    } finally {
      interrupt.dispose();
    }
  }

  /** Removes the (destroyed) stack from the backend and its workspace folder. */
  async removeStack(stackName: string): Promise<void> {
    this.writable("removing", stackName);
    const stack = await this.openForDestroy(stackName);
    this.entries.delete(stackName);
    this.listed?.delete(stackName);
    try {
      if (stack !== undefined) await stack.workspace.removeStack(stackName);
    } catch (error) {
      if (!(error instanceof StackNotFoundError)) throw new Error(`removing stack ${stackName}`, { cause: error });
    }
    fs.rmSync(path.join(this.options.workDir, stackName), { recursive: true, force: true });
  }

  /** destroy, then removeStack. */
  async destroyAndRemove(stackName: string, opts: { signal?: AbortSignal } = {}): Promise<void> {
    await this.destroy(stackName, opts);
    await this.removeStack(stackName);
  }

  /**
   * A workspace over this project's stacks for reading them (listStacks, exportStack): it creates,
   * selects and repairs no stack (the leak detector and `dccm gc` read through it).
   */
  async readOnlyWorkspace(): Promise<Workspace> {
    return LocalWorkspace.create(await this.workspaceOptions(LIST_WORKSPACE));
  }

  /**
   * listStacks and exportStack for a reader of every stack (the daemon's leak check, every drift
   * interval): a file:// backend's checkpoints are read directly, not through one `pulumi stack
   * export` per stack; the CLI reads the rest, and any stack whose checkpoint is not certain.
   */
  stackReader(): Pick<Workspace, "listStacks" | "exportStack"> {
    let cli: Promise<Workspace> | undefined;
    return {
      listStacks: async () => (await this.listBackend()).map((name) => ({ name, current: false, updateInProgress: false })),
      exportStack: async (stackName: string) => {
        const file = this.readCheckpoint(stackName);
        if (file !== undefined) return { version: file.version, deployment: file.deployment ?? {} };
        cli ??= this.readOnlyWorkspace();
        return (await cli).exportStack(stackName);
      },
    };
  }

  /**
   * The IDs of the cloud resources the stack holds (none for a stack the backend does not have):
   * what adoption must not import again.
   */
  async heldResourceIds(stackName: string, scope: Scope): Promise<Set<string>> {
    const file = this.readCheckpoint(stackName);
    let deployment = file?.deployment;
    if (file === undefined) {
      // The listing made at start-up (or the first such call), not one `pulumi stack ls` per stack.
      const listed = this.listed ?? new Set(await this.listStacks());
      if (!listed.has(stackName)) return new Set();
      deployment = (await this.exportAdopting(stackName, (await this.entry(stackName, scope)).stack)).deployment;
    }
    const resources = Array.isArray(deployment?.resources) ? deployment.resources : [];
    return new Set(resources.flatMap((resource: unknown) => (isRecord(resource) && resource.custom === true && typeof resource.id === "string" && resource.id !== "" ? [resource.id] : [])));
  }

  /**
   * The Service a stack with a shortened name was made for, as the stack records it
   * (recordedService); read-only (its checkpoint file, or `pulumi stack export`).
   */
  async recordedService(stackName: string): Promise<{ namespace: string; name: string } | undefined> {
    const file = this.readCheckpoint(stackName);
    if (file !== undefined) return recordedService(stackName, file.deployment);
    try {
      const exported = await (await this.readOnlyWorkspace()).exportStack(stackName);
      return recordedService(stackName, isRecord(exported.deployment) ? exported.deployment : undefined);
    } catch (error) {
      throw new Error(`reading stack ${stackName} for the Service it was made for`, { cause: error });
    }
  }

  /**
   * Removes the workspace folders (`<workDir>/<name>`) of stacks the backend does not have: a run
   * killed between a workspace's creation and its stack's creation leaves one. Only at start,
   * before any run (a run's workspace is made just before its stack). Returns what was removed.
   */
  removeStrayWorkspaces(stacks: Iterable<string>): string[] {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(this.options.workDir, { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw new Error(`listing the workspaces in ${this.options.workDir}`, { cause: error });
    }
    const stray = strayWorkspaces(
      entries.map((entry) => ({ name: entry.name, directory: entry.isDirectory() })),
      new Set(stacks),
    );
    for (const name of stray) fs.rmSync(path.join(this.options.workDir, name), { recursive: true, force: true });
    return stray;
  }

  /** Names of the stacks in the backend (for orphans left by Services deleted while we were down). */
  async listStacks(): Promise<string[]> {
    const stacks = await this.listBackend();
    this.listed = new Set(stacks);
    return stacks;
  }

  private async listBackend(): Promise<string[]> {
    const listed = this.files?.listStacks(this.projectName);
    if (Array.isArray(listed)) return listed;
    if (listed !== undefined) this.options.onCheckpointUnsure?.("*", listed.unsure);
    const workspace = await this.readOnlyWorkspace();
    const summaries = await workspace.listStacks({ all: false });
    return summaries.map((summary) => summary.name.split("/").pop() ?? summary.name).sort();
  }
}
