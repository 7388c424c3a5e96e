/** The workspaces folder of the stacks (stacks/workspaces.ts, StackRunner.removeStrayWorkspaces). */
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { StackRunner } from "../../../stacks/runner";
import { strayWorkspaces } from "../../../stacks/workspaces";
import { serviceStackName } from "../../../model/names";

const NS63 = "n".repeat(62) + "s";

describe("workspaces of stacks the backend does not have", () => {
  it("strayWorkspaces: directories named for no stack; files, symbolic links and the listing's workspace stay", () => {
    const entries = [
      { name: "cluster", directory: true },
      { name: "service.default.web", directory: true },
      { name: "service.default.killed", directory: true },
      { name: "_list", directory: true },
      { name: "notes.txt", directory: false },
      { name: "link", directory: false },
    ];
    assert.deepEqual(strayWorkspaces(entries, new Set(["cluster", "service.default.web"])), ["service.default.killed"]);
  });

  it("removeStrayWorkspaces removes exactly those under the workspaces folder, a shortened stack's kept", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-workspaces-"));
    try {
      const workDir = path.join(dir, "workspaces");
      const outside = path.join(dir, "outside");
      const shortened = serviceStackName(NS63, "l".repeat(40));
      for (const name of ["cluster", shortened, "service.default.killed"])
        fs.mkdirSync(path.join(workDir, name, "sub"), { recursive: true });
      fs.mkdirSync(outside);
      fs.writeFileSync(path.join(outside, "keep"), "x");
      fs.symlinkSync(outside, path.join(workDir, "link"));
      fs.writeFileSync(path.join(workDir, "file"), "x");
      const runner = new StackRunner({ backendUrl: `file://${path.join(dir, "backend")}`, env: {}, workDir });
      assert.deepEqual(runner.removeStrayWorkspaces(["cluster", shortened]), ["service.default.killed"]);
      assert.deepEqual(fs.readdirSync(workDir).sort(), ["cluster", "file", "link", shortened].sort());
      assert.deepEqual(fs.readdirSync(outside), ["keep"]);
      assert.deepEqual(
        new StackRunner({
          backendUrl: "file:///nowhere",
          env: {},
          workDir: path.join(dir, "none"),
        }).removeStrayWorkspaces([]),
        [],
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
