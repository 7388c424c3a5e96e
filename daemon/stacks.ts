/**
 * Pulumi stacks through the Automation API: one workspace per stack, reused across runs, each
 * running the same declareStack as index.ts with the desired state captured for that run.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import {
  ConcurrentUpdateError,
  LocalWorkspace,
  PulumiCommand,
  StackNotFoundError,
  type EngineEvent,
  type InlineProgramArgs,
  type LocalWorkspaceOptions,
  type Stack,
} from "@pulumi/pulumi/automation";
import { gceResourceId } from "../components/ids";
import { guardedPulumiCommand } from "./pulumiCli";
import { declareStack, type Scope } from "../components/stack";
import type { DesiredState } from "../model";

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
  /** Told once when the CLI cannot be tied to the daemon's life (daemon/pulumiCli.ts). */
  onCliUnguarded?: (reason: string) => void;
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

export class StackBusyError extends Error {
  constructor(stack: string, options: { cause: unknown }) {
    super(`stack ${stack} is locked by another update`, options);
    this.name = "StackBusyError";
  }
}

const CHANGING_OPS = new Set(["create", "update", "replace", "delete", "create-replacement", "delete-replaced"]);

function nameFromUrn(urn: string): string {
  const index = urn.lastIndexOf("::");
  return index < 0 ? urn : urn.slice(index + 2);
}

export function localBackendUrl(stateDir: string): string {
  return `file://${path.resolve(stateDir)}`;
}

interface Entry {
  stack: Stack;
  /** The desired state the next run of this stack's program declares. */
  desired?: DesiredState;
  /** Recorded as the stack output `dccmDesiredHash`, so a restarted daemon can skip unchanged stacks. */
  hash?: string;
  /** Pending creates left by a killed run were adopted; the next up must refresh. */
  needsRefresh: boolean;
}

export const HASH_OUTPUT = "dccmDesiredHash";

export interface Inspection {
  /** The desired-state hash the last successful up applied, if any. */
  hash: string | undefined;
  outputs: Record<string, unknown>;
  /** URNs of pending creates of a killed run, adopted into the state. */
  adopted: string[];
}

