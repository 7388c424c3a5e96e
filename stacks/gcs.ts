/**
 * Reads a gs:// backend's stacks without the pulumi CLI, as stacks/checkpoints.ts reads a file://
 * one: through the GCS JSON API, straight from the bucket. On gs:// a restart otherwise runs one
 * `pulumi stack export` per stack (a CLI start each, hours at 10,000 stacks); here it is one listing
 * of the project's checkpoints (plus one of its journals), then one small GET per stack, at most
 * MAX_IN_FLIGHT at a time.
 *
 * The layout is the diy backend's, under the URL's path as a prefix (pkg/backend/diy/backend.go:
 * `gs://BUCKET/PATH` is `blob.PrefixedBucket(bucket, "PATH/")`): `PATH/.pulumi/meta.yaml`,
 * `PATH/.pulumi/stacks/<project>/<stack>.json[.gz|.zst]`, `PATH/.pulumi/locks/<org>/<project>/<stack>/<id>.json`
 * (lock.go stackLockDir). The same "anything uncertain goes to the CLI" rule as the file:// reader
 * applies: a failed request (after a few retries of 429 and 5xx), an unknown layout, a URL with
 * query options, `.zst`, two encodings, a journal: "unsure".
 *
 * Credentials as the pulumi CLI's (gocloud.dev gcsblob): STORAGE_EMULATOR_HOST set means an
 * emulator over plain HTTP without credentials; else Application Default Credentials (the pod's
 * metadata server, or GOOGLE_APPLICATION_CREDENTIALS, the key file the install mounts).
 */
import { GoogleAuth } from "google-auth-library";
import * as zlib from "node:zlib";
import { fullJitterBackoffMs } from "../runtime/backoff";
import { layoutVersion, parseCheckpoint, stackNamesOf, type CheckpointRead } from "./checkpoints";

/** Requests to the bucket in flight at once, per backend reader. */
export const MAX_IN_FLIGHT = 16;
/** Attempts of one request answered 429 or 5xx (or not answered) before the read is "unsure". */
export const ATTEMPTS = 4;
const BACKOFF_BASE_MS = 250;
const BACKOFF_MAX_MS = 4_000;
const READ_WRITE_SCOPE = "https://www.googleapis.com/auth/devstorage.read_write";

export interface GcsLocation {
  bucket: string;
  /** Object-name prefix of the backend's root: "" or ending in "/". */
  prefix: string;
}

/**
 * Pure: the bucket and prefix of a `gs://` backend URL, as the diy backend opens it; undefined for
 * another scheme, or a URL with query options (gcsblob's `?anonymous=`, …: their meaning is the CLI's).
 */
export function gcsLocation(backendUrl: string): GcsLocation | undefined {
  if (!backendUrl.startsWith("gs://")) return undefined;
  let url: URL;
  try {
    url = new URL(backendUrl);
  } catch {
    return undefined;
  }
  if (url.search !== "" || url.hash !== "" || url.hostname === "" || url.username !== "" || url.port !== "")
    return undefined;
  const path = decodeURIComponent(url.pathname).replace(/^\/+/, "");
  return { bucket: url.hostname, prefix: path === "" || path.endsWith("/") ? path : `${path}/` };
}

/**
 * Pure: the JSON API's root and whether it is an emulator. STORAGE_EMULATOR_HOST is `host:port`
 * (plain HTTP, as cloud.google.com/go/storage reads it) or a URL.
 */
