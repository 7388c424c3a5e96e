/**
 * The one reader of a backend's stacks, for every backend and every caller (the runner, the leak
 * check, `dccm preview` and `dccm status`): it lists the project's stacks and reads one stack's
 * deployment straight from the backend when that is certain (a file:// backend's checkpoint files,
 * stacks/checkpoints.ts; a gs:// bucket's objects, stacks/gcs.ts), else through the CLI (`pulumi
 * stack ls`, `pulumi stack export`). Read-only: it never creates, selects or repairs a stack.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { LocalWorkspace, type PulumiCommand, type Stack, type Workspace } from "@pulumi/pulumi/automation";
import { isRecord } from "../runtime/guards";
import { FileBackend, type CheckpointRead } from "./checkpoints";
import { GcsBackend, type Fetch } from "./gcs";
import { LIST_WORKSPACE, workspaceOptions, type WorkspaceSettings } from "./workspaces";

export interface StackReaderOptions extends Omit<WorkspaceSettings, "pulumiCommand"> {
  /** Where the reader's own workspace is made (in `<workDir>/_list`), for what the CLI reads. */
  workDir: string;
  /** The pulumi CLI (or the check for it in progress); `pulumi` on PATH when absent or undefined. */
  pulumiCommand?: PulumiCommand | Promise<PulumiCommand | undefined>;
  /** Read a file:// or gs:// backend's checkpoints directly. Default true; false: always through the CLI. */
  readCheckpoints?: boolean;
  /** The HTTP client of a gs:// backend's reads (tests); global fetch by default. */
  fetch?: Fetch;
  /** Told when a checkpoint (or `*`: the stack list) could not be read with certainty and the CLI reads it. */
  onCheckpointUnsure?: (stack: string, reason: string) => void;
}

/** A stack's state as `pulumi stack export` prints it: a version 4 deployment comes with the features it declares. */
export interface ExportedStack {
  version: number;
  features?: string[];
  deployment: unknown;
}

/** A checkpoint file read with certainty; `deployment` undefined: the stack was never updated. */
export interface CheckpointDeployment {
  version: number;
  features?: string[];
  deployment: Record<string, unknown> | undefined;
}

/** A backend whose checkpoints are read without the CLI. */
export interface CheckpointStore {
  listStacks(project: string): Promise<string[] | { unsure: string }>;
  readCheckpoint(project: string, stack: string): Promise<CheckpointRead>;
}

/**
 * The store of a file:// backend (its directory) or a gs:// one (its bucket; credentials and
 * STORAGE_EMULATOR_HOST from the CLI's environment `env`, else the process's); undefined for others.
 */
export function checkpointStore(
  backendUrl: string,
  env: Readonly<Record<string, string>>,
  fetchImpl?: Fetch,
): CheckpointStore | undefined {
  const files = FileBackend.fromUrl(backendUrl);
  if (files !== undefined) {
    return {
      listStacks: (project) => Promise.resolve(files.listStacks(project)),
      readCheckpoint: (project, stack) => Promise.resolve(files.readCheckpoint(project, stack)),
    };
  }
  return GcsBackend.fromUrl(
    backendUrl,
    { ...process.env, ...env },
    fetchImpl !== undefined ? { fetch: fetchImpl } : {},
  );
}

export class StackReader {
  /** The backend read directly; undefined for other backends (or when told not to). */
  private readonly files: CheckpointStore | undefined;
  /** The CLI's workspace, made when first needed; a failed one is made again next time. */
  private cli: Promise<Workspace> | undefined;

  constructor(private readonly options: StackReaderOptions) {
    this.files =
      options.readCheckpoints === false
        ? undefined
        : checkpointStore(options.backendUrl, options.env ?? {}, options.fetch);
  }

  /** Whether checkpoints are read directly (a file:// or gs:// backend): then stacks/ can skip CLI runs for what they hold. */
  get readsCheckpoints(): boolean {
    return this.files !== undefined;
  }

  /**
   * A workspace over the project's stacks for reading them (listStacks, exportStack): it creates,
   * selects and repairs no stack.
   */
  private async workspace(): Promise<Workspace> {
    const created = (this.cli ??= this.createWorkspace());
    created.catch(() => {
      if (this.cli === created) this.cli = undefined;
    });
    return created;
  }

  private async createWorkspace(): Promise<Workspace> {
    const pulumiCommand = await this.options.pulumiCommand;
    const { backendUrl, projectName, env, secretsProvider } = this.options;
    const settings: WorkspaceSettings = { backendUrl, projectName, env, secretsProvider, pulumiCommand };
    return LocalWorkspace.create(workspaceOptions(path.join(this.options.workDir, LIST_WORKSPACE), settings));
  }

