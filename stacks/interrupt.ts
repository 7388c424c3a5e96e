/**
 * Cancelling one pulumi run, in the CLI's two steps. The Automation API interrupts the CLI once,
 * from an "abort" listener on the run's signal (@pulumi/pulumi automation/cmd.js exec:
 * `proc.kill("SIGINT")`). On a first interrupt the CLI cancels: it starts no new step and waits for
 * the provider calls in flight; a GCE call that hangs keeps it waiting for ever (measured with a
 * held create: the run never ended, so its deadline freed nothing). A second interrupt terminates
 * it (the CLI's cancellation scope: "^C received; cancelling. If you would like to terminate
 * immediately, press ^C again", then "^C received; terminating"): the plugins are stopped, the
 * update ends with the interrupted create recorded as pending (the next run recovers it, see
 * recoverPendingCreates) and the lock is released. So once the caller's signal aborts, the run
 * gets `terminateAfterMs` to cancel cleanly, then the second interrupt.
 */

type AbortListener = (this: AbortSignal, event: Event) => void;

export class TwoStepInterrupt {
  /** The signal to give the Automation API for this one run. */
  readonly signal: AbortSignal;
  private readonly controller = new AbortController();
  /** The Automation API's abort listeners: calling one interrupts its CLI process again. */
  private readonly interrupts: AbortListener[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly follow = (): void => this.cancel();

  constructor(
    private readonly caller: AbortSignal | undefined,
    private readonly terminateAfterMs: number,
    private readonly onTerminate: () => void = () => undefined,
  ) {
    const signal = this.controller.signal;
    const add = signal.addEventListener.bind(signal);
    const interrupts = this.interrupts;
    // Kept as well as registered: the listener is what sends the CLI its interrupt.
    signal.addEventListener = function (...args: Parameters<AbortSignal["addEventListener"]>): void {
      const [type, listener] = args;
      if (type === "abort" && typeof listener === "function") interrupts.push(listener);
      add(...args);
    };
    this.signal = signal;
    if (caller?.aborted === true) this.cancel();
    else caller?.addEventListener("abort", this.follow, { once: true });
  }

  /** First step: the Automation API sends its interrupt; the second follows unless the run ends first (dispose). */
  private cancel(): void {
    if (this.controller.signal.aborted) return;
    this.controller.abort(this.caller?.reason);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.onTerminate();
      for (const interrupt of this.interrupts) interrupt.call(this.signal, new Event("abort"));
    }, this.terminateAfterMs);
    // A pending second interrupt must not keep a stopping daemon alive.
    this.timer.unref();
  }

  /** The run ended: no second interrupt, and the caller's signal is let go. */
  dispose(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.caller?.removeEventListener("abort", this.follow);
  }
}
