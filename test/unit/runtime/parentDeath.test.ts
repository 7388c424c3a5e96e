import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import {
  ancestry,
  firstGone,
  parseStat,
  procLinkReader,
  watchAncestors,
  type ProcessLink,
  type ReadLink,
} from "../../../runtime/parentDeath";

/** A process table: pid → [parent, start time]. */
function table(entries: Record<number, [number, string]>): ReadLink {
  return (pid) => {
    const entry = entries[pid];
    return entry === undefined ? undefined : { pid, parent: entry[0], startTime: entry[1] };
  };
}

describe("runtime/parentDeath", () => {
  it("parseStat: the parent and start time, counted from the last ')' (a command name may hold spaces and parentheses)", () => {
    const tail = "S 4242 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10 0 0 0";
    assert.deepEqual(
      [
        parseStat(7, `7 (node) ${tail}`),
        parseStat(8, `8 (npm exec (a) b) ${tail}`),
        parseStat(9, "9 (x) S"),
        parseStat(6, `6 (sh) Z${tail.slice(1)}`),
      ],
      [
        { pid: 7, parent: 4242, startTime: "987654" },
        { pid: 8, parent: 4242, startTime: "987654" },
        undefined,
        { pid: 6, parent: 4242, startTime: "987654", zombie: true },
      ],
    );
  });

  it("procLinkReader reads this process's own parent from /proc", () => {
    assert.deepEqual(procLinkReader()(process.pid)?.parent, process.ppid);
    assert.equal(procLinkReader()(2 ** 22 + 1), undefined);
    assert.ok(fs.existsSync("/proc/self/stat"));
  });

  it("ancestry: parent first, up to init (excluded); firstGone: an ancestor missing, or its pid reused", () => {
    // demo 50 → sh 40 → npm 30 → bash 20 → init 1
    const read = table({ 50: [40, "t50"], 40: [30, "t40"], 30: [20, "t30"], 20: [1, "t20"], 1: [0, "t1"] });
    const chain = ancestry(50, read);
    assert.deepEqual(
      chain.map((link) => link.pid),
      [40, 30, 20],
    );
    const cases: [string, ReadLink, number | undefined][] = [
      ["all there", read, undefined],
      ["npm killed, sh waits on", table({ 50: [40, "t50"], 40: [1, "t40"], 20: [1, "t20"] }), 30],
      [
        "npm dead, not reaped yet",
        (pid) => (pid === 30 ? { pid, parent: 20, startTime: "t30", zombie: true } : read(pid)),
        30,
      ],
      [
        "bash gone, its pid taken by another process",
        table({ 50: [40, "t50"], 40: [30, "t40"], 30: [20, "t30"], 20: [1, "later"] }),
        20,
      ],
    ];
    assert.deepEqual(
      cases.map(([title, now]) => [title, firstGone(chain, now)?.pid]),
      cases.map(([title, , gone]) => [title, gone]),
    );
  });

  it("watchAncestors calls back once with the ancestor gone, and never while all stay or after it is stopped", async () => {
    const entries: Record<number, [number, string]> = { 50: [40, "t50"], 40: [30, "t40"], 30: [1, "t30"] };
    const read: ReadLink = (pid) => table(entries)(pid);
    const calls: ProcessLink[] = [];
    const stopped: ProcessLink[] = [];
    const stop = watchAncestors((gone) => stopped.push(gone), { intervalMs: 1, pid: 50, read });
    await new Promise((resolve) => setTimeout(resolve, 20));
    stop();
    const gone = new Promise<void>((resolve) => {
      watchAncestors(
        (link) => {
          calls.push(link);
          resolve();
        },
        { intervalMs: 1, pid: 50, read },
      );
    });
    delete entries[30];
    await gone;
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual({ calls, stopped }, { calls: [{ pid: 30, parent: 1, startTime: "t30" }], stopped: [] });
  });
});
