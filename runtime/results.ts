/**
 * The one place reconcile results are logged and counted (controller-runtime's driver does the
 * same): every controller gives the queue this observer as its `onResult`, so a failure reads the
 * same whichever controller it comes from.
 */
import type { Logger } from "pino";
import { describeError } from "./errors";
import type { ReconcileResult, WorkItem } from "./queue";

/** Counts by label values; prom-client's Counter fits. */
export interface ResultCounter<Label extends string> {
  inc(labels: Partial<Record<Label, string>>): void;
}

export interface ResultObserverOptions {
  logger: Logger;
  /** The log field that names the key (`stack`, `node`). */
  keyField: string;
  /** The `kind` label of a key (`cluster`, `service`, `node`). */
  kindOf: (key: string) => string;
  /**
   * Level of a give-up: `info` where it is routine (an invalid Service waits for its owner to
   * fix it), `error` where it means a bug or a refused object.
   */
  giveUpLevel: "info" | "error";
  /** Every result, by kind and result. */
  reconciles?: ResultCounter<"kind" | "result">;
  /** Failed runs scheduled for a retry, by kind. */
  retries?: ResultCounter<"kind">;
  /** Told every result too (the daemon's /status rows). */
  record?: (key: string, result: ReconcileResult) => void;
}

/** Consecutive failures from which a retry is logged as an error: the first few are usually transient (a conflict, a 503 burst). */
export const FAILURES_BEFORE_ERROR = 3;

export function resultObserver(
  options: ResultObserverOptions,
): (item: WorkItem, result: ReconcileResult, failures: number) => void {
  const { logger, keyField } = options;
  return (item, result, failures) => {
    const kind = options.kindOf(item.key);
    options.reconciles?.inc({ kind, result: result.kind });
    options.record?.(item.key, result);
    switch (result.kind) {
      case "ok":
        return;
      case "retryAfter":
        logger.debug({ [keyField]: item.key, ms: result.ms, reason: result.reason }, "reconcile deferred");
        return;
      case "retry": {
        options.retries?.inc({ kind });
        const fields = { [keyField]: item.key, failures, err: describeError(result.error) };
        if (failures >= FAILURES_BEFORE_ERROR) logger.error(fields, "reconcile failing; will retry");
        else logger.warn(fields, "reconcile failed; will retry");
        return;
      }
      case "giveUp":
        logger[options.giveUpLevel]({ [keyField]: item.key, reason: result.reason }, "reconcile ended without retry");
        return;
    }
  };
}
