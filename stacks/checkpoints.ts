/**
 * Reads a file:// backend's stacks without the pulumi CLI. After a restart the daemon reads every
 * stack once (its recorded hash, identity and pending creates); through the CLI that is one
 * `pulumi stack select` and one `pulumi stack export` per stack, each a CLI start of 1-5 s on a
 * busy 2-core machine, all competing with the one `up` that matters. The checkpoint files hold the
 * same deployment, so a restart that changed nothing costs no CLI run at all.
 *
 * Only what is certain is read here; anything else is "unsure" and the caller asks the CLI. The
 * layout is Pulumi's diy backend (pkg/backend/diy/store.go, projectReferenceStore, layout version 1
 * in `.pulumi/meta.yaml`): `.pulumi/stacks/<project>/<stack>.json`, or `.json.gz` with
 * PULUMI_DIY_BACKEND_GZIP, or `.json.zst` with PULUMI_DIY_BACKEND_ZSTD; the file is a versioned
 * checkpoint `{ version, checkpoint: { stack, latest } }` whose `latest` is the deployment `pulumi
 * stack export` prints (with the same version, stack.MarshalUntypedDeploymentToVersionedCheckpoint).
 * Nothing here ever writes the backend: repairs go through `pulumi stack import`.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import * as zlib from "node:zlib";
import * as YAML from "yaml";
import { isRecord } from "../runtime/guards";

/**
 * The checkpoint versions this reader knows: 3 (apitype.CheckpointV3), and 4, the same deployment
 * declaring `features` some resources use (e.g. `replaceWith`; written since pulumi 3.187). Which
 * resource options a deployment uses changes nothing dccm reads (root outputs, pending creates);
 * the features go back with any repaired state, as `stack import` expects them.
 */
export const CHECKPOINT_VERSIONS: readonly number[] = [3, 4];

export type CheckpointRead =
  /** No checkpoint file: the backend has no such stack. */
  | { kind: "absent" }
  /** `deployment` undefined: the stack exists and was never updated. */
  | { kind: "read"; version: number; features?: string[]; deployment: Record<string, unknown> | undefined }
  /** The CLI must read this stack (the reason says why). */
  | { kind: "unsure"; reason: string };

const ENCODINGS = [".json", ".json.gz", ".json.zst"] as const;

/** Pure: the diy layout version `.pulumi/meta.yaml` declares (0, the legacy layout, when it has none). */
export function layoutVersion(metaYaml: string): number | undefined {
  let parsed: unknown;
  try {
    parsed = YAML.parse(metaYaml);
  } catch {
    return undefined;
  }
  if (parsed === null || parsed === undefined) return 0;
  if (!isRecord(parsed)) return undefined;
  const version = parsed.version ?? 0;
  return typeof version === "number" && Number.isInteger(version) ? version : undefined;
}

/** Pure: one checkpoint file's text (already decompressed). */
export function parseCheckpoint(text: string): CheckpointRead {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return {
      kind: "unsure",
      reason: `the checkpoint is not JSON (${error instanceof Error ? error.message : String(error)})`,
    };
  }
  if (!isRecord(parsed) || !isRecord(parsed.checkpoint))
    return { kind: "unsure", reason: "the checkpoint has no `checkpoint` object" };
  const version = parsed.version;
  if (typeof version !== "number" || !CHECKPOINT_VERSIONS.includes(version)) {
    return {
      kind: "unsure",
      reason: `checkpoint version ${JSON.stringify(version)}, not ${CHECKPOINT_VERSIONS.join(" or ")}`,
    };
  }
  const features = parsed.features;
  if (
    features !== undefined &&
    !(Array.isArray(features) && features.every((feature) => typeof feature === "string"))
  ) {
    return { kind: "unsure", reason: "the checkpoint's `features` is not a list of names" };
  }
  const latest = parsed.checkpoint.latest;
  if (latest !== undefined && latest !== null && !isRecord(latest))
    return { kind: "unsure", reason: "the checkpoint's `latest` is not an object" };
  return {
    kind: "read",
    version,
    ...(features !== undefined ? { features: features } : {}),
    deployment: isRecord(latest) ? latest : undefined,
  };
}

