/**
 * The daemon's one worker: every queue key is a stack, parsed once into the cluster stack or a
 * Service's stack and handed to its controller (controllers/cluster/controller.ts,
 * controllers/service/controller.ts). The controllers, the stack records they share and their runs
 * are built by the daemon's wiring (daemon/wiring.ts), each from what it uses; here they are only
 * dispatched to.
 */
import type { Logger } from "pino";
import { CLUSTER_STACK, parseServiceStack } from "../model";
import type { ReconcileResult, WorkItem } from "../runtime/queue";
import type { ClusterController } from "./cluster/controller";
import type { ControllerMetrics } from "./metrics";
import type { ServiceController } from "./service/controller";
import type { FullRefreshTimers } from "./fullRefresh";
import { ForeignStackError } from "../stacks/errors";

export interface ReconcilerDeps {
  cluster: Pick<ClusterController, "sync" | "verify">;
  services: Pick<ServiceController, "sync">;
  /** The full refresh timers the controllers arm: stopped with the reconciler. */
  drift: Pick<FullRefreshTimers, "stop">;
  metrics: Pick<ControllerMetrics, "foreignStacks">;
  logger: Logger;
  /**
   * Stacks `--adopt` could not adopt (a replace not allowed, a failure) → why: never run until the
   * next start, since their first up would create what exists under their names (GCE: 409) or
   * replace what the operator did not allow.
   */
  adoptionHeld?: ReadonlyMap<string, string>;
  /** A Service stack's Service, shortened names included (stacks/stackKeys.ts); absent: what the name says (parseServiceStack). */
  serviceOf?: (stack: string) => { namespace: string; name: string } | undefined;
}

/** A queue key, parsed once. */
export type StackKey = { kind: "cluster" } | { kind: "service"; namespace: string; name: string };

export function parseStackKey(
  key: string,
  serviceOf: (stack: string) => { namespace: string; name: string } | undefined = parseServiceStack,
): StackKey | undefined {
  if (key === CLUSTER_STACK) return { kind: "cluster" };
  const ref = serviceOf(key);
  return ref === undefined ? undefined : { kind: "service", ...ref };
}

export class Reconciler {
  constructor(private readonly deps: ReconcilerDeps) {}

  async reconcile(item: WorkItem): Promise<ReconcileResult> {
    const key = parseStackKey(item.key, this.deps.serviceOf);
    if (key === undefined) return { kind: "giveUp", reason: `${item.key} is not a stack dccm manages` };
    const held = this.deps.adoptionHeld?.get(item.key);
    if (held !== undefined)
      return { kind: "giveUp", reason: `not adopted (${held}); held until dccm daemon --adopt starts again` };
    try {
      return key.kind === "cluster"
        ? await this.deps.cluster.sync(item)
        : await this.deps.services.sync(item, key.namespace, key.name);
    } catch (error) {
      if (!(error instanceof ForeignStackError)) throw error;
      // Never retried: nothing changes by trying again, and the stack must not be touched.
      this.deps.metrics.foreignStacks.inc({ kind: key.kind });
      this.deps.logger.error({ stack: item.key, err: error.message }, "refusing a stack of another cluster");
      return { kind: "giveUp", reason: error.message };
    }
  }

  /** Reads the cluster stack before anything runs; throws ForeignStackError when it is another cluster's. */
  async verifyClusterStack(): Promise<void> {
    await this.deps.cluster.verify();
  }

  stop(): void {
    this.deps.drift.stop();
  }
}
