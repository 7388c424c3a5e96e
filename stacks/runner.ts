/**
 * The runs of Pulumi stacks through the Automation API: one workspace per stack, reused across runs,
 * each running the same declareStack as index.ts with the desired state captured for that run
 * (up, preview, destroy), and the reading of a stack before its first run (inspect), which recovers
 * what a killed run left. What a run reads of the backend goes through StackReader.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import {
  ConcurrentUpdateError,
  LocalWorkspace,
  StackAlreadyExistsError,
  StackNotFoundError,
  type EngineEvent,
  type InlineProgramArgs,
  type LocalWorkspaceOptions,
  type OutputMap,
  type PulumiCommand,
  type Stack,
  type StepEventMetadata,
  type UpdateSummary,
} from "@pulumi/pulumi/automation";
import type { Adoption } from "../components/adoption";
import { deploymentStates, RunStates, type ResourceState } from "./states";
import { TwoStepInterrupt } from "./interrupt";
import type { DesiredState, Scope } from "../model";
import { isRecord } from "../runtime/guards";
import {
  stackProgramOutputs,
  HASH_OUTPUT,
  stackSlice,
  hasProgramOutputs,
  PROGRAM_OUTPUTS,
} from "../components/outputs";
import { StackBusyError } from "./errors";
import { PROJECT_NAME } from "./project";
import {
  holdsSecret,
  outputsWithHeldAddresses,
  recordedService,
  recoverPendingCreates,
  stackOutputs,
} from "./deployment";
import { isForeignStack, recordedClusterUid } from "./identity";
import { currentRunStore, releaseRunStore } from "./runStore";
import { PROCESS_GUARD } from "./processGuard";
import { pulumiOnPath, strayWorkspaces, workspaceOptions } from "./workspaces";
import { changedResource, stepListener, type PutBack } from "./events";
import { StackReader, type CheckpointDeployment, type ExportedStack } from "./reader";

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
  /** Told when pending creates of a killed run were recovered into a stack. */
  onRecovered?: (stack: string, urns: string[]) => void;
  /**
   * Identity of the cluster (UID of its kube-system Namespace), recorded by every run as the output
   * `dccmClusterUid`: a copied config file cannot fake it, so a daemon pointed at another cluster
   * can tell the stacks are not its own.
   */
  clusterUid?: string;
  /**
   * Read a file:// or gs:// backend's checkpoints directly instead of through `pulumi stack ls` /
   * `stack export` (stacks/checkpoints.ts, stacks/gcs.ts). Default true; false: always through the CLI.
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

export interface UpOutcome {
  outputs: Record<string, unknown>;
  /** Resources the run changed (create/update/replace/delete), from engine events. */
  changed: PutBack[];
}

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
  /** Pending creates left by a killed run were recovered; the next up must refresh. */
  needsRefresh: boolean;
  /**
   * The last run failed: it may have ended with creates whose outcome the engine never learned (a
   * run terminated at its deadline, stacks/interrupt.ts), recorded as pending. The next up recovers
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
  /** URNs of pending creates of a killed run, recovered into the state. */
  recovered: string[];
  /** The cluster identity the last successful up recorded (absent: never applied, or an older dccm). */
  clusterUid: string | undefined;
}

function plainOutputs(outputs: OutputMap): Record<string, unknown> {
  const plain: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(outputs)) plain[key] = value.value;
  return plain;
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

export class StackRunner {
  private readonly entries = new Map<string, Promise<Entry>>();
  /** The backend's stacks as listed (listStacks) plus those created since; undefined until listed. */
  private listed: Set<string> | undefined;
  private readonly listeners = PROCESS_GUARD;

  private readonly projectName: string;
  /** What the runner reads of the backend: its listing, a stack's checkpoint or export. */
  private readonly reader: StackReader;
  /**
   * The CLI every workspace runs, checked once (never rejects): without it each workspace would
   * run its own `pulumi version`. When `pulumi` cannot be run, the workspaces are left to fail
   * with the Automation API's own error.
   */
  private readonly pulumiCommand: Promise<PulumiCommand | undefined>;

  constructor(private readonly options: StackRunnerOptions) {
    this.projectName = options.projectName ?? PROJECT_NAME;
    PROCESS_GUARD.onLateError(options.onLateRunError);
    this.pulumiCommand = options.pulumiCommand !== undefined ? Promise.resolve(options.pulumiCommand) : pulumiOnPath();
    this.reader = this.stackReader();
  }

  private async workspaceOptions(stackName: string): Promise<LocalWorkspaceOptions> {
    const { backendUrl, env, secretsProvider } = this.options;
    return workspaceOptions(path.join(this.options.workDir, stackName), {
      backendUrl,
      projectName: this.projectName,
      env,
      secretsProvider,
      pulumiCommand: await this.pulumiCommand,
    });
  }

