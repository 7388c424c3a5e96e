/** What a Daemon is built from: `daemonOptions` (daemon/config.ts) makes it from the settings. */
import * as k8s from "@kubernetes/client-node";
import { Config } from "../model";
import { Logger } from "pino";
import { DaemonMetrics } from "./metrics";
import type { PulumiCommand } from "../stacks/workspaces";
import { NodeConfig } from "../controllers/node/config";

export interface DaemonOptions {
  kubeConfig: k8s.KubeConfig;
  config: Config;
  logger: Logger;
  /** Where workspaces and (by default) the file:// backend live. */
  stateDir: string;
  /** Resolved once, by daemonOptions (daemon/config.ts, the rule of stacks/backend.ts). */
  backendUrl: string;
  secretsProvider?: string;
  /** Extra environment for the pulumi CLI (the offline environment's, for instance). */
  pulumiEnv: Record<string, string>;
  listenHost: string;
  listenPort: number;
  parallelism: number;
  /** The drift pass by listing (drift/scanner.ts) runs this often; without listing, the full refresh does. */
  driftMs: number;
  driftJitter: number;
  /**
   * The full refresh (`up --refresh`) of every stack, spread over this period; driftMs when the
   * drift pass by listing is off.
   */
  fullRefreshMs?: number;
  /** Drift found by listing GCE every drift interval (drift/scanner.ts); off when undefined. */
  driftListing?: { computeEndpoint?: string };
  backoffBaseMs: number;
  backoffMaxMs: number;
  resyncMs: number;
  /** Debounce of watch events before the desired state is recomputed. */
  debounceMs: number;
  leaderElection: boolean;
  identity: string;
  metrics?: DaemonMetrics;
  pulumiCommand?: PulumiCommand;
  onRunStart?: (stack: string, operation: "up" | "refresh" | "preview" | "destroy") => void;
  /** Node initialization and lifecycle; off when undefined. */
  nodes?: NodeConfig;
  /** Deadline of one pulumi operation (up, refresh, destroy); past it the run is cancelled and retried. */
  operationTimeoutMs: number;
  /** Destroys of stacks whose Service is absent, above which they wait for an operator (see holdOrphanDestroys). */
  maxOrphanDestroys: number;
  /** How many held orphan destroys an operator allowed (`--confirm-orphan-destroys N`). */
  confirmOrphanDestroys: number;
  /** Leak checks at start-up and every drift interval (leaks/monitor.ts); off when undefined. */
  leakCheck?: { computeEndpoint?: string };
  /** `--adopt`: the stock CCM's resources adopted at start-up, before the first runs (adopt/); off when undefined. */
  adopt?: { allowReplace: boolean; computeEndpoint?: string };
  /** `--shared-provider`: one `gcp` provider plugin for every engine run (stacks/sharedProvider.ts). */
  sharedProvider?: boolean;
  /**
   * Before a Service stack's first up, GCE is asked what exists under its load balancer's names
   * (controllers/service/existingLoadBalancer.ts); off when undefined (the first up then runs unchecked).
   */
  firstUpGuard?: { computeEndpoint?: string };
  /**
   * The NEG controller (controllers/neg/): the endpoints of `neg` Services' NEGs, through Compute,
   * on every change and every drift interval; off when undefined (their NEGs then stay empty).
   */
  negEndpoints?: { computeEndpoint?: string };
}