export function storageEndpoint(env: Readonly<Record<string, string | undefined>>): {
  root: string;
  emulator: boolean;
} {
  const host = env.STORAGE_EMULATOR_HOST;
  if (host === undefined || host === "") return { root: "https://storage.googleapis.com", emulator: false };
  return { root: (/^https?:\/\//.test(host) ? host : `http://${host}`).replace(/\/+$/, ""), emulator: true };
}

/** Pure: whether an HTTP status is worth another attempt (rate limit, server error). */
export function retriable(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** What one stack's objects are, from a listing: its checkpoint encodings and whether it has a journal. */
export interface StackObjects {
  encodings: string[];
  journaled: boolean;
}

const ENCODINGS = [".json", ".json.gz", ".json.zst"] as const;

/**
 * Pure: a project's stacks from the object names listed under its checkpoint directory `dir` (and
 * its journal directory `journalDir`): the objects directly in `dir` (not in a "subfolder").
 */
export function stacksOfListing(
  dir: string,
  names: readonly string[],
  journalDir: string,
  journalNames: readonly string[],
): Map<string, StackObjects> {
  const files = names
    .filter((name) => name.startsWith(dir) && !name.slice(dir.length).includes("/"))
    .map((name) => name.slice(dir.length));
  const journaled = new Set(
    journalNames
      .filter((name) => name.startsWith(journalDir))
      .map((name) => name.slice(journalDir.length).split("/")[0]),
  );
  const stacks = new Map<string, StackObjects>();
  for (const stack of stackNamesOf(files)) {
    stacks.set(stack, {
      encodings: ENCODINGS.filter((suffix) => files.includes(stack + suffix)),
      journaled: journaled.has(stack),
    });
  }
  return stacks;
}

/** A request that failed for good (after retries): its text names the object and the answer. */
export class GcsRequestError extends Error {
  override readonly name = "GcsRequestError";
}

export type Fetch = (url: string, init: { method: string; headers: Record<string, string> }) => Promise<Response>;

export interface GcsClientOptions {
  env: Readonly<Record<string, string | undefined>>;
  /** Default: global fetch. */
  fetch?: Fetch;
  /** Default: Math.random; the wait between attempts is full-jitter backoff. */
  random?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** The few JSON API calls the reader makes, bounded to MAX_IN_FLIGHT at once, with retries of 429/5xx. */
export class GcsClient {
  private readonly root: string;
  private readonly auth: GoogleAuth | undefined;
  private inFlight = 0;
  private readonly waiting: (() => void)[] = [];
  private readonly fetch: Fetch;
  private readonly random: () => number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(options: GcsClientOptions) {
    const endpoint = storageEndpoint(options.env);
    this.root = endpoint.root;
    // An emulator takes no credentials (gcsblob: STORAGE_EMULATOR_HOST means "without authentication").
    this.auth = endpoint.emulator ? undefined : new GoogleAuth({ scopes: [READ_WRITE_SCOPE] });
    this.fetch = options.fetch ?? ((url, init) => fetch(url, init));
    this.random = options.random ?? Math.random;
    this.sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  private async slot<T>(work: () => Promise<T>): Promise<T> {
    while (this.inFlight >= MAX_IN_FLIGHT) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.inFlight++;
    try {
      return await work();
    } finally {
      this.inFlight--;
      this.waiting.shift()?.();
    }
  }

  private async headers(url: string): Promise<Record<string, string>> {
    if (this.auth === undefined) return {};
    let headers: Headers;
    try {
      headers = await this.auth.getRequestHeaders(url);
    } catch (cause) {
      throw new GcsRequestError(
        `no Google credentials for the state bucket (Application Default Credentials / metadata server)`,
        { cause },
      );
    }
    const out: Record<string, string> = {};
    headers.forEach((value, key) => {
      out[key] = value;
    });
    return out;
  }

  /** One call; undefined for a 404. */
  private async call(method: string, url: string, what: string): Promise<Response | undefined> {
    return this.slot(async () => {
      let last = "";
      for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
        if (attempt > 1)
          await this.sleep(fullJitterBackoffMs(attempt - 1, BACKOFF_BASE_MS, BACKOFF_MAX_MS, this.random()));
        let response: Response;
        try {
          response = await this.fetch(url, { method, headers: await this.headers(url) });
        } catch (error) {
          if (error instanceof GcsRequestError) throw error;
          last = `no answer (${error instanceof Error ? error.message : String(error)})`;
          continue;
        }
        if (response.status === 404) return undefined;
        if (response.ok) return response;
        last = `HTTP ${response.status}`;
        await response.body?.cancel();
        if (!retriable(response.status)) break;
      }
      throw new GcsRequestError(`${what}: ${last}`);
    });
  }

  private objectUrl(bucket: string, name: string): string {
    return `${this.root}/storage/v1/b/${encodeURIComponent(bucket)}/o/${encodeURIComponent(name)}`;
  }

  /** Every object name under `prefix` (all pages). */
  async list(bucket: string, prefix: string): Promise<string[]> {
    const names: string[] = [];
    let pageToken: string | undefined;
    do {
      const query = new URLSearchParams({ prefix, fields: "items(name),nextPageToken" });
      if (pageToken !== undefined) query.set("pageToken", pageToken);
      const response = await this.call(
        "GET",
        `${this.root}/storage/v1/b/${encodeURIComponent(bucket)}/o?${query.toString()}`,
        `listing gs://${bucket}/${prefix}`,
      );
      if (response === undefined)
        throw new GcsRequestError(`listing gs://${bucket}/${prefix}: the bucket does not exist`);
      const page = (await response.json()) as { items?: { name?: unknown }[]; nextPageToken?: unknown };
      for (const item of page.items ?? []) if (typeof item.name === "string") names.push(item.name);
      pageToken = typeof page.nextPageToken === "string" && page.nextPageToken !== "" ? page.nextPageToken : undefined;
    } while (pageToken !== undefined);
    return names;
  }

  /** The object's bytes; undefined when it does not exist. */
  async get(bucket: string, name: string): Promise<Buffer | undefined> {
    const response = await this.call(
      "GET",
      `${this.objectUrl(bucket, name)}?alt=media`,
      `reading gs://${bucket}/${name}`,
    );
    return response === undefined ? undefined : Buffer.from(await response.arrayBuffer());
  }

  /** Deletes the object (its live version); false when it was gone already. */
  async delete(bucket: string, name: string): Promise<boolean> {
    return (await this.call("DELETE", this.objectUrl(bucket, name), `deleting gs://${bucket}/${name}`)) !== undefined;
  }
}

/** A gs:// backend's bucket, read directly (and its stale locks removed: clearStaleLocks). */
export class GcsBackend {
  /**
   * What the last listing saw of each stack, used once per stack: a restart (or a leak check)
   * lists, then reads each stack once, so the listing spares each read its own. A read after that
   * (the outputs after an up) lists the stack's own objects again.
   */
  private readonly listed = new Map<string, StackObjects>();
  /** The layout version once it was read as 1 (the CLI writes meta.yaml once, when it first opens the backend). */
  private layoutKnown = false;

  constructor(
    readonly location: GcsLocation,
    private readonly client: GcsClient,
  ) {}

  /** The backend of a `gs://` URL; undefined for any other backend, or one read only by the CLI (gcsLocation). */
  static fromUrl(
    backendUrl: string,
    env: Readonly<Record<string, string | undefined>>,
    client: Omit<GcsClientOptions, "env"> = {},
  ): GcsBackend | undefined {
    const location = gcsLocation(backendUrl);
    return location === undefined ? undefined : new GcsBackend(location, new GcsClient({ ...client, env }));
  }

  private get root(): string {
    return `${this.location.prefix}.pulumi/`;
  }

  private async projectLayout(): Promise<true | string> {
    if (this.layoutKnown) return true;
    const meta = await this.client.get(this.location.bucket, `${this.root}meta.yaml`);
    if (meta === undefined) return "the backend has no .pulumi/meta.yaml";
    const version = layoutVersion(meta.toString("utf8"));
    if (version !== 1) return `backend layout version ${String(version)}, not 1`;
    this.layoutKnown = true;
    return true;
  }

  private stacksDir(project: string): string {
    return `${this.root}stacks/${project}/`;
  }

  private journalDir(project: string): string {
    return `${this.root}journal/${project}/`;
  }

  /** Stack names of `project`, or the reason the CLI must list them. */
  async listStacks(project: string): Promise<string[] | { unsure: string }> {
    try {
      const { bucket } = this.location;
      const [meta, names, journals] = await Promise.all([
        this.client.list(bucket, `${this.root}meta.yaml`),
        this.client.list(bucket, this.stacksDir(project)),
        this.client.list(bucket, this.journalDir(project)),
      ]);
      // A backend nothing was ever written to has no stack in any layout.
      if (meta.length === 0 && names.length === 0) return [];
      const layout = await this.projectLayout();
      if (layout !== true) return { unsure: layout };
      const stacks = stacksOfListing(this.stacksDir(project), names, this.journalDir(project), journals);
      this.listed.clear();
      for (const [stack, objects] of stacks) this.listed.set(`${project}/${stack}`, objects);
      return [...stacks.keys()];
    } catch (error) {
      return { unsure: `listing the project's stacks failed (${(error as Error).message})` };
    }
  }

  private async stackObjects(project: string, stack: string): Promise<StackObjects> {
    const key = `${project}/${stack}`;
    const listed = this.listed.get(key);
    if (listed !== undefined) {
      this.listed.delete(key);
      return listed;
    }
    const { bucket } = this.location;
    const base = `${this.stacksDir(project)}${stack}`;
    const [names, journals] = await Promise.all([
      this.client.list(bucket, `${base}.json`),
      this.client.list(bucket, `${this.journalDir(project)}${stack}/`),
    ]);
    return (
      stacksOfListing(this.stacksDir(project), names, this.journalDir(project), journals).get(stack) ?? {
        encodings: [],
        journaled: journals.length > 0,
      }
    );
  }

  /** The stack's checkpoint, or why the CLI must read it. */
  async readCheckpoint(project: string, stack: string): Promise<CheckpointRead> {
    try {
      const layout = await this.projectLayout();
      if (layout !== true) return { kind: "unsure", reason: layout };
      const { encodings, journaled } = await this.stackObjects(project, stack);
      // A journal of an update cut short is replayed by the CLI's next update, not by the checkpoint (store.go JournalsDir).
      if (journaled) return { kind: "unsure", reason: "the stack has an update journal" };
      if (encodings.length === 0) return { kind: "absent" };
      if (encodings.length > 1)
        return { kind: "unsure", reason: `the stack has checkpoints ${encodings.join(" and ")}` };
      const [suffix] = encodings;
      if (suffix === ".json.zst") return { kind: "unsure", reason: "the checkpoint is zstd-compressed" };
      const bytes = await this.client.get(this.location.bucket, `${this.stacksDir(project)}${stack}${suffix}`);
      // Removed since it was listed: the stack is gone, as a file:// read would find it.
      if (bytes === undefined) return { kind: "absent" };
      let text: string;
      try {
        text = (suffix === ".json.gz" ? zlib.gunzipSync(bytes) : bytes).toString("utf8");
      } catch (error) {
        return { kind: "unsure", reason: `reading the checkpoint failed (${(error as Error).message})` };
      }
      return parseCheckpoint(text);
    } catch (error) {
      return { kind: "unsure", reason: `reading the checkpoint failed (${(error as Error).message})` };
    }
  }

  /**
   * Removes every stack lock (`.pulumi/locks/**.json`); returns the object names removed, relative
   * to the backend's root. Only for the one leader of the cluster the stacks belong to (the
   * daemon, after its identity check): a lock then can only be a killed run's of ours.
   */
  async clearStaleLocks(): Promise<string[]> {
    const { bucket, prefix } = this.location;
    const locks = (await this.client.list(bucket, `${this.root}locks/`)).filter((name) => name.endsWith(".json"));
    const removed: string[] = [];
    for (const name of locks) if (await this.client.delete(bucket, name)) removed.push(name.slice(prefix.length));
    return removed.sort();
  }
}
