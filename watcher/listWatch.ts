/**
 * A list-watch of one collection that keeps no objects: each object goes to the caller as it
 * arrives (the caller keeps a trimmed copy and drops the rest), and only each object's
 * resourceVersion stays here, to tell a new version from one already seen. client-node's informer
 * kept every full object (a kubelet-shaped Node is kilobytes of images and conditions) and read
 * the initial list as one response; this one lists in pages.
 *
 * The protocol is the apiserver's (https://kubernetes.io/docs/reference/using-api/api-concepts/):
 * list in pages (`limit` + `continue`), then watch from the list's resourceVersion with
 * `allowWatchBookmarks`, so the resourceVersion to resume from keeps moving even when nothing in
 * the collection changes. A watch the server ends normally (its timeout) resumes from the last
 * resourceVersion; a `410 Gone` (the resourceVersion is older than the server keeps, as after an
 * etcd compaction) lists again, and so does an expired continue token (the list starts over: its
 * pages must come from one snapshot).
 */
import type * as k8s from "@kubernetes/client-node";
import { kubeStatusCode } from "../runtime/kube";

export interface ObjectRef {
  metadata?: { name?: string; namespace?: string; resourceVersion?: string };
}

/** One page of a list, as the apiserver returns it. */
export interface ListPage<T extends ObjectRef> {
  items: T[];
  metadata?: { resourceVersion?: string; _continue?: string };
}

export interface ListWatchHandlers<T extends ObjectRef> {
  /** An object the collection did not have, or a new version of one it had. */
  put(object: T, kind: "added" | "updated"): void;
  /** The object under this key (`namespace/name`, or `name` when cluster-scoped) is gone. */
  remove(key: string): void;
  /**
   * The list or the watch failed (other than by a 410, which relists on its own): nothing more
   * happens until start() is called again, which resumes from the last resourceVersion.
   */
  failed(error: unknown): void;
  /** A list or a watch is about to be opened. */
  connecting?(): void;
}

export interface LeanListWatchOptions<T extends ObjectRef> {
  /** The collection's path, e.g. `/api/v1/nodes`. */
  path: string;
  /** One page of the list; `_continue` undefined for the first. */
  list(page: { limit: number; _continue?: string }): Promise<ListPage<T>>;
  watch: Pick<k8s.Watch, "watch">;
  handlers: ListWatchHandlers<T>;
  /** Objects per list page. Default DEFAULT_PAGE_SIZE. */
  pageSize?: number;
  /**
   * Server-side timeout of each watch, in seconds; the watch then resumes from where it was.
   * Default: a random 300-600 s, as client-go's reflector, so the watches of many clients do not
   * all end at once.
   */
  watchTimeoutSeconds?: () => number;
}

/** An expired continue token restarts the list from its first page, at most this many times in a row. */
export const MAX_LIST_RESTARTS = 3;

/**
 * 100, not client-go's 500: each page is read whole and deserialized before it is trimmed, and the
 * process keeps the memory of its largest pages. Measured with bench/watcherScale.ts (5,000
 * kubelet-shaped Nodes + 10,000 Services): watcher RSS 218 MB with pages of 500, 156 MB with 100.
 */
export const DEFAULT_PAGE_SIZE = 100;

export function objectKey(object: ObjectRef): string {
  const namespace = object.metadata?.namespace;
  const name = object.metadata?.name ?? "";
  return namespace === undefined || namespace === "" ? name : `${namespace}/${name}`;
}

function defaultWatchTimeoutSeconds(): number {
  return 300 + Math.floor(Math.random() * 300);
}

export class LeanListWatch<T extends ObjectRef> {
  /** What the next watch resumes from; "" = list first. */
  private resumeFrom = "";
  private readonly versions = new Map<string, string>();
  /** Bumped by every (re)start and stop: callbacks of an older list or watch are ignored. */
  private generation = 0;
  private abortWatch: AbortController | undefined;
  /** Lists run so far (each a full pass over the pages), for observability. */
  private listCount = 0;

  constructor(private readonly options: LeanListWatchOptions<T>) {}

  /**
   * Lists if there is nothing to resume from, then opens the watch; resolves once the watch is
   * open or the attempt failed (reported through `failed`, never thrown).
   */
  async start(): Promise<void> {
    await this.run(++this.generation);
  }

  /** Aborts the watch (and any list in flight is ignored); start() may follow. */
  stop(): void {
    this.generation++;
    this.abortWatch?.abort();
    this.abortWatch = undefined;
  }

  /** The resourceVersion the next watch starts from ("" after a 410: a list comes first). */
  resourceVersion(): string {
    return this.resumeFrom;
  }

  /** Complete lists so far: 1 after the first start, one more per relist. */
  lists(): number {
    return this.listCount;
  }

