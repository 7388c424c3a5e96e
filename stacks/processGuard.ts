/**
 * The process-wide listeners of inline program runs: the Automation API leaves its own behind for
 * every run that never returns, and a late error of an ended run would otherwise end the process.
 * One guard for the process, whatever the number of runners.
 */
import { isRecord } from "../runtime/guards";

const PROCESS_ERROR_EVENTS = ["uncaughtException", "unhandledRejection"] as const;

/**
 * The Automation API's inline-program server adds process-wide `uncaughtException` and
 * `unhandledRejection` listeners for each run and removes them only when the program run returns
 * (@pulumi/pulumi automation/server.js, LanguageServer.run): a run whose engine was cancelled or
 * killed never returns, and each leaves two listeners behind (seen: 31 after ~30 runs). While no
 * run is in flight none of them can be legitimate, so the set in place before the first run is
 * restored then.
 */
type Listener = (...args: unknown[]) => void;
// The plain EventEmitter view: process's typed overloads take one event name at a time.
const processEvents: NodeJS.EventEmitter = process;

/**
 * Pure: whether an unhandled rejection is the Pulumi SDK's own, late: a gRPC call of an inline
 * program to its engine (registerResourceOutputs, …) that failed because that run's engine is
 * gone (a failed, cancelled or killed run ends its CLI while its program still registers). Seen
 * at 500 Services: `14 UNAVAILABLE: Connection dropped` after the run had ended, when no run's
 * listener was left to take it, and Node's default for an unhandled rejection ended the daemon.
 */
export function isLateEngineError(reason: unknown): boolean {
  if (!(reason instanceof Error) || !isRecord(reason)) return false;
  return (
    typeof reason.code === "number" &&
    typeof reason.details === "string" &&
    /[\\/]@pulumi[\\/]pulumi[\\/]runtime[\\/]/.test(reason.stack ?? "")
  );
}

/**
 * One for the process: every StackRunner's runs count together (with a guard per runner, one
 * runner going idle would drop the listeners of another's run in flight, and its late-error
 * listener would take the other's rejections as its own).
 */
class ProcessListenerGuard {
  private active = 0;
  private baseline: Map<string, Set<Listener>> | undefined;
  private readonly lateErrorHandlers = new Set<(error: unknown) => void>();
  private listening = false;
  /** Errors our stack programs threw: the SDK rejects with them again once the run is over. */
  private readonly programErrors = new WeakSet();

  /**
   * Between runs, no run's listener takes a late rejection of the SDK: this one does, and lets
   * anything else end the process as Node would (a rejection nobody expected is a bug).
   */
  readonly absorb = (reason: unknown): void => {
    if (this.active > 0) return;
    const ours =
      isLateEngineError(reason) || (typeof reason === "object" && reason !== null && this.programErrors.has(reason));
    if (!ours) throw reason;
    for (const handler of this.lateErrorHandlers) handler(reason);
  };

  /** Installs the process listener once; `handler` (a runner's onLateRunError) is told of each late error. */
  onLateError(handler: ((error: unknown) => void) | undefined): void {
    if (!this.listening) processEvents.on("unhandledRejection", this.absorb);
    this.listening = true;
    if (handler !== undefined) this.lateErrorHandlers.add(handler);
  }

  /** Runs a stack program, remembering what it throws. */
  async program<T>(run: () => T | Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (typeof error === "object" && error !== null) this.programErrors.add(error);
      throw error;
    }
  }

  async around<T>(run: () => Promise<T>): Promise<T> {
    if (this.active++ === 0) {
      this.baseline = new Map(
        PROCESS_ERROR_EVENTS.map((event) => [event, new Set(processEvents.listeners(event) as Listener[])]),
      );
    }
    try {
      return await run();
    } finally {
      if (--this.active === 0 && this.baseline !== undefined) {
        for (const event of PROCESS_ERROR_EVENTS) {
          const keep = this.baseline.get(event) ?? new Set();
          for (const listener of processEvents.listeners(event) as Listener[])
            if (!keep.has(listener)) processEvents.off(event, listener);
        }
        this.baseline = undefined;
      }
    }
  }
}

export const PROCESS_GUARD = new ProcessListenerGuard();

/** The process listener that takes late errors of ended runs (tests count process listeners). */
export const lateRunErrorListener: (reason: unknown) => void = PROCESS_GUARD.absorb;
