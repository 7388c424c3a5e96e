/**
 * The whole offline environment for end-to-end tests: a real kube-apiserver and etcd, the GCE
 * emulator, and the environment that makes the real Pulumi engine (from .testenv/bin) use it.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { PulumiCommand } from "@pulumi/pulumi/automation";
import pino from "pino";

import type { Config } from "../../../model";
import {
  pluginBinDir,
  realisticLimits,
  startGceEmulator,
  type GceEmulator,
  type GceEmulatorOptions,
  type GceLimitsOptions,
  type NetworkSpec,
} from "../../../emulator/gce";
import { startKube, type KubeEnv, type StartKubeOptions } from "./kube";
import { requireTestenvBinary, testenvBinDir } from "../tooling/testenv-paths";
import { fakeGcsLogDir, startFakeGcs, type FakeGcs } from "./gcs";
import type { DaemonOptions } from "../../../daemon/options";

/**
 * Where a test environment keeps Pulumi state: `file` (a directory under its temporary directory)
 * or `gs` (a bucket of fake-gcs-server, as production keeps it: test/support/e2e/gcs.ts).
 */
export type E2eBackend = "file" | "gs";

/**
 * The backend of a suite: the one it declares, unless DCCM_E2E_BACKEND (`file` or `gs`) runs every
 * suite on one backend. docs/development/tests.md says which suites declare gs.
 */
export function e2eBackend(declared: E2eBackend): E2eBackend {
  const forced = process.env.DCCM_E2E_BACKEND;
  if (forced === undefined || forced === "") return declared;
  if (forced !== "file" && forced !== "gs") throw new Error(`DCCM_E2E_BACKEND=${forced}: expected file or gs`);
  return forced;
}

export interface TestEnv {
  kube: KubeEnv;
  gce: GceEmulator;
  /** Temporary directory for Pulumi state, workspaces and PULUMI_HOME. */
  dir: string;
  backend: E2eBackend;
  /** `file://` backend under `dir`, or `gs://` of the fake-gcs-server bucket. */
  backendUrl: string;
  /** The fake-gcs-server of a gs:// environment. */
  gcs?: FakeGcs;
  /** Environment for the pulumi CLI: emulator plugin and .testenv/bin on PATH, passphrase, home. */
  pulumiEnv: Record<string, string>;
  /** The pulumi CLI of .testenv/bin, for the Automation API. */
  pulumiCommand: PulumiCommand;
  stop(): Promise<void>;
}

/**
 * Daemon options for the offline environment (real apiserver, engine, emulator) with test-speed
 * timings; callers override what they measure.
 */
export function daemonOptions(
  env: TestEnv,
  config: Config,
  overrides: Partial<DaemonOptions> & { logLevel?: string },
): DaemonOptions {
  const { logLevel, ...rest } = overrides;
  return {
    kubeConfig: env.kube.kubeConfig,
    config,
    logger: pino({ level: logLevel ?? "warn" }, pino.destination(path.join(env.dir, "daemon.log"))),
    stateDir: path.join(env.dir, "state"),
    backendUrl: env.backendUrl,
    pulumiEnv: env.pulumiEnv,
    pulumiCommand: env.pulumiCommand,
    listenHost: "127.0.0.1",
    listenPort: 0,
    parallelism: 4,
    driftMs: 3_600_000,
    driftJitter: 0,
    backoffBaseMs: 1000,
    backoffMaxMs: 10_000,
    resyncMs: 600_000,
    debounceMs: 50,
    leaderElection: true,
    identity: "dccm-e2e",
    operationTimeoutMs: 600_000,
    maxOrphanDestroys: 5,
    confirmOrphanDestroys: 0,
    ...rest,
  };
}

export const TEST_PASSPHRASE = "dccm-e2e-passphrase";

/**
 * The VPC of the e2e cluster (config network `k8s-net`): custom mode, as production clusters
 * usually are, with the nodes' subnetwork and the one internal Services of the fixtures name.
 * Instances are seeded on it, so that the instance groups (on `k8s-net`) hold instances of their
 * own network, as GCE requires.
 */
