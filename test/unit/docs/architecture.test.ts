// docs/explanation/architecture.md is the design, kept true in the same change as the code: its floors are the
// ones `npm run lint` enforces (.dependency-cruiser.cjs), its folder table names every file of the
// production tree, and the unit tests mirror the tree.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { repoRoot } from "../../support/tooling/testenv-paths";

const ROOT = repoRoot();
const ARCHITECTURE = fs.readFileSync(path.join(ROOT, "docs", "explanation", "architecture.md"), "utf8");

/** The `const FLOORS = [...]` of .dependency-cruiser.cjs: the floors lint enforces. */
function enforcedFloors(): string[][] {
  const config = fs.readFileSync(path.join(ROOT, ".dependency-cruiser.cjs"), "utf8");
  const match = /^const FLOORS = (\[.*?\]);$/ms.exec(config);
  assert.ok(match !== null, ".dependency-cruiser.cjs declares const FLOORS");
  return JSON.parse(match[1].replace(/,(\s*\])/g, "$1")) as string[][];
}

/** The rows of the markdown table whose header line is `header`, as cells. */
function tableRows(header: string): string[][] {
  const start = ARCHITECTURE.indexOf(`${header}\n`);
  assert.ok(start >= 0, `architecture.md has a table headed ${header}`);
  const lines = ARCHITECTURE.slice(start).split("\n");
  const rows: string[][] = [];
  for (const line of lines.slice(2)) {
    if (!line.startsWith("|")) break;
    rows.push(line.split(" | ").map((cell) => cell.replace(/^\| ?| ?\|$/g, "")));
  }
  return rows;
}

function folderNames(cell: string): string[] {
  return [...cell.matchAll(/`([a-z]+)\/`/g)].map((match) => match[1]);
}

function tsFiles(folder: string): string[] {
  const files: string[] = [];
  const walk = (relative: string): void => {
    for (const entry of fs.readdirSync(path.join(ROOT, folder, relative), { withFileTypes: true })) {
      const next = relative === "" ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) walk(next);
      else if (entry.name.endsWith(".ts")) files.push(next);
    }
  };
  walk("");
  return files.sort();
}

describe("docs/explanation/architecture.md matches the tree", () => {
  const floors = enforcedFloors();
  const production = floors.flat();

  it("its floors table is the floors lint enforces, folder by folder", () => {
    const documented = tableRows("| floor | folders | what may be imported | why here |").map(
      (cells) => [Number(cells[0]), folderNames(cells[1])] as const,
    );
    const byFloor = new Map<number, string[]>();
    for (const [floor, names] of documented) byFloor.set(floor, [...(byFloor.get(floor) ?? []), ...names]);
    assert.deepEqual(
      [...byFloor.entries()].map(([floor, names]) => [floor, names.sort()]),
      floors.map((names, index) => [index + 1, [...names].sort()]),
    );
  });

  it("every top-level folder holding TypeScript is a floor's, or test/, bench/, emulator/", () => {
    const folders = fs
      .readdirSync(ROOT, { withFileTypes: true })
      .filter(
        (entry) => entry.isDirectory() && !entry.name.startsWith(".") && !["node_modules", "dist"].includes(entry.name),
      )
      .map((entry) => entry.name)
      .filter((name) => tsFiles(name).length > 0);
    assert.deepEqual(folders.sort(), [...production, "bench", "emulator", "test"].sort());
  });

  it("its folder table names every file of every production folder", () => {
    const rows = tableRows("| folder | holds | in → out |");
    const unnamed: string[] = [];
    for (const folder of production) {
      const row = rows.find((cells) => folderNames(cells[0]).includes(folder));
      assert.ok(row !== undefined, `the folder table has a row for ${folder}/`);
      for (const file of tsFiles(folder)) {
        // controllers/node/ documents its files in its own README (its "Code" table), linked from the row.
        const named = file.startsWith("node/")
          ? fs
              .readFileSync(path.join(ROOT, "controllers", "node", "README.md"), "utf8")
              .includes(`\`${path.basename(file)}\``)
          : row[1].includes(`\`${file}\``) || row[1].includes(`\`${path.basename(file)}\``);
        if (!named) unnamed.push(`${folder}/${file}`);
      }
    }
    assert.deepEqual(unnamed, []);
  });

  it("unit tests mirror the tree: test/unit/<folder>/ only for a production folder (or test/support's own tests, docs, or bench's pure helpers)", () => {
    const folders = fs
      .readdirSync(path.join(ROOT, "test", "unit"), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name);
    assert.deepEqual(
      folders.filter((name) => !production.includes(name) && !["support", "docs", "bench"].includes(name)),
      [],
    );
    assert.deepEqual(
      fs.readdirSync(path.join(ROOT, "test", "unit")).filter((name) => name.endsWith(".ts")),
      [],
    );
  });
});

describe("docs/explanation/ names files that exist", () => {
  const pages = fs
    .readdirSync(path.join(ROOT, "docs", "explanation"))
    .filter((name) => name.endsWith(".md"))
    .sort();

  /** The TypeScript paths a page names whose first folder is one of this repository's (not another project's). */
  function repositoryPaths(markdown: string): string[] {
    const paths = [...markdown.matchAll(/(?<![\w/.-])((?:[a-z][\w-]*\/)+[\w.-]+\.ts)\b/g)].map((match) => match[1]);
    return [...new Set(paths)].filter((cited) => {
      const top = path.join(ROOT, cited.split("/")[0]);
      return fs.existsSync(top) && fs.statSync(top).isDirectory();
    });
  }

  for (const page of pages) {
    it(`every file of this repository ${page} names exists (a moved file moves its mentions)`, () => {
      const markdown = fs.readFileSync(path.join(ROOT, "docs", "explanation", page), "utf8");
      assert.deepEqual(
        repositoryPaths(markdown).filter((cited) => !fs.existsSync(path.join(ROOT, cited))),
        [],
      );
    });
  }
});
