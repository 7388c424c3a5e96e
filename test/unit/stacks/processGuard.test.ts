/** The process listeners of inline program runs (stacks/processGuard.ts). */
import * as assert from "node:assert/strict";
import * as os from "node:os";
import { StackRunner } from "../../../stacks/runner";
import { isLateEngineError, lateRunErrorListener } from "../../../stacks/processGuard";

describe("a late error of an ended run's SDK (stacks/processGuard.ts isLateEngineError)", () => {
  function grpcError(code: unknown, details: unknown, stack: string): Error {
    return Object.assign(new Error("14 UNAVAILABLE: Connection dropped"), { code, details, stack });
  }
  const SDK_STACK =
    "Error: 14 UNAVAILABLE: Connection dropped\n    at callErrorFromStatus (/app/node_modules/@grpc/grpc-js/build/src/call.js:32:19)\n    at /app/node_modules/@pulumi/pulumi/runtime/resource.js:931:95";
  it("a gRPC error raised under the SDK's runtime is one; anything else is not", () => {
    assert.deepEqual(
      [
        grpcError(14, "Connection dropped", SDK_STACK),
        grpcError(1, "Cancelled on client", SDK_STACK.replaceAll("/", "\\")),
        grpcError(14, "Connection dropped", "Error\n    at /app/dist/daemon/daemon.js:1:1"),
        grpcError("14", "Connection dropped", SDK_STACK),
        grpcError(14, undefined, SDK_STACK),
        new Error("boom"),
        "14 UNAVAILABLE",
        undefined,
      ].map(isLateEngineError),
      [true, true, false, false, false, false, false, false],
    );
  });

  it("the process's one listener: between runs, a late engine error goes to the runners' handlers; anything else is thrown on, as Node would", () => {
    const told: unknown[] = [];
    new StackRunner({
      backendUrl: "file:///nonexistent",
      env: {},
      workDir: os.tmpdir(),
      onLateRunError: (error) => told.push(error),
    });
    assert.equal(process.listeners("unhandledRejection").includes(lateRunErrorListener), true);
    const late = grpcError(14, "Connection dropped", SDK_STACK);
    lateRunErrorListener(late);
    assert.equal(told.includes(late), true);
    const other = new Error("a bug");
    assert.throws(
      () => lateRunErrorListener(other),
      (error) => error === other,
    );
    assert.equal(told.includes(other), false);
  });
});
