// The image cannot be built on these machines (no container runtime): what keeps it right is that
// its pins equal package.json's and that it compiles every production folder.
import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { RUN_AS } from "../../../deploy/manifests";
import { repoRoot } from "../../support/tooling/testenv-paths";

const root = repoRoot();
const dockerfile = fs.readFileSync(path.join(root, "Dockerfile"), "utf8");
const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")) as {
  dependencies: Record<string, string>;
  engines: { node: string };
};

function arg(name: string): string | undefined {
  return new RegExp(`^ARG ${name}=(\\S+)$`, "m").exec(dockerfile)?.[1];
}

describe("Dockerfile", () => {
  it("the pulumi CLI is @pulumi/pulumi's version and the gcp plugin @pulumi/gcp's", () => {
    assert.deepEqual(
      [arg("PULUMI_VERSION"), arg("PULUMI_GCP_VERSION")],
      [pkg.dependencies["@pulumi/pulumi"], pkg.dependencies["@pulumi/gcp"]],
    );
  });

  it("Node.js is the major package.json's engines ask for", () => {
    assert.equal(pkg.engines.node, ">=20");
    assert.equal(arg("NODE_IMAGE"), "node:20-bookworm-slim");
  });

  it("copies and compiles every folder of the production build (tsconfig.build.json)", () => {
    const build = JSON.parse(fs.readFileSync(path.join(root, "tsconfig.build.json"), "utf8")) as { include: string[] };
    const copied = [...dockerfile.matchAll(/^COPY (\S+) \.\/\1$/gm)].map((match) => match[1]);
    assert.deepEqual(copied.sort(), build.include.filter((entry) => entry !== "index.ts").sort());
    assert.match(dockerfile, /^COPY tsconfig\.json tsconfig\.build\.json index\.ts \.\/$/m);
    assert.match(dockerfile, /^RUN npx tsc -p tsconfig\.build\.json && npm prune --omit=dev/m);
  });

  it("runs as the non-root user the Deployment expects, dccm daemon under tini", () => {
    assert.equal(RUN_AS, 10001);
    assert.match(dockerfile, new RegExp(`^USER ${RUN_AS}:${RUN_AS}$`, "m"));
    assert.match(dockerfile, /^ENTRYPOINT \["\/usr\/bin\/tini", "--", "node", "\/app\/dist\/bin\/dccm\.js"\]$/m);
    assert.match(dockerfile, /^CMD \["daemon"\]$/m);
  });

  it("limits glibc to two malloc arenas (bench:soak: RSS 20-31 MB lower, without the arenas' swings)", () => {
    assert.match(dockerfile, /^ {4}MALLOC_ARENA_MAX=2$/m);
  });

  it("every production folder is in tsconfig.json too (what CI compiles and lints)", () => {
    const main = JSON.parse(fs.readFileSync(path.join(root, "tsconfig.json"), "utf8")) as { include: string[] };
    const build = JSON.parse(fs.readFileSync(path.join(root, "tsconfig.build.json"), "utf8")) as { include: string[] };
    assert.deepEqual(
      build.include.filter((entry) => !main.include.includes(entry)),
      [],
    );
  });
});
