/**
 * The engine runs of `dccm preview` (bin/previewCommand.ts; the plan itself is preview/plan.ts):
 * `pulumi preview` of a stack of the daemon's backend, `pulumi destroy --preview-only` of one, or a
 * preview of new stacks together as one temporary stack of an empty backend of ours. Read-only
 * (bin/previewCommand.ts READ_ONLY): nothing is written to the daemon's backend and no lock is
 * taken. Every run's workspace lives in a directory of the caller's, removed when the run ends.
 */
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import * as v8 from "node:v8";
import * as vm from "node:vm";
import {
  LocalWorkspace,
  PulumiCommand,
  type InlineProgramArgs,
  type Stack,
  type StepEventMetadata,
} from "@pulumi/pulumi/automation";
import { hashOf } from "../model/desiredCache";
import { stepListener } from "./events";
import { StackReader } from "./reader";
import { localBackendUrl } from "./backend";
import { currentRunStore, letGoOfRunStore } from "./runStore";
import { workspaceOptions } from "./workspaces";

export interface PreviewEngineOptions {
  /** The daemon's backend. */
  backendUrl: string;
  /** The daemon's project (`dccm-<clusterId>`). */
  projectName: string;
  /** Our temporary directory: workspaces, and the empty backend of new stacks. */
  workDir: string;
}

/**
 * One engine run of a preview: the stack of the backend it previews (`update`, `destroy`), or new
 * stacks previewed together (`creates`).
 */
export type PreviewRun = { kind: "update" | "destroy"; stack: string } | { kind: "creates"; stacks: readonly string[] };

export class PreviewEngine {
  /** The reader of the daemon's stacks (listing, exports), its workspace beside the runs'. */
  readonly reader: StackReader;

  private constructor(
    private readonly options: PreviewEngineOptions,
    /** The pulumi CLI on PATH, checked once for every workspace (each would run `pulumi version`). */
    private readonly pulumiCommand: PulumiCommand,
  ) {
    this.reader = new StackReader({
      backendUrl: options.backendUrl,
      projectName: options.projectName,
      env: {},
      workDir: path.join(options.workDir, "list"),
      pulumiCommand,
    });
  }

  /** Rejects when the pulumi CLI cannot be run: a preview needs it. */
  static async open(options: PreviewEngineOptions): Promise<PreviewEngine> {
    return new PreviewEngine(options, await PulumiCommand.get());
  }

  /**
   * One engine run, telling `onStep` of each step: `program` declares what the stacks would (one
   * stack's outputs, as its up records them; a run of new stacks together records nothing anyone
   * reads). What the run kept (the SDK's store, its workspace and empty backend) is let go when it
   * ends: 1,000 stacks cost what one does.
   */
  async run(
    run: PreviewRun,
    program: () => Record<string, unknown>,
    onStep: (metadata: StepEventMetadata) => void,
  ): Promise<void> {
    const onEvent = stepListener(onStep);
    const stacks = run.kind === "creates" ? run.stacks : [run.stack];
    const held: { store?: Record<string, unknown> } = {};
    // The temporary stack of new stacks: `new-` and a hash, within Pulumi's 100 characters whatever the first stack's name.
    const stackName = run.kind === "creates" ? `new-${hashOf(stacks[0])}` : run.stack;
    const args: InlineProgramArgs = {
      stackName,
      projectName: this.options.projectName,
      program: () => {
        held.store = currentRunStore();
        return Promise.resolve(program());
      },
    };
    try {
      if (run.kind === "creates") {
        await (await this.newStack(args)).preview({ onEvent });
      } else {
        const stack = await LocalWorkspace.selectStack(
          run.kind === "destroy" ? { ...args, program: () => Promise.resolve({}) } : args,
          this.workspace(stackName, this.options.backendUrl),
        );
        await (run.kind === "destroy" ? stack.previewDestroy({ onEvent }) : stack.preview({ onEvent }));
      }
      // The SDK keeps each inline run's store for the life of the process (stacks/runStore.ts).
      letGoOfRunStore(held.store);
    } catch (error) {
      throw new Error(
        `pulumi preview of ${stacks.length === 1 ? "stack" : "the new stacks"} ${stacks.join(", ")} failed`,
        { cause: error },
      );
    } finally {
      for (const dir of [
        this.workspaceDir(stackName),
        this.workspaceDir(`new-${stackName}`),
        path.join(this.options.workDir, "empty-backend", stackName),
      ]) {
        fs.rmSync(dir, { recursive: true, force: true });
      }
      // V8 collects lazily while memory is plentiful: each run's garbage (its program's resources and
      // outputs, the gRPC messages) would raise the heap run after run, to 663 MB at 500 new Services
      // where what stays alive between runs is ~70 MB (docs/development/benchmarks.md). A full collection after
      // each run starts the next from what is alive.
      collectGarbage();
    }
  }

  private workspaceDir(stack: string): string {
    return path.join(this.options.workDir, "workspaces", stack);
  }

  private workspace(
    stack: string,
    backendUrl: string,
    env: Record<string, string> = {},
  ): ReturnType<typeof workspaceOptions> {
    return workspaceOptions(this.workspaceDir(stack), {
      backendUrl,
      projectName: this.options.projectName,
      env,
      pulumiCommand: this.pulumiCommand,
    });
  }

  /** New stacks, previewed in an empty backend of ours: selecting them in the real one would create them. */
  private newStack(args: InlineProgramArgs): Promise<Stack> {
    const backendDir = path.join(this.options.workDir, "empty-backend", args.stackName);
    fs.mkdirSync(backendDir, { recursive: true });
    // Nothing is encrypted there that anyone reads again: a throwaway passphrase.
    const env = { PULUMI_CONFIG_PASSPHRASE: crypto.randomBytes(16).toString("hex") };
    return LocalWorkspace.createStack(args, {
      ...this.workspace(`new-${args.stackName}`, localBackendUrl(backendDir), env),
      secretsProvider: "passphrase",
    });
  }
}

/**
 * A full garbage collection now, as `--expose-gc`'s `gc()` does, without that flag on the command
 * line (the process's own `gc` when it has one): the flag is set for one new context, whose global
 * `gc` is kept, then unset again so no program sees a `gc` it was not started with
 * (jest-leak-detector gets its `gc` the same way).
 */
let fullCollection: (() => void) | undefined;
export function collectGarbage(): void {
  fullCollection ??= (globalThis as { gc?: () => void }).gc;
  if (fullCollection === undefined) {
    v8.setFlagsFromString("--expose-gc");
    fullCollection = vm.runInNewContext("gc") as () => void;
    v8.setFlagsFromString("--no-expose-gc");
  }
  fullCollection();
}