  /** Keys of the objects the collection holds. */
  keys(): IterableIterator<string> {
    return this.versions.keys();
  }

  private async run(generation: number): Promise<void> {
    this.options.handlers.connecting?.();
    try {
      if (this.resumeFrom === "") await this.list(generation);
      if (generation !== this.generation) return;
      await this.openWatch(generation);
    } catch (error) {
      if (generation === this.generation) this.options.handlers.failed(error);
    }
  }

  private async list(generation: number): Promise<void> {
    for (let restarts = 0; ; restarts++) {
      const outcome = await this.listPages(generation);
      if (outcome !== "expired") return;
      if (restarts + 1 >= MAX_LIST_RESTARTS)
        throw new Error(`listing ${this.options.path}: the continue token expired ${MAX_LIST_RESTARTS} times in a row`);
    }
  }

  /** One pass over the pages; objects are handed over page by page, deletions once the last page is in. */
  private async listPages(generation: number): Promise<"done" | "expired" | "stale"> {
    const limit = this.options.pageSize ?? DEFAULT_PAGE_SIZE;
    const seen = new Set<string>();
    let continueToken: string | undefined;
    let resourceVersion = "";
    do {
      let page: ListPage<T>;
      try {
        page = await this.options.list({ limit, ...(continueToken === undefined ? {} : { _continue: continueToken }) });
      } catch (error) {
        // 410 on a later page: the snapshot behind the token was compacted away.
        if (continueToken !== undefined && kubeStatusCode(error) === 410) return "expired";
        throw new Error(`listing ${this.options.path}`, { cause: error });
      }
      if (generation !== this.generation) return "stale";
      for (const item of page.items) {
        const key = objectKey(item);
        seen.add(key);
        this.apply(key, item);
      }
      resourceVersion = page.metadata?.resourceVersion ?? "";
      const next = page.metadata?._continue;
      continueToken = next === undefined || next === "" ? undefined : next;
    } while (continueToken !== undefined);
    for (const key of [...this.versions.keys()]) {
      if (!seen.has(key)) {
        this.versions.delete(key);
        this.options.handlers.remove(key);
      }
    }
    this.resumeFrom = resourceVersion;
    this.listCount++;
    return "done";
  }

  /** Hands a new object or a new version over; the same version again (a relist) is no change. */
  private apply(key: string, object: T): void {
    const version = object.metadata?.resourceVersion ?? "";
    const known = this.versions.get(key);
    if (known !== undefined && known === version && version !== "") return;
    this.versions.set(key, version);
    this.options.handlers.put(object, known === undefined ? "added" : "updated");
  }

  private async openWatch(generation: number): Promise<void> {
    let gone = false;
    let statusError: Error | undefined;
    const timeoutSeconds = (this.options.watchTimeoutSeconds ?? defaultWatchTimeoutSeconds)();
    const onEvent = (type: string, object: unknown): void => {
      if (generation !== this.generation) return;
      if (type === "ERROR") {
        // A Status in place of an object; the server ends the watch after it.
        const status = (object ?? {}) as { code?: unknown; message?: unknown };
        if (status.code === 410) gone = true;
        else statusError = new Error(`watching ${this.options.path}: ${String(status.code)} ${String(status.message)}`);
        this.abortWatch?.abort();
        return;
      }
      const item = object as T;
      const version = item.metadata?.resourceVersion ?? "";
      if (type === "ADDED" || type === "MODIFIED") this.apply(objectKey(item), item);
      else if (type === "DELETED") {
        const key = objectKey(item);
        if (this.versions.delete(key)) this.options.handlers.remove(key);
      }
      // BOOKMARK: only its resourceVersion, so a resumed watch starts from there.
      if (version !== "") this.resumeFrom = version;
    };
    const onDone = (error: unknown): void => {
      if (generation !== this.generation) return;
      this.abortWatch = undefined;
      if (gone || kubeStatusCode(error) === 410) {
        this.resumeFrom = "";
        void this.run(++this.generation);
      } else if (statusError !== undefined || (error !== null && error !== undefined)) {
        this.options.handlers.failed(statusError ?? new Error(`watching ${this.options.path}`, { cause: error }));
      } else {
        // The server's timeout: not a failure, the next watch resumes where this one stopped.
        void this.run(++this.generation);
      }
    };
    const controller = await this.options.watch.watch(
      this.options.path,
      { resourceVersion: this.resumeFrom, allowWatchBookmarks: true, timeoutSeconds },
      onEvent,
      onDone,
    );
    // Stopped (or ended) while the request was opening: nothing may keep it open.
    if (generation !== this.generation) controller.abort();
    else this.abortWatch = controller;
  }
}