/** The root stack resource's outputs in an exported deployment. */
export function stackOutputs(deployment: Record<string, unknown>): Record<string, unknown> {
  const resources = Array.isArray(deployment.resources) ? deployment.resources : [];
  const root = resources.find((resource: unknown) => isRecord(resource) && resource.type === "pulumi:pulumi:Stack");
  return isRecord(root) && isRecord(root.outputs) ? root.outputs : {};
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
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

export class StackRunner {
  private readonly entries = new Map<string, Promise<Entry>>();

  private readonly projectName: string;
  /** The CLI every workspace runs: dies with the daemon (never rejects). */
  private readonly pulumiCommand: Promise<PulumiCommand | undefined>;

  constructor(private readonly options: StackRunnerOptions) {
    this.projectName = options.projectName ?? PROJECT_NAME;
    this.pulumiCommand = guardedPulumiCommand(options.pulumiCommand, {
      dir: path.join(options.workDir, ".pulumi-cli"),
      searchPath: options.env.PATH ?? process.env.PATH,
      onUnguarded: (reason) => options.onCliUnguarded?.(reason),
    });
  }

  private async workspaceOptions(stackName: string): Promise<LocalWorkspaceOptions> {
    const workDir = path.join(this.options.workDir, stackName);
    fs.mkdirSync(workDir, { recursive: true });
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
        program: async () => {
          const desired = holder.current?.desired;
          if (desired === undefined) throw new Error(`stack ${stackName}: program run without a desired state`);
          return { ...declareStack(desired, scope).outputs, ...(holder.current?.hash !== undefined ? { [HASH_OUTPUT]: holder.current.hash } : {}) };
        },
      };
      entry = this.workspaceOptions(stackName).then((options) => LocalWorkspace.createOrSelectStack(args, options)).then((stack) => {
        holder.current = { stack, needsRefresh: false };
        return holder.current;
      });
      // A failed creation must not be cached: the next run tries again.
      entry.catch(() => this.entries.delete(stackName));
      this.entries.set(stackName, entry);
    }
    return entry;
  }

  /**
   * Reads the stack once (one `stack export`): adopts pending creates a killed run left, and
   * returns the hash and outputs of the last successful up, so unchanged stacks need no up.
   */
  async inspect(stackName: string, scope: Scope): Promise<Inspection> {
    const entry = await this.entry(stackName, scope);
    let exported: Awaited<ReturnType<Stack["exportStack"]>>;
    try {
      exported = await entry.stack.exportStack();
    } catch (error) {
      throw new Error(`exporting stack ${stackName}`, { cause: error });
    }
    const deployment: unknown = exported.deployment;
    if (!isRecord(deployment)) return { hash: undefined, outputs: {}, adopted: [] };
    const adopted = adoptPendingCreates(deployment);
    if (adopted.length > 0) {
      try {
        await entry.stack.importStack({ version: exported.version, deployment });
      } catch (error) {
        throw new Error(`importing stack ${stackName} after adopting ${adopted.length} pending creates`, { cause: error });
      }
      // Adopted resources carry their inputs as outputs until a refresh reads them.
      entry.needsRefresh = true;
      this.options.onAdopted?.(stackName, adopted);
    }
    const outputs = stackOutputs(deployment);
    const hash = outputs[HASH_OUTPUT];
    return { hash: adopted.length === 0 && typeof hash === "string" ? hash : undefined, outputs, adopted };
  }

  async up(stackName: string, scope: Scope, desired: DesiredState, opts: { refresh: boolean; hash?: string; signal?: AbortSignal }): Promise<UpOutcome> {
    const entry = await this.entry(stackName, scope);
    entry.desired = desired;
    entry.hash = opts.hash;
    const refresh = opts.refresh || entry.needsRefresh;
    const changed: PutBack[] = [];
    const onEvent = (event: EngineEvent): void => {
      const metadata = event.resourcePreEvent?.metadata;
      if (metadata !== undefined && CHANGING_OPS.has(metadata.op)) {
        changed.push({ urn: metadata.urn, type: metadata.type, name: nameFromUrn(metadata.urn), op: metadata.op });
      }
    };
    try {
      const result = await entry.stack.up({ refresh, onEvent, ...(opts.signal !== undefined ? { signal: opts.signal } : {}) });
      entry.needsRefresh = false;
      const outputs: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(result.outputs)) outputs[key] = value.value;
      return { outputs, changed };
    } catch (error) {
      if (error instanceof ConcurrentUpdateError) throw new StackBusyError(stackName, { cause: error });
      throw new Error(`pulumi up of stack ${stackName} failed`, { cause: error });
    }
  }

  /** Destroys the stack's resources and removes the stack. A stack that does not exist is done. */
  async destroyAndRemove(stackName: string, opts: { signal?: AbortSignal } = {}): Promise<void> {
    try {
      // A stack this process already opened needs no second `stack select`.
      const open = this.entries.get(stackName);
      const stack = open !== undefined ? (await open).stack : await LocalWorkspace.selectStack({ stackName, projectName: this.projectName, program: async () => ({}) }, await this.workspaceOptions(stackName));
      // A run killed mid-create left resources GCE holds but the state only lists as pending: a
      // destroy would drop them and leak them. Adopted, they are destroyed with the rest.
      await this.adoptBeforeDestroy(stackName, stack);
      await stack.destroy({ ...(opts.signal !== undefined ? { signal: opts.signal } : {}) });
      await stack.workspace.removeStack(stackName);
    } catch (error) {
      if (error instanceof StackNotFoundError) return;
      if (error instanceof ConcurrentUpdateError) throw new StackBusyError(stackName, { cause: error });
      throw new Error(`pulumi destroy of stack ${stackName} failed`, { cause: error });
    } finally {
      this.entries.delete(stackName);
    }
  }

  private async adoptBeforeDestroy(stackName: string, stack: Stack): Promise<void> {
    const exported = await stack.exportStack();
    const deployment: unknown = exported.deployment;
    if (!isRecord(deployment)) return;
    const adopted = adoptPendingCreates(deployment);
    if (adopted.length === 0) return;
    try {
      await stack.importStack({ version: exported.version, deployment });
    } catch (error) {
      throw new Error(`importing stack ${stackName} after adopting ${adopted.length} pending creates before its destroy`, { cause: error });
    }
    this.options.onAdopted?.(stackName, adopted);
  }

  /** Names of the stacks in the backend (for orphans left by Services deleted while we were down). */
  async listStacks(): Promise<string[]> {
    const workspace = await LocalWorkspace.create(await this.workspaceOptions("_list"));
    const summaries = await workspace.listStacks({ all: false });
    return summaries.map((summary) => summary.name.split("/").pop() ?? summary.name).sort();
  }
}
