// `npx dccm` runs dist/bin/dccm.js through a link in npm's npx cache. npm sets the file's
// executable bit only when it makes that link; once the link is cached, a fresh build's file
// must already be executable, or the shell answers "sh: 1: dccm: Permission denied".
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "../../../..");

describe("the build: dist/bin/dccm.js", () => {
  it("is executable by everyone and writable only by its owner, whatever npm did or did not do", () => {
    const mode = fs.statSync(path.join(ROOT, "dist/bin/dccm.js")).mode & 0o777;
    assert.equal(mode.toString(8), "755");
  });
});