  private entry(stackName: string, scope: Scope): Promise<Entry> {
    let entry = this.entries.get(stackName);
    if (entry === undefined) {
      const holder: { current?: Entry } = {};
      const args: InlineProgramArgs = {
        stackName,
        projectName: this.projectName,
        program: () =>
          PROCESS_GUARD.program(() => {
            const desired = holder.current?.desired;
            if (desired === undefined) throw new Error(`stack ${stackName}: program run without a desired state`);
            if (holder.current !== undefined) holder.current.runStore = currentRunStore();
            return stackProgramOutputs(
              desired,
              scope,
              holder.current?.hash,
              this.options.clusterUid,
              holder.current?.adoption,
            );
          }),
      };
      entry = this.workspaceOptions(stackName)
        .then((options) => this.openStack(args, options))
        .then((stack) => {
          holder.current = {
            stack: this.readsOwnResults(stackName, stack),
            needsRefresh: false,
            mayHavePending: false,
          };
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
    if (this.listed === undefined || this.listed.has(args.stackName))
      return LocalWorkspace.createOrSelectStack(args, options);
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
   * On a file:// or gs:// backend, the results of a run come from the checkpoint it just wrote. The
   * Automation API ends every up with two `stack output` runs and, like refresh and destroy, one
   * `stack history` run (@pulumi/pulumi automation/stack.js): three CLI starts after the engine is
   * done, 1-2 s each on a busy 2-core machine, on the path from a Service change to its ingress.
   * The outputs are the root stack resource's in the checkpoint (what `stack output` prints); an
   * output holding a secret, or a checkpoint that cannot be read with certainty, goes to the CLI
   * as before. The history summary is not used by dccm: none is returned, as for a stack without
   * history.
   */
  private readsOwnResults(stackName: string, stack: Stack): Stack {
    if (!this.reader.readsCheckpoints) return stack;
    const cliOutputs = stack.outputs.bind(stack);
    stack.outputs = async (): Promise<OutputMap> => {
      const deployment = (await this.reader.readCheckpoint(stackName))?.deployment;
      if (deployment === undefined) return cliOutputs();
      const outputs = stackOutputs(deployment);
      if (holdsSecret(outputs)) return cliOutputs();
      return Object.fromEntries(Object.entries(outputs).map(([key, value]) => [key, { value, secret: false }]));
    };
    stack.info = (): Promise<UpdateSummary | undefined> => Promise.resolve(undefined);
    return stack;
  }

  /** Creates the stack in the backend if it is not there yet (before our finalizer goes on a Service). */
  async ensureStack(stackName: string, scope: Scope): Promise<void> {
    this.writable("ensureStack", stackName);
    await this.entry(stackName, scope);
  }

  private writable(operation: string, stackName: string): void {
    if (this.options.readOnly === true)
      throw new Error(`${operation} of stack ${stackName} refused: this runner only reads the backend`);
  }

  /**
   * Recovers the pending creates a killed run left in `deployment` (see recoverPendingCreates) and,
   * when there were any, imports the repaired state back (`openStack` is only called then).
   */
  private async recoverInto(
    stackName: string,
    openStack: () => Promise<Stack>,
    read: { version: number; features?: string[] },
    deployment: Record<string, unknown>,
  ): Promise<string[]> {
    // Another cluster's stack is never written, not even to repair it.
    if (isForeignStack(recordedClusterUid(deployment), this.options.clusterUid)) return [];
    const recovered = recoverPendingCreates(deployment);
    // Read-only: held as the repair would hold them, the repair itself left to the real run.
    if (recovered.length > 0 && this.options.readOnly !== true) {
      try {
        // A version 4 deployment goes back with the features it declares.
        const state = {
          version: read.version,
          ...(read.features !== undefined ? { features: read.features } : {}),
          deployment,
        };
        await (await openStack()).importStack(state);
      } catch (error) {
        throw new Error(`importing stack ${stackName} after recovering ${recovered.length} pending creates`, {
          cause: error,
        });
      }
      this.options.onRecovered?.(stackName, recovered);
    }
    return recovered;
  }

  /**
   * Reads the stack (its checkpoint file, or one `stack export`) and recovers the pending creates a
   * killed run left, importing the repaired state back.
   */
  private async exportRecovering(
    stackName: string,
    stack: Stack,
  ): Promise<{ deployment: Record<string, unknown> | undefined; recovered: string[] }> {
    let read: ExportedStack;
    try {
      read = await this.reader.exportStack(stackName, stack);
    } catch (error) {
      throw new Error(`exporting stack ${stackName}`, { cause: error });
    }
    const deployment = read.deployment;
    if (!isRecord(deployment)) return { deployment: undefined, recovered: [] };
    return { deployment, recovered: await this.recoverInto(stackName, () => Promise.resolve(stack), read, deployment) };
  }

  /**
   * Reads the stack once: recovers pending creates a killed run left, and returns the hash and
   * outputs of the last successful up, so unchanged stacks need no up. On a file:// or gs:// backend
   * an unchanged stack costs no CLI run: its checkpoint is read, and the stack is only selected
   * (`stack select`) when a repair must be imported or when it runs.
   */
  async inspect(stackName: string, scope: Scope): Promise<Inspection> {
    const file: CheckpointDeployment | undefined = await this.reader.readCheckpoint(stackName);
    let read: { deployment: Record<string, unknown> | undefined; recovered: string[] };
    if (file === undefined) {
      read = await this.exportRecovering(stackName, (await this.entry(stackName, scope)).stack);
    } else {
      const deployment = file.deployment;
      read = {
        deployment,
        recovered:
          deployment === undefined
            ? []
            : await this.recoverInto(
                stackName,
                async () => (await this.entry(stackName, scope)).stack,
                file,
                deployment,
              ),
      };
    }
    const { deployment, recovered } = read;
    this.options.onApplied?.(stackName, deployment === undefined ? [] : deploymentStates(deployment));
    if (deployment === undefined) return { hash: undefined, outputs: {}, recovered: [], clusterUid: undefined };
    // Recovered resources carry their inputs as outputs until a refresh reads them.
    if (recovered.length > 0) (await this.entry(stackName, scope)).needsRefresh = true;
    const outputs = outputsWithHeldAddresses(deployment);
    const hash = outputs[HASH_OUTPUT];
    return {
      hash: recovered.length === 0 && typeof hash === "string" ? hash : undefined,
      outputs,
      recovered,
      clusterUid: recordedClusterUid(deployment),
    };
  }

  /** The stack's entry, holding what its next program run declares: its slice of `desired`, the hash, the adoption. */
  private async prepared(
    stackName: string,
    scope: Scope,
    desired: DesiredState,
    opts: { hash?: string; adoption?: Adoption },
  ): Promise<Entry> {
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
  async up(
    stackName: string,
    scope: Scope,
    desired: DesiredState,
    opts: { refresh: boolean; hash?: string; signal?: AbortSignal; adoption?: Adoption },
  ): Promise<UpOutcome> {
    this.writable("pulumi up", stackName);
    const entry = await this.prepared(stackName, scope, desired, opts);
    await this.recoverPendingFirst(stackName, entry);
    const refresh = opts.refresh || entry.needsRefresh;
    const changed: PutBack[] = [];
    const steps = new RunStates();
    const onEvent = (event: EngineEvent): void => {
      const change = changedResource(event);
      if (change !== undefined) changed.push(change);
      const outputs = event.resOutputsEvent?.metadata;
      if (outputs !== undefined) steps.record(outputs.op, outputs.new, outputs.old);
    };
    const interrupt = this.interrupt(stackName, "up", opts.signal);
    try {
      // The Automation API only listens for an abort once the CLI runs: an abort that came while
      // the workspace was being prepared would be missed and the whole `up` would run.
      interrupt.signal.throwIfAborted();
      const run = async (withRefresh: boolean): Promise<Record<string, unknown>> =>
        plainOutputs(
          (
            await this.listeners.around(() =>
              entry.stack.up({ refresh: withRefresh, onEvent, signal: interrupt.signal }),
            )
          ).outputs,
        );
      let outputs = await run(refresh);
      entry.needsRefresh = false;
      if (!hasProgramOutputs(outputs)) {
        // Seen once in CI: a successful up of a new stack recorded no stack outputs at all. Written
        // into the Service's status, that would erase its ingress; the same program run again
        // changes no resource and records them.
        this.options.onOutputsMissing?.(stackName);
        outputs = await run(false);
        if (!hasProgramOutputs(outputs))
          throw new Error(
            `pulumi up of stack ${stackName} succeeded twice but recorded no stack outputs (${PROGRAM_OUTPUTS.join(", ")})`,
          );
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
    opts: {
      hash?: string;
      adoption?: Adoption;
      onStep: (metadata: StepEventMetadata) => void;
      refresh?: boolean;
      signal?: AbortSignal;
    },
  ): Promise<void> {
    const entry = await this.prepared(stackName, scope, desired, opts);
    const onEvent = stepListener(opts.onStep);
    const interrupt = this.interrupt(stackName, "preview", opts.signal);
    try {
      // As before an up: the engine would plan the creates a killed run left pending over again.
      await this.recoverPendingFirst(stackName, entry);
      interrupt.signal.throwIfAborted();
      await this.listeners.around(() =>
        entry.stack.preview({
          onEvent,
          refresh: opts.refresh === true || entry.needsRefresh,
          signal: interrupt.signal,
        }),
      );
      releaseRunStore(entry);
    } catch (error) {
      throw new Error(`pulumi preview of stack ${stackName} failed`, { cause: error });
    } finally {
      settle(entry);
      interrupt.dispose();
    }
  }

  /** Recovers the pending creates a failed run may have left (mayHavePending), once. */
  private async recoverPendingFirst(stackName: string, entry: Entry): Promise<void> {
    if (!entry.mayHavePending) return;
    // On a file:// backend this reads the checkpoint file: no CLI run unless there is something to recover.
    const { recovered } = await this.exportRecovering(stackName, entry.stack);
    if (recovered.length > 0) entry.needsRefresh = true;
    entry.mayHavePending = false;
  }

  /** The cancellation of one run: the caller's abort cancels it, and terminates it if it does not end (stacks/interrupt.ts). */
  private interrupt(
    stackName: string,
    operation: "up" | "preview" | "destroy",
    signal: AbortSignal | undefined,
  ): TwoStepInterrupt {
    const terminateAfterMs = this.options.terminateAfterMs ?? DEFAULT_TERMINATE_AFTER_MS;
    return new TwoStepInterrupt(signal, terminateAfterMs, () =>
      this.options.onTerminate?.(stackName, operation, terminateAfterMs),
    );
  }

  private async openForDestroy(stackName: string): Promise<Stack | undefined> {
    // A stack this process already opened needs no second `stack select`.
    const open = this.entries.get(stackName);
    try {
      return open !== undefined
        ? (await open).stack
        : this.readsOwnResults(
            stackName,
            await LocalWorkspace.selectStack(
              { stackName, projectName: this.projectName, program: () => Promise.resolve({}) },
              await this.workspaceOptions(stackName),
            ),
          );
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
      // A killed run's pending creates reached GCE but not the state: without recovering them,
      // destroy would forget them and leak the resources.
      await this.exportRecovering(stackName, stack);
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
   * A reader of this project's stacks (listing, exporting; stacks/reader.ts) for a reader of every
   * stack (the daemon's leak check, every drift interval, and `dccm gc`): a file:// or gs://
   * backend's checkpoints are read directly (unless `readCheckpoints` is false), not through one `pulumi stack
   * export` per stack; the CLI reads the rest, and any stack whose checkpoint is not certain. It
   * creates, selects and repairs no stack.
   */
  stackReader(opts: { readCheckpoints?: boolean } = {}): StackReader {
    const { backendUrl, env, secretsProvider, workDir, onCheckpointUnsure } = this.options;
    const readCheckpoints = opts.readCheckpoints ?? this.options.readCheckpoints;
    return new StackReader({
      backendUrl,
      projectName: this.projectName,
      env,
      secretsProvider,
      workDir,
      pulumiCommand: this.pulumiCommand,
      readCheckpoints,
      onCheckpointUnsure,
    });
  }

  /**
   * The IDs of the cloud resources the stack holds (none for a stack the backend does not have):
   * what adoption must not import again.
   */
  async heldResourceIds(stackName: string, scope: Scope): Promise<Set<string>> {
    const file = await this.reader.readCheckpoint(stackName);
    let deployment = file?.deployment;
    if (file === undefined) {
      // The listing made at start-up (or the first such call), not one `pulumi stack ls` per stack.
      const listed = this.listed ?? new Set(await this.listStacks());
      if (!listed.has(stackName)) return new Set();
      deployment = (await this.exportRecovering(stackName, (await this.entry(stackName, scope)).stack)).deployment;
    }
    const resources = Array.isArray(deployment?.resources) ? deployment.resources : [];
    return new Set(
      resources.flatMap((resource: unknown) =>
        isRecord(resource) && resource.custom === true && typeof resource.id === "string" && resource.id !== ""
          ? [resource.id]
          : [],
      ),
    );
  }

  /**
   * The Service a stack with a shortened name was made for, as the stack records it
   * (recordedService); read-only (its checkpoint file, or `pulumi stack export`).
   */
  async recordedService(stackName: string): Promise<{ namespace: string; name: string } | undefined> {
    const file = await this.reader.readCheckpoint(stackName);
    if (file !== undefined) return recordedService(stackName, file.deployment);
    try {
      return recordedService(stackName, await this.reader.readDeployment(stackName));
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
    const stacks = await this.reader.listStacks();
    this.listed = new Set(stacks);
    return stacks;
  }
}
