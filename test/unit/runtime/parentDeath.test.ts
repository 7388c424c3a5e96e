import * as assert from "node:assert/strict";
import { watchParent } from "../../../runtime/parentDeath";

describe("watchParent", () => {
  it("calls back once, at the first look that finds another parent pid, and stops looking", async () => {
    const seen = [100, 100, 100, 1, 1, 7];
    let looks = 0;
    const parentPid = (): number => seen[Math.min(looks++, seen.length - 1)] ?? 1;
    let calls = 0;
    await new Promise<void>((resolve) => {
      watchParent(
        () => {
          calls++;
          resolve();
        },
        { intervalMs: 1, parentPid },
      );
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The first read is the reference; the third look (fourth read) finds pid 1.
    assert.deepEqual({ calls, looks }, { calls: 1, looks: 4 });
  });

  it("never calls back while the parent stays, nor after it is stopped", async () => {
    let pid = 100;
    let calls = 0;
    const stop = watchParent(() => calls++, { intervalMs: 1, parentPid: () => pid });
    await new Promise((resolve) => setTimeout(resolve, 20));
    stop();
    pid = 1;
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.equal(calls, 0);
  });
});
