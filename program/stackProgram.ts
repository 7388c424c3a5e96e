/**
 * The stack program run by `pulumi preview` / `pulumi up`, `dccm render` and the daemon: Pulumi
 * config (and the snapshot or live cluster it names) → desired state → the scope's resources.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { declareStack, type DeclaredStack, type StackOutputs } from "../components/stack";

import { CONFIG_KEYS, desiredState, parseConfig, type DesiredState, type RawConfig } from "../model";
import { snapshotFromKubectlJson, type DumpContents } from "../watcher/kubectlDump";
import { listCluster, loadKubeConfig } from "../watcher/list";
import { chunkOf, parseProgramScope, type ProgramScope } from "./scope";
import { stackSlice } from "../components/outputs";

/**
 * A relative `dccm:snapshot` is relative to the Pulumi project (where Pulumi.yaml and the stack's
 * config live), not to the language host's cwd, which is the program's directory. Outside the
 * language host (render's mocks) there is no project directory and the cwd is the reference.
 */
export function snapshotFile(snapshot: string, projectDirectory: string): string {
  return path.isAbsolute(projectDirectory) ? path.resolve(projectDirectory, snapshot) : path.resolve(snapshot);
}

async function readInput(config: pulumi.Config): Promise<DumpContents> {
  const snapshot = config.get("snapshot");
  if (snapshot !== undefined && snapshot !== "") {
    const snapshotPath = snapshotFile(snapshot, pulumi.runtime.getRootDirectory());
    let text: string;
    try {
      text = await fs.promises.readFile(snapshotPath, "utf8");
    } catch (error) {
      throw new ProgramInputError(`dccm:snapshot: cannot read ${snapshotPath}: ${errorMessage(error)}`, {
        cause: error,
      });
    }
    return snapshotFromKubectlJson(text, snapshotPath);
  }
  return listCluster(loadKubeConfig(config.get("kubeconfig")));
}

/**
 * The program's own default where it differs from the daemon's: `addressReservation: always`. A
 * `pulumi up` from CI is one run with no Compute client, so it cannot reserve a forwarding rule's
 * ephemeral IP before replacing the rule, as the daemon does (controllers/service/addressPins.ts):
 * without a reservation for life, a change replacing a rule would take a new IP. An explicit
 * `transient` is honoured.
 */
export function withProgramDefaults(raw: RawConfig): RawConfig {
  return raw.addressReservation === undefined ? { ...raw, addressReservation: "always" } : raw;
}

function rawConfig(config: pulumi.Config, clusterIdFromCluster: string | undefined): RawConfig {
  const raw: RawConfig = {};
  for (const key of CONFIG_KEYS) {
    const value = config.get(key);
    if (value === undefined) continue;
    // Lists may be given as JSON arrays (pulumi config set --path) or comma-separated strings.
    raw[key] = value.startsWith("[") ? (JSON.parse(value) as unknown) : value;
  }
  if (raw.clusterId === undefined && clusterIdFromCluster !== undefined) raw.clusterId = clusterIdFromCluster;
  return withProgramDefaults(raw);
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Bad program input (config, snapshot): a RunError, which the engine prints without a stack trace,
 * keeping what caused it.
 */
export class ProgramInputError extends pulumi.RunError {
  constructor(message: string, options: { cause: unknown }) {
    super(message);
    this.name = "ProgramInputError";
    this.cause = options.cause;
  }
}

/** The run failed only because some Services are invalid; everything valid was declared. */
export class RejectedServicesError extends pulumi.RunError {
  constructor(readonly messages: string[]) {
    super(messages.join("\n"));
    this.name = "RejectedServicesError";
  }
}

/** Resolves once every value is known (after creation in `up`), so a later error cannot pre-empt them. */
function settled(values: pulumi.Output<unknown>[]): Promise<void> {
  return new Promise((resolve) => {
    pulumi.all(values).apply(() => resolve());
  });
}

/**
 * A chunk of the Services: each declared as its own stack declares it (from its slice, referring to
 * the cluster's resources by name), and the chunk's rejections reported as scope `all` reports them.
 */
export function declareChunk(desired: DesiredState, index: number, count: number): DeclaredStack {
  const outputs: StackOutputs = { loadBalancers: {}, instanceGroups: {}, routes: {} };
  for (const service of desired.services) {
    if (chunkOf(service.key, count) !== index) continue;
    const scope = { kind: "service", namespace: service.namespace, name: service.name } as const;
    Object.assign(
      outputs.loadBalancers,
      declareStack(stackSlice(desired, scope), scope, undefined, undefined, "stack").outputs.loadBalancers,
    );
  }
  return { outputs, rejected: desired.rejected.filter((rejection) => chunkOf(rejection.service, count) === index) };
}

function declareScope(desired: DesiredState, scope: ProgramScope): DeclaredStack {
  // No daemon, no NEG controller: the stacks keep the NEGs' endpoints.
  return scope.kind === "services"
    ? declareChunk(desired, scope.index, scope.count)
    : declareStack(desired, scope, undefined, undefined, "stack");
}

export async function stackProgram(): Promise<Record<string, unknown>> {
  const config = new pulumi.Config("dccm");
  const scope = parseProgramScope(config.get("scope"));
  const input = await readInput(config);
  let settings;
  try {
    settings = parseConfig(rawConfig(config, input.clusterId));
  } catch (error) {
    throw new ProgramInputError(`dccm: ${errorMessage(error)}`, { cause: error });
  }
  const desired = desiredState(input.snapshot, settings);
  const { outputs, rejected } = declareScope(desired, scope);
  if (rejected.length > 0) {
    if (!pulumi.runtime.isDryRun())
      await settled([...Object.values(outputs.loadBalancers), ...Object.values(outputs.instanceGroups)]);
    // A failed program makes the engine skip deletes: a Service that turned invalid keeps its load balancer.
    throw new RejectedServicesError(rejected.map((rejection) => rejection.message));
  }
  return { ...outputs };
}
