/**
 * Stale locks of the file:// backend. Only the Lease holder runs `pulumi`, so when it starts, a
 * lock under the backend can only be left by a run of ours that was killed.
 */
import * as fs from "node:fs";
import * as path from "node:path";

/** Removes `<backend>/.pulumi/locks/**.json`; returns what it removed (relative paths). */
export function clearStaleLocks(backendDir: string): string[] {
  const root = path.join(backendDir, ".pulumi", "locks");
  const removed: string[] = [];
  const walk = (dir: string): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.isFile() && entry.name.endsWith(".json")) {
        fs.rmSync(full);
        removed.push(path.relative(backendDir, full));
      }
    }
  };
  walk(root);
  return removed.sort();
}