/**
 * Pure: the stack names of one project directory's file names, as `pulumi stack ls` lists them
 * (store.go ListReferences: `<stack>.json`, `.json.gz` or `.json.zst`; backups and sidecars are not stacks).
 */
export function stackNamesOf(fileNames: readonly string[]): string[] {
  const names = new Set<string>();
  for (const file of fileNames) {
    const encoding = ENCODINGS.find((suffix) => file.endsWith(suffix));
    if (encoding === undefined) continue;
    const name = file.slice(0, -encoding.length);
    if (name !== "") names.add(name);
  }
  return [...names].sort();
}

/** A file:// backend's directory, read directly. */
export class FileBackend {
  constructor(readonly dir: string) {}

  /** The backend of a `file://` URL; undefined for any other backend. */
  static fromUrl(backendUrl: string): FileBackend | undefined {
    return backendUrl.startsWith("file://") ? new FileBackend(backendUrl.slice("file://".length)) : undefined;
  }

  private get root(): string {
    return path.join(this.dir, ".pulumi");
  }

  /** Whether stacks live under `.pulumi/stacks/<project>/`; a reason when that is not certain. */
  private projectLayout(): true | string {
    let meta: string;
    try {
      meta = fs.readFileSync(path.join(this.root, "meta.yaml"), "utf8");
    } catch {
      // The CLI writes meta.yaml when it first opens a backend; without it the legacy layout may be in use.
      return "the backend has no .pulumi/meta.yaml";
    }
    const version = layoutVersion(meta);
    return version === 1 ? true : `backend layout version ${String(version)}, not 1`;
  }

  /** Stack names of `project`, or the reason the CLI must list them. */
  listStacks(project: string): string[] | { unsure: string } {
    // A backend nothing was ever written to has no stack in any layout.
    if (!fs.existsSync(this.root)) return [];
    const layout = this.projectLayout();
    if (layout !== true) return { unsure: layout };
    let files: fs.Dirent[];
    try {
      files = fs.readdirSync(path.join(this.root, "stacks", project), { withFileTypes: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      return { unsure: `listing the project's stacks failed (${(error as Error).message})` };
    }
    return stackNamesOf(files.filter((file) => file.isFile()).map((file) => file.name));
  }

  /** The stack's checkpoint, or why the CLI must read it. */
  readCheckpoint(project: string, stack: string): CheckpointRead {
    const layout = this.projectLayout();
    if (layout !== true) return { kind: "unsure", reason: layout };
    // A journal of an update cut short is replayed by the CLI's next update, not by the checkpoint file (store.go JournalsDir).
    const journal = path.join(this.root, "journal", project, stack);
    if (fs.existsSync(journal) && fs.readdirSync(journal).length > 0)
      return { kind: "unsure", reason: "the stack has an update journal" };
    const base = path.join(this.root, "stacks", project, stack);
    const present = ENCODINGS.filter((suffix) => fs.existsSync(base + suffix));
    if (present.length === 0) return { kind: "absent" };
    // With two encodings the CLI reads the newer file (backend.go stackPath); that choice is the CLI's.
    if (present.length > 1) return { kind: "unsure", reason: `the stack has checkpoints ${present.join(" and ")}` };
    const [suffix] = present;
    if (suffix === ".json.zst") return { kind: "unsure", reason: "the checkpoint is zstd-compressed" };
    let text: string;
    try {
      const bytes = fs.readFileSync(base + suffix);
      text = (suffix === ".json.gz" ? zlib.gunzipSync(bytes) : bytes).toString("utf8");
    } catch (error) {
      return { kind: "unsure", reason: `reading the checkpoint failed (${(error as Error).message})` };
    }
    return parseCheckpoint(text);
  }
}
