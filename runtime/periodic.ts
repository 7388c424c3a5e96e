/**
 * A task run once when the daemon's start-up runs have settled, then every period (± a jitter
 * fraction, so replicas and restarts do not line up), on unref'd timers: the drift pass and the
 * leak check. One run at a time; stop() waits for the one in flight.
 */
import type { Logger } from "pino";
import { describeError } from "./errors";

export interface PeriodicOptions {
  /** What the log line calls it. */
  name: string;
  periodMs: number;
  /** Fraction of the period. */
  jitter: number;
  /** The daemon's: aborted on shutdown or lost leadership. */
  signal: AbortSignal;
  /** Resolves once the start-up runs are done, so the first run does not race them. */
  settled: () => Promise<void>;
  /** The first run one period after the start-up runs, not at once (their work already did it). */
  skipFirst?: boolean;
  logger: Logger;
}

/** Pure: one delay of a period with a jitter fraction, for a uniform draw `random` in [0, 1). */
export function jitteredDelay(periodMs: number, jitter: number, random: number): number {
  return Math.max(1, Math.round(periodMs * (1 + (random * 2 - 1) * jitter)));
}

export class Periodic {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  /** `run` must not throw (each task counts and logs its own failures); a throw is logged here. */
  constructor(
    private readonly options: PeriodicOptions,
    private readonly run: () => Promise<unknown>,
  ) {}

  start(): void {
    this.running = this.options
      .settled()
      .then(
        () => (this.options.skipFirst === true ? undefined : this.once()),
        (error: unknown) =>
          this.options.logger.warn(
            { err: describeError(error) },
            `waiting for the start-up runs before the first ${this.options.name} failed`,
          ),
      )
      .finally(() => this.arm());
  }

  private once(): Promise<unknown> {
    return this.run().catch((error: unknown) =>
      this.options.logger.error({ err: describeError(error) }, `${this.options.name} failed`),
    );
  }

  private arm(): void {
    if (this.options.signal.aborted) return;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.running = this.once().finally(() => this.arm());
      },
      jitteredDelay(this.options.periodMs, this.options.jitter, Math.random()),
    );
    this.timer.unref();
  }

  /** Stops the timer; resolves when a run in flight has ended. */
  async stop(): Promise<void> {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => undefined);
  }
}
