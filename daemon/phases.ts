/**
 * Where a start-up's time goes (convergence after a restart is bounded by the work, not
 * by waiting). The daemon logs the phases with "initial lists synced"; the convergence measurement
 * (test/chaos/convergence.chaos.ts) reads them.
 */
import { performance } from "node:perf_hooks";

export class PhaseTimer {
  /** Each phase's duration in ms, in the order the phases ended. */
  readonly phases: Record<string, number> = {};
  private last: number;

  /** `since`: when the first phase began, on `now`'s clock (default 0: the process start, for performance.now). */
  constructor(
    private readonly now: () => number = () => performance.now(),
    since = 0,
  ) {
    this.last = since;
  }

  /** Ends the phase that ran since the previous mark (or since the start). */
  mark(phase: string): void {
    const now = this.now();
    this.phases[phase] = Math.round(now - this.last);
    this.last = now;
  }
}
