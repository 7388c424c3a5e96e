// daemon/configFile.ts: the config file every command reads, each outcome with its exact value or message.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { readConfigFile, UsageError } from "../../../daemon/configFile";

describe("daemon/configFile readConfigFile", () => {
  let tmp: string;
  before(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), "dccm-config-file-"));
  });
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  function written(name: string, text: string): string {
    const file = path.join(tmp, name);
    fs.writeFileSync(file, text);
    return file;
  }

  const mappings: [string, string, Record<string, unknown>][] = [
    ["YAML", "project: p\nnodeTags: [a, b]\n", { project: "p", nodeTags: ["a", "b"] }],
    ["JSON", '{"project": "p", "instanceGroupLimit": 10}', { project: "p", instanceGroupLimit: 10 }],
    ["an empty file: no keys", "", {}],
    ["a comment only: no keys", "# nothing yet\n", {}],
  ];
  for (const [title, text, expected] of mappings)
    it(title, () => assert.deepEqual(readConfigFile(written(`${title.replace(/\W/g, "")}.yaml`, text)), expected));

  const refused: [string, string, (file: string) => string][] = [
    ["a list", "- a\n- b\n", (file) => `--config ${file}: expected a mapping of config keys`],
    ["a scalar", "just text\n", (file) => `--config ${file}: expected a mapping of config keys`],
  ];
  for (const [title, text, message] of refused)
    it(`${title}: a UsageError`, () => {
      const file = written(`${title.replace(/\W/g, "")}.yaml`, text);
      assert.throws(
        () => readConfigFile(file),
        (error: unknown) => error instanceof UsageError && error.message === message(file),
      );
    });

  it("a missing file: a UsageError with the reason and its cause", () => {
    const missing = path.join(tmp, "missing.yaml");
    assert.throws(
      () => readConfigFile(missing),
      (error: unknown) =>
        error instanceof UsageError &&
        error.message === `--config ${missing}: ENOENT: no such file or directory, open '${missing}'` &&
        (error.cause as NodeJS.ErrnoException).code === "ENOENT",
    );
  });

  it("text YAML cannot parse: a UsageError saying so", () => {
    const file = written("broken.yaml", "project: [unclosed\n");
    assert.throws(
      () => readConfigFile(file),
      (error: unknown) =>
        error instanceof UsageError && error.message.startsWith(`--config ${file}: not JSON or YAML: `),
    );
  });
});
