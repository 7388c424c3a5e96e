/**
 * The daemon's leak checks: once the start-up runs settled, then every drift interval (with the
 * drift jitter, on an unref'd timer like the stacks' drift passes). Each check sets
 * `dccm_leaked_resources{kind,proof}` and, when there are leaks, records a Warning
 * `LeakedResources` on Namespace kube-system. It never deletes anything: that is `dccm gc`.
 */
import type { Logger } from "pino";
import type { EventRecorder } from "../runtime/events";
import type { Config, ClusterSnapshot } from "../model";
import type { LeakMetrics } from "./metrics";
import { describeError } from "../runtime/errors";
import { Periodic } from "../runtime/periodic";

import type { StackRunner } from "../stacks/runner";
import { leakCounts, leakMessage, type Leak } from "./classify";
import { clusterFacts, detectLeaks, type Detection } from "./detector";
import type { LeakCompute } from "../gce/listing";
import type { ConfigMapLedger } from "./ledger";
import { resourceId } from "../gce/resources";
import { ForeignStackError } from "../stacks/errors";

export const LEAK_EVENT_REASON = "LeakedResources";

export interface LeakMonitorOptions {
  detect: (signal: AbortSignal) => Promise<Detection>;
  events: Pick<EventRecorder, "record">;
  /** UID of Namespace kube-system, the object the Warning is about. */
  clusterUid: string;
  metrics: LeakMetrics;
  logger: Logger;
  periodMs: number;
  /** Fraction of the period, as the drift passes'. */
  jitter: number;
  /** The daemon's: aborted on shutdown or lost leadership. */
  signal: AbortSignal;
  /** Resolves once the start-up runs are done, so the first check does not race them. */
  settled: () => Promise<void>;
}

export class LeakMonitor {
  private readonly periodic: Periodic;

  constructor(private readonly options: LeakMonitorOptions) {
    this.periodic = new Periodic({ ...options, name: "leak check" }, () => this.check());
  }

  start(): void {
    this.periodic.start();
  }

  /** One check; undefined when it failed or the daemon stopped meanwhile. Never throws. */
  async check(): Promise<Leak[] | undefined> {
    const { signal, metrics, logger } = this.options;
    if (signal.aborted) return undefined;
    let leaks: Leak[];
    try {
      leaks = (await this.options.detect(signal)).leaks;
    } catch (error) {
      if (signal.aborted) return undefined;
      metrics.leakChecks.inc({ result: "failed" });
      // A stack of another cluster: nothing it says about ownership can be trusted, and it is worth more than a warning.
      const log = error instanceof ForeignStackError ? logger.error.bind(logger) : logger.warn.bind(logger);
      log({ err: describeError(error) }, "leak check failed; the next one is due after the drift interval");
      return undefined;
    }
    if (signal.aborted) return undefined;
    for (const { kind, proof, count } of leakCounts(leaks)) metrics.leakedResources.set({ kind, proof }, count);
    metrics.leakChecks.inc({ result: "ok" });
    if (leaks.length > 0) {
      logger.warn(
        { leaks: leaks.map((leak) => ({ resource: resourceId(leak.resource), proof: leak.proof, why: leak.why })) },
        "GCE resources of this cluster owned by no stack",
      );
      await this.options.events.record(
        { kind: "Namespace", namespace: "kube-system", name: "kube-system", uid: this.options.clusterUid },
        "Warning",
        LEAK_EVENT_REASON,
        leakMessage(leaks),
      );
    }
    return leaks;
  }

  /** Stops the timer; resolves when a check in flight has ended (it stops at its next stack export). */
  stop(): Promise<void> {
    return this.periodic.stop();
  }
}

/** The daemon's monitor, from the pieces the daemon has. */
export function daemonLeakMonitor(args: {
  config: Config;
  /** The daemon's Compute client (shared with the node controller). */
  compute: LeakCompute;
  runner: Pick<StackRunner, "stackReader">;
  ledger: Pick<ConfigMapLedger, "read">;
  snapshot: () => ClusterSnapshot;
  events: Pick<EventRecorder, "record">;
  metrics: LeakMetrics;
  logger: Logger;
  clusterUid: string;
  periodMs: number;
  jitter: number;
  signal: AbortSignal;
  settled: () => Promise<void>;
}): LeakMonitor {
  const { config } = args;
  const { compute } = args;
  return new LeakMonitor({
    detect: (signal) =>
      detectLeaks({
        compute,
        project: config.project,
        networkProject: config.networkProject,
        region: config.region,
        config: {
          clusterId: config.clusterId,
          clusterUid: args.clusterUid,
          clusterName: config.clusterName,
          configureRoutes: config.configureRoutes,
        },
        clusterUid: args.clusterUid,
        ledger: args.ledger,
        reader: () => args.runner.stackReader(),
        cluster: () => clusterFacts(args.snapshot(), config.loadBalancerClasses),
        signal,
      }),
    events: args.events,
    clusterUid: args.clusterUid,
    metrics: args.metrics,
    logger: args.logger,
    periodMs: args.periodMs,
    jitter: args.jitter,
    signal: args.signal,
    settled: args.settled,
  });
}
