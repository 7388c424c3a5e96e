// GCE emulator: one in-memory model of the Compute resources dccm uses, with an HTTP
// face (Compute v1 REST reads + /emulator/ test endpoints) and a Pulumi provider face (the
// `pulumi-resource-gcp` plugin in ./bin, which the real Pulumi engine runs and which forwards to
// this emulator).
//
//   const gce = await startGceEmulator();              // in mocha `before`
//   await stack.workspace... envVars: { ...gce.env }   // a Pulumi engine now uses the emulator
//   gce.putInstance("node-1", { zone: "us-central1-a" });
//   gce.listResources();                               // [{ kind, project, scope, name, properties }]
//   await gce.stop();                                  // in mocha `after`
//
// How the engine finds the plugin without downloading anything: `env.PATH` starts with
// emulator/gce/bin, which holds an executable named `pulumi-resource-gcp`. The engine
// (pulumi 3.248, sdk/go/common/workspace/plugins.go getPluginInfoAndPath) prefers such an
// "ambient" plugin on $PATH over the plugin cache, whatever version the program asks for,
// unless PULUMI_IGNORE_AMBIENT_PLUGINS is true (env sets it to false explicitly). It prints
// the warning "using pulumi-resource-gcp from $PATH at ...".

import * as fs from "node:fs";
import * as path from "node:path";

import { HttpFace, listen, type ResourceListing, toListing } from "./http";
import type { JsonObject } from "./json";
import { kindOf } from "./kinds";
import { GceLimits, type GceLimitsOptions } from "./limits";
import { ProviderApi } from "./provider-api";
import { GceError } from "./errors";
import type { FaultSpec } from "./faults";
import type { InstanceSpec } from "./instances";
import type { NetworkSpec } from "./networks";
import { GceState } from "./state";
import type { HistoryEntry, ResourceKey, StoredResource } from "./store";

export type { ResourceListing } from "./http";
export type { Json, JsonObject } from "./json";
export type { GceKind } from "./kinds";
export type { FaultOperation, FaultSpec } from "./faults";
export type { InstanceSpec, NetworkInterfaceSpec } from "./instances";
export type { NetworkSpec, SubnetworkSpec } from "./networks";
export type { OutOfBandWhere } from "./state";
export type { HistoryEntry, ResourceKey, StoredResource } from "./store";
export { GceError } from "./errors";
export { GceState } from "./state";
export { ProviderApi } from "./provider-api";
export { GceLimits, realisticLimits, RATE_GROUPS } from "./limits";
export type { GceLimitsOptions, LimitCounts, QuotaName, RateGroup } from "./limits";

export interface GceEmulatorOptions {
  /** Default `dccm-test`. */
  readonly project?: string;
  /** Default `us-central1`. */
  readonly region?: string;
  /** Default `<region>-a`, `-b`, `-c`. */
  readonly zones?: readonly string[];
  /** Port for the HTTP face; default a free one. */
  readonly port?: number;
  /** Clock for creationTimestamp; default the real clock. */
  readonly now?: () => Date;
  /** VPC networks; default the `default` auto-mode network of a new project. */
  readonly networks?: readonly NetworkSpec[];
  /** Network of seeded instances that name none; default `default`. */
  readonly instanceNetwork?: string;
  /**
   * TEST ONLY: instances one instance group may hold; default GCE's documented 1,000
   * (rules/instanceGroups.ts INSTANCE_GROUP_MAX_INSTANCES). Lowered to prove at small scale what a zone beyond
   * the limit does; never a way to make a test pass.
   */
  readonly instanceGroupMaxInstances?: number;
  /**
   * GCE's timing and limits (limits.ts): operation latency per kind, project quotas, per-minute
   * rate quotas. Default none: every operation DONE at once, nothing limited.
   */
  readonly limits?: GceLimitsOptions;
}

export interface GceEmulator {
  /** `http://127.0.0.1:PORT` */
  readonly endpoint: string;
  /** `${endpoint}/compute/v1/`: the base path for a Compute client. */
  readonly computeEndpoint: string;
  /** What a Pulumi engine process needs in its environment to use the emulator. */
  readonly env: Readonly<Record<string, string>>;
  readonly state: GceState;
  /** The timing and limits in force; `limits.counts()` says how often each refused. */
  readonly limits: GceLimits;
  readonly project: string;
  readonly region: string;
  readonly zones: readonly string[];
  /** Creates or replaces an instance; zone defaults to the first zone, project to the default. */
  putInstance(
    name: string,
    spec?: InstanceSpec & { readonly zone?: string; readonly project?: string },
  ): StoredResource;
  /** A stop, start, suspend or resume: only the instance's status changes (zone defaults to the first zone). */
  setInstanceStatus(
    name: string,
    status: string,
    where?: { readonly zone?: string; readonly project?: string },
  ): StoredResource;
  /** Creates or replaces a VPC network and its subnetworks. */
  putNetwork(spec: NetworkSpec): void;
  /** Makes `host` a Shared VPC host project and attaches each of `services` to it (networks.ts). */
  shareVpc(host: string, services: readonly string[]): void;
  /** Everything the emulator holds (instances included), sorted by kind, project, scope, name. */
  listResources(): ResourceListing[];
  /**
   * Deletes a resource behind Pulumi's back (no in-use rules, no faults). `kind` is a GceKind or a
   * Pulumi type token; project/scope default to the only match in the default project.
   */
  deleteOutOfBand(kind: string, name: string, where?: { readonly project?: string; readonly scope?: string }): void;
  /**
   * Creates a resource as another tool calling the Compute API would (the stock CCM, gcloud): GCE's
   * rules of a create (names, 409, references, IP allocation), no faults, not through Pulumi.
   * `kind` is a GceKind or a Pulumi type token; `properties` use its @pulumi/gcp input names (name
   * included), as `listResources()` shows them; `where` defaults to the emulator's project and
   * region (first zone for zonal kinds, "global" for global ones).
   */
  insertOutOfBand(
    kind: string,
    properties: JsonObject,
    where?: { readonly project?: string; readonly scope?: string },
  ): ResourceListing;
  /** Every create, update and delete so far, through any face, oldest first (`at`: ms since the epoch). */
  history(): HistoryEntry[];
  clearHistory(): void;
  /** Changes properties behind Pulumi's back (null removes one). */
  patchOutOfBand(
    kind: string,
    name: string,
    patch: JsonObject,
    where?: { readonly project?: string; readonly scope?: string },
  ): StoredResource;
  /** The next matching operation(s) fail with this status and message. */
  injectFault(fault: FaultSpec): void;
  /** Counted calls per `METHOD /path/{pattern}` (Compute REST and /emulator/provider/*). */
  calls(): Record<string, number>;
  resetCalls(): void;
  stop(): Promise<void>;
}

