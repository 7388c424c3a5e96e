/** The one in-memory StackRunner of the unit tests: what the stack controllers ask of stacks/runner.ts, recorded. */
import type { ServiceControllerDeps } from "../../../controllers/service/controller";
import type { StackRunsDeps } from "../../../controllers/stackRuns";
import { instanceGroupKey, type DesiredState, type Scope } from "../../../model";
import type { Inspection, UpOutcome } from "../../../stacks/runner";

type Runner = StackRunsDeps["runner"] & ServiceControllerDeps["runner"];
type UpOptions = Parameters<Runner["up"]>[3];
type PreviewOptions = Parameters<NonNullable<Runner["preview"]>>[3];

export type StackOperation = "inspect" | "ensureStack" | "up" | "preview" | "destroy" | "removeStack";

export interface MemoryStackRunnerOptions {
  /** Where the calls are recorded, shared with the harness's other fakes to keep one order. */
  calls?: string[];
  /** A call's line in `calls`, or undefined to leave it out; default `<operation> <stack>`. */
  record?: (operation: StackOperation, stack: string, options?: { refresh?: boolean }) => string | undefined;
  /** What `inspect` reads besides no adoption: default no hash, no outputs, no cluster recorded. */
  inspect?: (stack: string) => Partial<Omit<Inspection, "recovered">>;
  /** What an `up` reports (called after it is recorded; may throw); default `clusterNetworkOutcome`. */
  up?: (stack: string, desired: DesiredState, options: UpOptions) => UpOutcome | Promise<UpOutcome>;
  /** A `preview`, given only when the runner previews (plans and repairs need one). */
  preview?: (stack: string, desired: DesiredState, options: PreviewOptions) => void | Promise<void>;
  destroy?: (stack: string) => "destroyed" | "absent";
}

/** The cluster stack's outputs as components/clusterNetwork.ts gives them; nothing for a Service stack; no changes. */
export function clusterNetworkOutcome(stack: string, desired: DesiredState): UpOutcome {
  const groups = Object.fromEntries(
    desired.cluster.instanceGroups.map((group) => [instanceGroupKey(group), `ig-${group.zone}`]),
  );
  const members = Object.fromEntries(
    desired.cluster.instanceGroups.map((group) => [`${group.zone}/${group.name}`, group.instances]),
  );
  return {
    outputs: stack === "cluster" ? { instanceGroups: groups, instanceGroupMembers: members, routes: {} } : {},
    changed: [],
  };
}

export function memoryStackRunner(options: MemoryStackRunnerOptions = {}): Runner {
  const calls = options.calls ?? [];
  const record = (operation: StackOperation, stack: string, opts?: { refresh?: boolean }): void => {
    const line = options.record === undefined ? `${operation} ${stack}` : options.record(operation, stack, opts);
    if (line !== undefined) calls.push(line);
  };
  const runner: Runner = {
    async inspect(stack: string, _scope: Scope): Promise<Inspection> {
      record("inspect", stack);
      return { hash: undefined, outputs: {}, clusterUid: undefined, ...options.inspect?.(stack), recovered: [] };
    },
    async ensureStack(stack: string): Promise<void> {
      record("ensureStack", stack);
    },
    async up(stack: string, _scope: Scope, desired: DesiredState, opts: UpOptions): Promise<UpOutcome> {
      record("up", stack, opts);
      return (options.up ?? clusterNetworkOutcome)(stack, desired, opts);
    },
    async destroy(stack: string): Promise<"destroyed" | "absent"> {
      record("destroy", stack);
      return options.destroy?.(stack) ?? "destroyed";
    },
    async removeStack(stack: string): Promise<void> {
      record("removeStack", stack);
    },
  };
  const preview = options.preview;
  if (preview === undefined) return runner;
  return {
    ...runner,
    async preview(stack: string, _scope: Scope, desired: DesiredState, opts: PreviewOptions): Promise<void> {
      record("preview", stack, opts);
      await preview(stack, desired, opts);
    },
  };
}
