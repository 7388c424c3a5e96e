// CONTRIBUTING.md's commands are run by people copying them: each names a script, file or test that
// exists, and its one-test command runs and passes. The README's two set-up commands are the ones
// package.json and CI (.ci/run) make true.
import * as assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { repoRoot } from "../../support/tooling/testenv-paths";

const ROOT = repoRoot();

function read(file: string): string {
  return fs.readFileSync(path.join(ROOT, file), "utf8");
}

/** The lines of a markdown file's code blocks (indented by four spaces, or fenced), comments cut. */
function codeLines(markdown: string): string[] {
  const lines: string[] = [];
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) {
      fenced = !fenced;
      continue;
    }
    const code = fenced ? line : /^ {4}(\S.*)$/.exec(line)?.[1];
    if (code === undefined) continue;
    const command = code.replace(/\s+#.*$/, "").trim();
    if (command !== "") lines.push(command);
  }
  return lines;
}

/** What one command needs to exist: an npm script, a file, or a test's source; undefined when it names none. */
function referenceOf(command: string): { kind: "script" | "file"; name: string } | undefined {
  const words = command.split(/\s+/);
  if (words[0] === "npm" && words[1] === "test") return { kind: "script", name: "test" };
  if (words[0] === "npm" && words[1] === "ci") return { kind: "file", name: "package-lock.json" };
  if (words[0] === "npm" && words[1] === "run") {
    const script = words.slice(2).find((word) => !word.startsWith("-"));
    return script === undefined ? undefined : { kind: "script", name: script };
  }
  if (words[0] === "bash") return { kind: "file", name: words[1] };
  if (words[0] === "npx" && words[1] === "mocha") {
    const compiled = words.find((word) => word.startsWith("dist/") && word.endsWith(".js"));
    return compiled === undefined
      ? undefined
      : { kind: "file", name: compiled.replace(/^dist\//, "").replace(/\.js$/, ".ts") };
  }
  return undefined;
}

describe("docs/contributing: CONTRIBUTING.md's commands run", () => {
  const commands = codeLines(read("CONTRIBUTING.md")).flatMap((line) => line.split(/\s*&&\s*/));
  const scripts = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts;

  it("codeLines and referenceOf read a block as a person pastes it", () => {
    assert.deepEqual(codeLines("text\n\n    npm ci   # packages\n    bash x.sh\n\n```yaml\nkey: 1\n```\n"), [
      "npm ci",
      "bash x.sh",
      "key: 1",
    ]);
    assert.deepEqual(referenceOf("npm run -s testenv -- up"), { kind: "script", name: "testenv" });
    assert.deepEqual(referenceOf("npx mocha --timeout 1 dist/test/unit/model/service.test.js"), {
      kind: "file",
      name: "test/unit/model/service.test.ts",
    });
    assert.equal(referenceOf("kubectl get pods"), undefined);
  });

  it("every script, file and test a command names exists", () => {
    const references = commands.map(referenceOf).filter((reference) => reference !== undefined);
    assert.ok(references.length >= 5, `CONTRIBUTING.md names scripts and files: ${JSON.stringify(commands)}`);
    const missing = references.filter((reference) =>
      reference.kind === "script" ? !(reference.name in scripts) : !fs.existsSync(path.join(ROOT, reference.name)),
    );
    assert.deepEqual(missing, []);
  });

  it("its one-test command for a unit test file runs and passes", () => {
    const oneTest = commands.filter((command) => /^npx mocha .*dist\/test\/unit\/\S+\.test\.js$/.test(command));
    assert.equal(oneTest.length, 1, `one unit test command in CONTRIBUTING.md: ${JSON.stringify(commands)}`);
    const run = spawnSync("bash", ["-c", oneTest[0]], { cwd: ROOT, encoding: "utf8", timeout: 120_000 });
    assert.equal(run.status, 0, `${oneTest[0]} exited ${String(run.status)}:\n${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /\n {2}\d+ passing/);
    assert.doesNotMatch(run.stdout, /failing/);
  });
});

describe("docs/contributing: the README's two set-up commands are true", () => {
  it("the README's first code block is exactly the two set-up commands", () => {
    assert.deepEqual(codeLines(read("README.md")).slice(0, 2), ["npm ci && npx dccm demo", "npm ci && npm test"]);
  });

  it("`npx dccm demo` is the package's dccm binary and its demo command", () => {
    const pkg = JSON.parse(read("package.json")) as { bin: Record<string, string> };
    assert.deepEqual(pkg.bin, { dccm: "dist/bin/dccm.js" });
    assert.match(read("bin/dccm.ts"), /case "demo":/);
  });

  it("`npm test` is what CI runs after `npm ci`, and it runs every tier", () => {
    const ci = read(".ci/run")
      .split("\n")
      .filter((line) => line.startsWith("npm "));
    assert.deepEqual(ci, ["npm ci --no-audit --no-fund", "npm test"]);
    const scripts = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts;
    assert.deepEqual(scripts.test.split(" && "), [
      "npm run lint",
      "npm run test:unit",
      "npm run test:emulator",
      "npm run test:chart",
      "npm run test:e2e",
    ]);
    assert.equal(scripts["test:unit"], "npm run -s build && mocha --config .mocharc.unit.json");
  });
});