/** Directory holding the `pulumi-resource-gcp` shim (source tree: tsc does not copy it to dist). */
export function pluginBinDir(): string {
  // Compiled to dist/emulator/gce/index.js; the repository root is three levels up.
  return path.resolve(__dirname, "..", "..", "..", "emulator", "gce", "bin");
}

/** Absolute path of the compiled plugin program. */
export function pluginProgram(): string {
  return path.join(__dirname, "provider.js");
}

export const PLUGIN_VERSION = "9.37.0";

export async function startGceEmulator(opts: GceEmulatorOptions = {}): Promise<GceEmulator> {
  const project = opts.project ?? "dccm-test";
  const region = opts.region ?? "us-central1";
  const zones = [...(opts.zones ?? [`${region}-a`, `${region}-b`, `${region}-c`])];

  const shim = path.join(pluginBinDir(), "pulumi-resource-gcp");
  try {
    fs.accessSync(shim, fs.constants.X_OK);
    fs.accessSync(pluginProgram(), fs.constants.R_OK);
  } catch (cause) {
    throw new Error(`GCE emulator: the plugin shim ${shim} must be executable and ${pluginProgram()} built (npx tsc)`, {
      cause,
    });
  }

  const handle = await listen(opts.port ?? 0);
  const state = new GceState({
    endpoint: handle.endpoint,
    project,
    region,
    zones,
    ...(opts.now ? { now: opts.now } : {}),
    ...(opts.networks ? { networks: opts.networks } : {}),
    ...(opts.instanceNetwork ? { instanceNetwork: opts.instanceNetwork } : {}),
    ...(opts.instanceGroupMaxInstances !== undefined
      ? { instanceGroupMaxInstances: opts.instanceGroupMaxInstances }
      : {}),
  });
  const limits = new GceLimits(opts.limits);
  state.setCreateGuard((key, properties, existing) => limits.checkQuota(key, properties, existing));
  const face = new HttpFace(state, new ProviderApi(state), limits);
  handle.server.on("request", face.listener);

  const env: Record<string, string> = {
    PATH: [pluginBinDir(), process.env.PATH ?? ""].filter((p) => p !== "").join(path.delimiter),
    DCCM_GCE_EMULATOR_URL: handle.endpoint,
    PULUMI_IGNORE_AMBIENT_PLUGINS: "false",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    PULUMI_SKIP_UPDATE_CHECK: "true",
  };

  const locate = (kind: string, name: string, where: { project?: string; scope?: string } = {}): ResourceKey => {
    const k = kindOf(kind);
    const p = where.project ?? project;
    const matches = state
      .list({ kind: k, project: p, ...(where.scope === undefined ? {} : { scope: where.scope }) })
      .filter((r) => r.name === name);
    const first = matches[0];
    if (first === undefined) {
      throw new GceError(404, `The resource '${k}/${name}' in project ${p} was not found`, "notFound");
    }
    if (matches.length > 1) {
      throw new Error(
        `${k}/${name} exists in several scopes (${matches.map((m) => m.scope).join(", ")}): pass where.scope`,
      );
    }
    return first;
  };

  let stopped: Promise<void> | undefined;
  return {
    endpoint: handle.endpoint,
    computeEndpoint: `${handle.endpoint}/compute/v1/`,
    env,
    state,
    limits,
    project,
    region,
    zones,
    putInstance: (name, spec = {}) => {
      const { zone, project: p, ...rest } = spec;
      return state.putInstance(p ?? project, zone ?? zones[0] ?? `${region}-a`, name, rest);
    },
    setInstanceStatus: (name, status, where = {}) =>
      state.setInstanceStatus(where.project ?? project, where.zone ?? zones[0] ?? `${region}-a`, name, status),
    putNetwork: (spec) => state.putNetwork(spec),
    shareVpc: (host, services) => {
      state.enableXpnHost(host);
      for (const service of services) state.enableXpnResource(host, service);
    },
    listResources: () => state.list().map(toListing),
    deleteOutOfBand: (kind, name, where) => state.deleteOutOfBand(locate(kind, name, where)),
    patchOutOfBand: (kind, name, patch, where) => state.patchOutOfBand(locate(kind, name, where), patch),
    insertOutOfBand: (kind, properties, where) => toListing(state.insertOutOfBand(kind, properties, where)),
    history: () => state.history(),
    clearHistory: () => state.clearHistory(),
    injectFault: (fault) => state.injectFault(fault),
    calls: () => face.calls(),
    resetCalls: () => face.resetCalls(),
    stop: () => {
      stopped ??= handle.close();
      return stopped;
    },
  };
}
