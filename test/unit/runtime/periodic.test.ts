// runtime/periodic.ts Periodic: the first run at once when the start-up runs have settled, or,
// with skipFirst, only one period later.
import * as assert from "node:assert/strict";

import pino from "pino";

import { Periodic } from "../../../runtime/periodic";

describe("runtime/periodic Periodic", () => {
  async function firstRuns(skipFirst: boolean): Promise<{ atSettle: number; later: number }> {
    const abort = new AbortController();
    let runs = 0;
    let settle: () => void = () => undefined;
    const settledPromise = new Promise<void>((resolve) => (settle = resolve));
    let ran: () => void = () => undefined;
    const ranPromise = new Promise<void>((resolve) => (ran = resolve));
    const periodic = new Periodic(
      {
        name: "test check",
        periodMs: 5,
        jitter: 0,
        signal: abort.signal,
        settled: () => settledPromise,
        logger: pino({ level: "silent" }),
        ...(skipFirst ? { skipFirst: true } : {}),
      },
      () => {
        runs++;
        ran();
        return Promise.resolve();
      },
    );
    periodic.start();
    settle();
    // The settled promise's handlers, and a run started by them, have run after these turns.
    await settledPromise;
    await Promise.resolve();
    await Promise.resolve();
    const atSettle = runs;
    await ranPromise;
    abort.abort();
    await periodic.stop();
    return { atSettle, later: runs };
  }

  it("runs once as soon as the start-up runs have settled", async () => {
    const { atSettle } = await firstRuns(false);
    assert.equal(atSettle, 1);
  });

  it("skipFirst: nothing when they settle; the first run comes a period later", async () => {
    const { atSettle, later } = await firstRuns(true);
    assert.deepEqual([atSettle, later >= 1], [0, true]);
  });
});
