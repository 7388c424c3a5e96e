/**
 * What a test environment's backend holds, listed the same way on file:// (its directory) and gs://
 * (its fake-gcs-server bucket, one listing of the JSON API): the projects and stacks whose
 * checkpoints it keeps. A suite that asserts what the backend holds uses these (with backendLocks and
 * backendContents of ./daemon-process) and so runs on either backend. The listing is the bucket's
 * or the directory's own, not dccm's reader of it (stacks/reader.ts), which the suites test.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { GcsClient, gcsLocation } from "../../../stacks/gcs";
import type { TestEnv } from "./env";

/** The checkpoint names under `.pulumi/stacks/` (`<project>/<stack>.json`), sorted. */
async function checkpointNames(env: TestEnv): Promise<string[]> {
  if (env.backend === "file") {
    const root = path.join(env.backendUrl.slice("file://".length), ".pulumi", "stacks");
    if (!fs.existsSync(root)) return [];
    return (fs.readdirSync(root, { recursive: true }) as string[])
      .filter((file) => file.endsWith(".json"))
      .map((file) => file.split(path.sep).join("/"))
      .sort();
  }
  const location = gcsLocation(env.backendUrl);
  if (location === undefined)
    throw new Error(`checkpointNames: ${env.backendUrl} is neither a file:// nor a gs:// backend`);
  const root = `${location.prefix}.pulumi/stacks/`;
  const names = await new GcsClient({ env: env.pulumiEnv }).list(location.bucket, root);
  return names
    .filter((name) => name.endsWith(".json"))
    .map((name) => name.slice(root.length))
    .sort();
}

/** The projects that hold at least one stack checkpoint, sorted. */
export async function backendProjects(env: TestEnv): Promise<string[]> {
  return [...new Set((await checkpointNames(env)).map((name) => name.split("/")[0]))].sort();
}

/** The stacks with a checkpoint, of `project` or of every project, by stack name, sorted. */
export async function backendStackNames(env: TestEnv, project?: string): Promise<string[]> {
  return (await checkpointNames(env))
    .map((name) => name.split("/"))
    .filter((parts) => parts.length === 2 && (project === undefined || parts[0] === project))
    .map((parts) => parts[1].slice(0, -".json".length))
    .sort();
}
