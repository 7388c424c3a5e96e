/** The full collection `dccm preview` runs after each engine run (stacks/previewRuns.ts collectGarbage). */
import * as assert from "node:assert/strict";
import * as vm from "node:vm";
import { collectGarbage } from "../../../stacks/previewRuns";

/** A WeakRef to 16 MiB nothing else holds, made in its own call so no local keeps it. */
function unreachable(): WeakRef<Float64Array> {
  return new WeakRef(new Float64Array(2 * 1024 * 1024));
}

/** A WeakRef's target stays alive until the job that created or read it ends. */
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe("collectGarbage (a full collection without --expose-gc)", () => {
  it("collects what nothing holds, twice in a row", async () => {
    for (let round = 0; round < 2; round++) {
      const ref = unreachable();
      await nextTurn();
      collectGarbage();
      await nextTurn();
      assert.equal(ref.deref(), undefined, `round ${round}`);
    }
  });

  it("leaves no gc() behind: neither in this context nor in a new one", () => {
    collectGarbage();
    assert.equal((globalThis as { gc?: unknown }).gc, undefined);
    assert.equal(vm.runInNewContext("typeof gc"), "undefined");
  });
});
