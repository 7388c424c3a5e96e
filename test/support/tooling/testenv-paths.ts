// Where `bash scripts/testenv` puts the offline test environment's binaries.
//
// This file compiles to dist/test/support/tooling/testenv-paths.js, so the repository root is four
// levels up from the compiled file's directory (dist/test/support/tooling → dist/test/support → dist/test → dist → root).

import * as fs from "node:fs";
import * as path from "node:path";

/** Absolute path of the repository root, derived from this file's compiled location. */
export function repoRoot(): string {
  return path.resolve(__dirname, "..", "..", "..", "..");
}

/** Absolute path of `<repo>/.testenv/bin`, where scripts/testenv installs its binaries. */
export function testenvBinDir(): string {
  return path.join(repoRoot(), ".testenv", "bin");
}

/**
 * Absolute path of the named binary in `.testenv/bin`.
 * Throws when it is missing (or not executable), telling the reader how to get it.
 */
export function requireTestenvBinary(name: string): string {
  if (name.length === 0 || name.includes("/") || name.includes(path.sep)) {
    throw new Error(`requireTestenvBinary: expected a bare binary name, got ${JSON.stringify(name)}`);
  }
  const file = path.join(testenvBinDir(), name);
  try {
    fs.accessSync(file, fs.constants.X_OK);
  } catch (cause) {
    throw new Error(`run \`bash scripts/testenv\` first: missing .testenv/bin/${name} (looked for ${file})`, {
      cause,
    });
  }
  return file;
}
