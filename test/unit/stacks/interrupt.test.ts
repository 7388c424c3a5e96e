/**
 * TwoStepInterrupt (stacks/interrupt.ts): the Automation API's abort listener is what interrupts
 * the CLI; a run that has not ended `terminateAfterMs` after the caller's abort gets it again.
 */
import * as assert from "node:assert/strict";
import { TwoStepInterrupt } from "../../../stacks/interrupt";
import { eventually } from "../../support/wait";

/** What the Automation API does with the signal (automation/cmd.js exec): one SIGINT per abort event. */
function cliOn(signal: AbortSignal): { interrupts: number } {
  const cli = { interrupts: 0 };
  signal.addEventListener("abort", () => {
    cli.interrupts++;
  });
  return cli;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe("stacks/interrupt: TwoStepInterrupt", () => {
  it("the caller's abort interrupts the CLI once; a run still going terminateAfterMs later is interrupted again, and told", async () => {
    const caller = new AbortController();
    const terminated: string[] = [];
    const interrupt = new TwoStepInterrupt(caller.signal, 30, () => terminated.push("terminate"));
    const cli = cliOn(interrupt.signal);
    assert.equal(cli.interrupts, 0);
    caller.abort();
    assert.equal(interrupt.signal.aborted, true);
    assert.equal(cli.interrupts, 1);
    await eventually("the second interrupt", () => (cli.interrupts === 2 ? true : undefined), 2000, 5);
    assert.deepEqual(terminated, ["terminate"]);
    interrupt.dispose();
  });

  it("a run that ends after the first interrupt (dispose) gets no second one", async () => {
    const caller = new AbortController();
    const terminated: string[] = [];
    const interrupt = new TwoStepInterrupt(caller.signal, 30, () => terminated.push("terminate"));
    const cli = cliOn(interrupt.signal);
    caller.abort();
    interrupt.dispose();
    // An absence is only seen over time: several times the delay.
    await sleep(150);
    assert.equal(cli.interrupts, 1);
    assert.deepEqual(terminated, []);
  });

  it("a run that ends without an abort is never interrupted, and lets go of the caller's signal", async () => {
    const caller = new AbortController();
    const interrupt = new TwoStepInterrupt(caller.signal, 30);
    const cli = cliOn(interrupt.signal);
    interrupt.dispose();
    caller.abort();
    await sleep(150);
    assert.equal(interrupt.signal.aborted, false);
    assert.equal(cli.interrupts, 0);
  });

  it("a caller already aborted aborts at once, with the caller's reason", () => {
    const caller = new AbortController();
    caller.abort(new Error("shutting down"));
    const interrupt = new TwoStepInterrupt(caller.signal, 60_000);
    assert.equal(interrupt.signal.aborted, true);
    assert.throws(() => interrupt.signal.throwIfAborted(), { message: "shutting down" });
    interrupt.dispose();
  });

  it("without a caller signal nothing aborts", () => {
    const interrupt = new TwoStepInterrupt(undefined, 10);
    assert.equal(interrupt.signal.aborted, false);
    interrupt.dispose();
  });
});