  /** Names of the project's stacks, sorted: the checkpoint directory's files (or objects), else `pulumi stack ls`. */
  async listStacks(): Promise<string[]> {
    const listed = await this.files?.listStacks(this.options.projectName);
    if (Array.isArray(listed)) return listed;
    if (listed !== undefined) this.options.onCheckpointUnsure?.("*", listed.unsure);
    const summaries = await (await this.workspace()).listStacks({ all: false });
    return summaries.map((summary) => summary.name.split("/").pop() ?? summary.name).sort();
  }

  /**
   * The stack's deployment from its checkpoint, when the backend is a file:// or gs:// one that can
   * be read with certainty; undefined when the CLI must export it (an uncertain read is told to
   * onCheckpointUnsure).
   */
  async readCheckpoint(stack: string): Promise<CheckpointDeployment | undefined> {
    const read = await this.files?.readCheckpoint(this.options.projectName, stack);
    if (read === undefined) return undefined;
    if (read.kind === "read")
      return {
        version: read.version,
        ...(read.features !== undefined ? { features: read.features } : {}),
        deployment: read.deployment,
      };
    if (read.kind === "unsure") this.options.onCheckpointUnsure?.(stack, read.reason);
    return undefined;
  }

  /**
   * The stack's state: its checkpoint file when certain, else one `pulumi stack export`, of
   * `selected` when the caller has the stack selected already (the runner, which may import a
   * repair back into it), else in the reader's own workspace.
   */
  async exportStack(stack: string, selected?: Pick<Stack, "exportStack">): Promise<ExportedStack> {
    const file = await this.readCheckpoint(stack);
    if (file !== undefined) return file;
    // The CLI prints `features` with a version 4 deployment; the Automation API types only version and deployment.
    const exported: { version: number; features?: unknown; deployment: unknown } =
      selected !== undefined ? await selected.exportStack() : await (await this.workspace()).exportStack(stack);
    const features = Array.isArray(exported.features)
      ? exported.features.filter((feature): feature is string => typeof feature === "string")
      : undefined;
    return {
      version: exported.version,
      ...(features !== undefined ? { features } : {}),
      deployment: exported.deployment,
    };
  }

  /**
   * The deployment of a stack just listed: as readDeployment, but a stack whose checkpoint is gone
   * (removed since the listing) records none rather than failing its `pulumi stack export`.
   */
  async readListed(stack: string): Promise<Record<string, unknown> | undefined> {
    const read = await this.files?.readCheckpoint(this.options.projectName, stack);
    if (read?.kind === "absent") return undefined;
    if (read?.kind === "read") return read.deployment;
    if (read?.kind === "unsure") this.options.onCheckpointUnsure?.(stack, read.reason);
    return this.cliDeployment(stack);
  }

  private async cliDeployment(stack: string): Promise<Record<string, unknown> | undefined> {
    const deployment: unknown = (await (await this.workspace()).exportStack(stack)).deployment;
    return isRecord(deployment) ? deployment : undefined;
  }

  /** The stack's deployment (exportStack); undefined when it records none (never updated). */
  async readDeployment(stack: string): Promise<Record<string, unknown> | undefined> {
    const { deployment } = await this.exportStack(stack);
    return isRecord(deployment) ? deployment : undefined;
  }
}

/** Stacks readEveryStack reads at once from a backend read directly. */
const READ_WORKERS = 16;

/**
 * Every stack of the project and its deployment, read once by a reader of its own whose workspace
 * is a temporary directory, removed after (a command's read of a backend: the daemon's workspaces
 * are never used).
 */
export async function readEveryStack(
  options: Omit<StackReaderOptions, "workDir">,
): Promise<{ stack: string; deployment: Record<string, unknown> | undefined }[]> {
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-read-"));
  try {
    const reader = new StackReader({ ...options, workDir });
    const stacks = await reader.listStacks();
    const read = new Array<{ stack: string; deployment: Record<string, unknown> | undefined }>(stacks.length);
    // Direct reads overlap (a gs:// bucket's are bounded by its client, stacks/gcs.ts MAX_IN_FLIGHT);
    // through the CLI one stack at a time, as before (one `pulumi stack export` each).
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let index = next++; index < stacks.length; index = next++)
        read[index] = { stack: stacks[index], deployment: await reader.readListed(stacks[index]) };
    };
    await Promise.all(Array.from({ length: reader.readsCheckpoints ? READ_WORKERS : 1 }, worker));
    return read;
  } finally {
    fs.rmSync(workDir, { recursive: true, force: true });
  }
}
