/**
 * Repairs of the file:// backend after a killed run. Only the Lease holder runs `pulumi`, so when
 * it starts, a lock under the backend can only be left by a run of ours that was killed; and a
 * truncated `.attrs` sidecar (the blob library writes them in place, not by rename) makes every
 * read of its checkpoint fail with "EOF".
 */
import * as fs from "node:fs";
import * as path from "node:path";

function walk(dir: string, visit: (file: string) => void): void {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(full, visit);
    else if (entry.isFile()) visit(full);
  }
}

/** Removes `<backend>/.pulumi/locks/**.json`; returns what it removed (relative paths). */
export function clearStaleLocks(backendDir: string): string[] {
  const removed: string[] = [];
  walk(path.join(backendDir, ".pulumi", "locks"), (file) => {
    if (!file.endsWith(".json")) return;
    fs.rmSync(file);
    removed.push(path.relative(backendDir, file));
  });
  return removed.sort();
}

/**
 * Removes `.attrs` sidecars under `<backend>/.pulumi` that are not valid JSON: they only carry blob
 * metadata (content type), and a missing one reads as "no attributes". Returns the removed paths.
 */
export function removeTruncatedAttrs(backendDir: string): string[] {
  const removed: string[] = [];
  walk(path.join(backendDir, ".pulumi"), (file) => {
    if (!file.endsWith(".attrs")) return;
    try {
      JSON.parse(fs.readFileSync(file, "utf8"));
    } catch {
      fs.rmSync(file);
      removed.push(path.relative(backendDir, file));
    }
  });
  return removed.sort();
}
