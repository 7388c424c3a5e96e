// `dccm drift` as a child process, before it talks to the cluster: its help and a usage error (the
// report itself is test/unit/drift/report.test.ts; against a daemon's stacks, test/e2e/refresh.e2e.ts).
import * as assert from "node:assert/strict";
import { DRIFT_HELP } from "../../../bin/driftCommand";
import { runDccm } from "../../support/cli";

describe("bin/dccm drift (child process, before it talks to the cluster)", function () {
  this.timeout(60_000);

  it("dccm drift --help prints its flags and exit codes, exit 0", () => {
    assert.deepStrictEqual(runDccm(["drift", "--help"]), { status: 0, stdout: `${DRIFT_HELP}\n`, stderr: "" });
    assert.match(DRIFT_HELP, /\nexit 0: no drift; 2: drift found; 1: error \(the cluster, the backend or Compute could not be read\)\.$/);
  });

  it("an unknown flag: one line naming the one meant, exit 2", () => {
    assert.deepStrictEqual(runDccm(["drift", "--jsn"]), { status: 2, stdout: "", stderr: "dccm: unknown flag --jsn (did you mean --json?)\nsee dccm drift --help\n" });
  });
});