export const E2E_NETWORKS: readonly NetworkSpec[] = [
  { name: "default", autoCreateSubnetworks: true },
  {
    name: "k8s-net",
    autoCreateSubnetworks: false,
    subnetworks: [
      { name: "k8s-subnet", ipCidrRange: "10.128.0.0/20" },
      { name: "ilb-subnet", ipCidrRange: "10.129.0.0/20" },
    ],
  },
];

/**
 * The realistic profile (`DCCM_E2E_GCE_PROFILE=realistic`, `npm run test:e2e:realistic`): GCE's
 * quotas and per-minute rate quotas at their defaults, and operations that take GCE's time scaled
 * by REALISTIC_SCALE (a forwarding rule 1.5 s instead of 15 s), so that a suite of many Services
 * stays within CI's time while every create, update and delete still waits out a running operation.
 */
export const REALISTIC_SCALE = 0.1;

/** The emulator's limits for this run: the realistic profile when asked for, else none. */
export function profileLimits(env: NodeJS.ProcessEnv = process.env): GceLimitsOptions | undefined {
  const profile = env.DCCM_E2E_GCE_PROFILE ?? "";
  if (profile === "") return undefined;
  if (profile === "realistic") return realisticLimits(REALISTIC_SCALE);
  throw new Error(`DCCM_E2E_GCE_PROFILE: unknown profile ${JSON.stringify(profile)} (known: realistic)`);
}

/**
 * `backend`: where the stacks live (default `file`; e2eBackend lets DCCM_E2E_BACKEND override it).
 */
export async function startTestEnv(
  opts: { gce?: GceEmulatorOptions; withKube?: boolean; kube?: StartKubeOptions; backend?: E2eBackend } = {},
): Promise<TestEnv> {
  requireTestenvBinary("pulumi");
  requireTestenvBinary("pulumi-language-nodejs");
  const backend = e2eBackend(opts.backend ?? "file");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-e2e-"));
  const limits = profileLimits();
  const gce = await startGceEmulator({
    networks: E2E_NETWORKS,
    instanceNetwork: "k8s-net",
    ...(limits === undefined ? {} : { limits }),
    ...opts.gce,
  });
  let kube: KubeEnv | undefined;
  let gcs: FakeGcs | undefined;
  try {
    if (backend === "gs") gcs = await startFakeGcs(fakeGcsLogDir(dir));
    if (opts.withKube !== false) kube = await startKube(opts.kube);
  } catch (error) {
    await Promise.allSettled([gce.stop(), gcs?.stop()]);
    throw error;
  }
  const backendDir = path.join(dir, "backend");
  fs.mkdirSync(backendDir, { recursive: true });
  fs.mkdirSync(path.join(dir, "pulumi-home"), { recursive: true });
  const backendUrl = gcs !== undefined ? gcs.backendUrl("dccm") : `file://${backendDir}`;
  const pulumiEnv: Record<string, string> = {
    ...gce.env,
    ...gcs?.env,
    PATH: [pluginBinDir(), testenvBinDir(), process.env.PATH ?? ""]
      .filter((entry) => entry !== "")
      .join(path.delimiter),
    PULUMI_HOME: path.join(dir, "pulumi-home"),
    PULUMI_CONFIG_PASSPHRASE: TEST_PASSPHRASE,
    PULUMI_BACKEND_URL: backendUrl,
    PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK: "true",
  };
  const pulumiCommand = await PulumiCommand.get({ root: path.dirname(testenvBinDir()), skipVersionCheck: true });
  return {
    pulumiCommand,
    kube: kube as KubeEnv,
    gce,
    dir,
    backend,
    backendUrl,
    ...(gcs !== undefined ? { gcs } : {}),
    pulumiEnv,
    async stop(): Promise<void> {
      await Promise.allSettled([gce.stop(), kube?.stop(), gcs?.stop()]);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
