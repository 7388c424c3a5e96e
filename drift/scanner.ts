/**
 * The drift pass: every drift interval, list what GCE holds in the collections dccm uses (the
 * region's, its zones' and the global ones, every page) and the members of the instance groups the
 * stacks hold, compare with what each stack last applied (drift/plan.ts), and send only the stacks
 * that differ to `up --refresh`. A pass costs O(collections × pages) Compute calls and no engine
 * run; the engine still repairs what it finds. What a listing cannot see (a field dccm does not
 * declare, a resource the provider reads differently) is caught by the full refresh of every stack
 * on its own, much longer cadence (controllers/fullRefresh.ts FullRefreshTimers).
 */
import type { Logger } from "pino";
import { Periodic, type PeriodicOptions } from "../runtime/periodic";
import { describeError } from "../runtime/errors";
import type { CallOptions, ComputeResourceApi } from "../gce";

import { listCollections, type LeakCompute } from "../gce/listing";
import type { DriftMetrics } from "./metrics";

import type { AppliedBook, AppliedSnapshot } from "./applied";
import { appliedGroups, planDriftPass, type DriftFinding } from "./plan";
import { resourceId } from "../gce/resources";
import { stackKind } from "../model";

export type DriftCompute = LeakCompute & Pick<ComputeResourceApi, "listGroupInstances">;

export interface DriftScannerOptions extends Omit<PeriodicOptions, "name"> {
  compute: DriftCompute;
  project: string;
  /** The Shared VPC host, where the firewalls and routes are listed; absent: `project`. */
  networkProject?: string;
  region: string;
  book: Pick<AppliedBook, "snapshot" | "generation">;
  /** Sends the stack to `up --refresh`. */
  refresh: (stack: string) => void;
  metrics: DriftMetrics;
  logger: Logger;
}

export interface DriftPass {
  /** Stacks compared. */
  stacks: number;
  /** Resources listed. */
  listed: number;
  /** Drifted stacks sent to up --refresh. */
  refreshed: DriftFinding[];
  /** Drifted stacks left alone: they ran while GCE was listed, so the listing may predate their run. */
  skipped: string[];
}

/**
 * Every listed resource by id; instance groups the stacks hold carry their members as `instances`.
 * Reads only (list and get calls): `dccm drift` lists with it too.
 */
export async function listDeclared(
  options: Pick<DriftScannerOptions, "compute" | "project" | "networkProject" | "region" | "logger">,
  applied: readonly AppliedSnapshot[],
  opts: CallOptions,
): Promise<Map<string, Record<string, unknown>>> {
  const { compute, project, region } = options;
  const listed = new Map<string, Record<string, unknown>>();
  for (const { kind, scope, item } of await listCollections(compute, options, region, opts)) {
    if (typeof item.name === "string") listed.set(resourceId({ kind, scope, name: item.name }), item);
  }
  await Promise.all(
    appliedGroups(applied).map(async ({ zone, name }) => {
      const id = resourceId({ kind: "instanceGroups", scope: zone, name });
      const group = listed.get(id);
      if (group === undefined) return;
      try {
        listed.set(id, { ...group, instances: await compute.listGroupInstances(project, zone, name, opts) });
      } catch (error) {
        // Deleted since the listing, or unreadable: the group's stack is refreshed, which reads it for certain.
        if (opts.signal?.aborted === true) throw error;
        options.logger.debug({ group: id, err: describeError(error) }, "listing an instance group's members failed");
        listed.delete(id);
      }
    }),
  );
  return listed;
}

export class DriftScanner {
  private readonly periodic: Periodic;

  constructor(private readonly options: DriftScannerOptions) {
    this.periodic = new Periodic({ ...options, name: "drift pass" }, () => this.pass());
  }

  start(): void {
    this.periodic.start();
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  /** One pass; undefined when it failed or the daemon stopped meanwhile. Never throws. */
  async pass(): Promise<DriftPass | undefined> {
    const { signal, metrics, logger, book } = this.options;
    if (signal.aborted) return undefined;
    const started = performance.now();
    const applied = book.snapshot();
    let listed: Map<string, Record<string, unknown>>;
    try {
      listed = await listDeclared(this.options, applied, { signal });
    } catch (error) {
      if (signal.aborted) return undefined;
      metrics.driftPasses.inc({ result: "failed" });
      logger.warn(
        { err: describeError(error) },
        "drift pass failed: GCE could not be listed; the next one is due after the drift interval",
      );
      return undefined;
    }
    const pass: DriftPass = { stacks: applied.length, listed: listed.size, refreshed: [], skipped: [] };
    for (const finding of planDriftPass(applied, listed)) {
      if (book.generation(finding.stack) !== finding.generation) {
        pass.skipped.push(finding.stack);
        continue;
      }
      pass.refreshed.push(finding);
      metrics.driftedStacks.inc({ kind: stackKind(finding.stack) });
      logger.info({ stack: finding.stack, drift: finding.reasons }, "drift found by listing; up --refresh");
      this.options.refresh(finding.stack);
    }
    metrics.driftPasses.inc({ result: "ok" });
    metrics.driftPassSeconds.set((performance.now() - started) / 1000);
    logger.debug(
      { stacks: pass.stacks, listed: pass.listed, drifted: pass.refreshed.length, skipped: pass.skipped },
      "drift pass",
    );
    return pass;
  }
}
