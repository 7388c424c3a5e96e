// `dccm drift` as a child process, before it talks to the cluster: its help's exit codes and a usage error (the
// report itself is test/unit/drift/report.test.ts; against a daemon's stacks, test/e2e/refresh.e2e.ts).
import * as assert from "node:assert/strict";
import { DRIFT_HELP } from "../../../bin/driftCommand";
import { runDccm } from "../../support/cli";

describe("bin/dccm drift (child process, before it talks to the cluster)", function () {
  this.timeout(60_000);

  it("its help ends with the exit codes (printed by dccm drift --help: cli.test.ts)", () => {
    assert.match(
      DRIFT_HELP,
      /\nexit 0: no drift; 2: drift found; 1: error \(the cluster, the backend or Compute could not be read\)\.$/,
    );
  });

  it("an unknown flag: one line naming the one meant, exit 2", () => {
    assert.deepStrictEqual(runDccm(["drift", "--backendUrl", "x"]), {
      status: 2,
      stdout: "",
      stderr: "dccm: unknown flag --backendUrl (did you mean --backend-url?)\nsee dccm drift --help\n",
    });
  });
});
