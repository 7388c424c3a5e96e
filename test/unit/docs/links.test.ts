// The documentation is read by following links: every relative link of the README, CONTRIBUTING,
// the CHANGELOG and the pages under docs/ names a file that exists and, for a markdown page, a
// heading it has (GitHub's anchors). docs/README.md lists every page.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { repoRoot } from "../../support/tooling/testenv-paths";

const ROOT = repoRoot();

function markdownUnder(folder: string): string[] {
  return fs
    .readdirSync(path.join(ROOT, folder), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".md"))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)))
    .sort();
}

const PAGES = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md", "controllers/node/README.md", ...markdownUnder("docs")];

/** Markdown without its fenced code blocks, whose lines are not rendered as headings or links. */
function withoutBlocks(markdown: string): string {
  return markdown.replace(/^```[\s\S]*?^```/gm, "");
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes; repeats get -1, -2. */
function anchors(markdown: string): string[] {
  const seen = new Map<string, number>();
  return withoutBlocks(markdown)
    .split("\n")
    .filter((line) => /^#{1,6} /.test(line))
    .map((line) => {
      const base = line
        .replace(/^#+ /, "")
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, "")
        .replace(/ /g, "-");
      const count = seen.get(base);
      seen.set(base, (count ?? -1) + 1);
      return count === undefined ? base : `${base}-${String(count + 1)}`;
    });
}

/** Each `](target)` of a page's prose (code spans are not links) that is not a URL. */
function relativeLinks(markdown: string): string[] {
  return [
    ...withoutBlocks(markdown)
      .replace(/`[^`\n]*`/g, "")
      .matchAll(/\]\(([^)\s]+)\)/g),
  ]
    .map((match) => match[1])
    .filter((target) => !/^[a-z]+:/.test(target));
}

describe("docs/links: every relative link of the documentation resolves", () => {
  it("anchors() follows GitHub's rule", () => {
    assert.deepEqual(anchors("# The daemon (`dccm daemon`)\n## Pins\n## Pins\n```\n# not a heading\n```\n"), [
      "the-daemon-dccm-daemon",
      "pins",
      "pins-1",
    ]);
  });

  for (const page of PAGES) {
    it(page, () => {
      const broken: string[] = [];
      for (const link of relativeLinks(fs.readFileSync(path.join(ROOT, page), "utf8"))) {
        const [file, anchor] = link.split("#");
        const target = file === "" ? page : path.normalize(path.join(path.dirname(page), file));
        if (!fs.existsSync(path.join(ROOT, target))) broken.push(`${link}: no file ${target}`);
        else if (anchor !== undefined && target.endsWith(".md")) {
          if (!anchors(fs.readFileSync(path.join(ROOT, target), "utf8")).includes(anchor))
            broken.push(`${link}: no heading #${anchor} in ${target}`);
        }
      }
      assert.deepEqual(broken, []);
    });
  }

  it("docs/README.md links every page under docs/", () => {
    const index = relativeLinks(fs.readFileSync(path.join(ROOT, "docs", "README.md"), "utf8")).map((link) =>
      path.normalize(path.join("docs", link.split("#")[0])),
    );
    assert.deepEqual(
      markdownUnder("docs").filter((page) => page !== "docs/README.md" && !index.includes(page)),
      [],
    );
  });
});
