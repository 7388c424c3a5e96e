/**
 * watcher/listWatch.ts over a fake apiserver: pages served from a table, watches the test drives
 * event by event (the e2e tier, test/e2e/listWatch.e2e.ts, runs it on a real kube-apiserver).
 */
import * as assert from "node:assert/strict";
import { describeError } from "../../../runtime/errors";
import { LeanListWatch, MAX_LIST_RESTARTS, type ListPage, type ObjectRef } from "../../../watcher/listWatch";

interface Obj extends ObjectRef {
  metadata: { name: string; namespace?: string; resourceVersion: string };
}

function obj(name: string, resourceVersion: string, namespace?: string): Obj {
  return { metadata: { name, resourceVersion, ...(namespace === undefined ? {} : { namespace }) } };
}

class Gone extends Error {
  readonly code = 410;
}

interface OpenWatch {
  resourceVersion: string;
  allowWatchBookmarks: boolean;
  timeoutSeconds: number;
  event(type: string, object: unknown): void;
  done(error: unknown): void;
  aborted(): boolean;
}

/** The apiserver: list answers from a queue (a page, or an error to throw); watches recorded for the test to drive. */
class FakeServer {
  readonly listCalls: { limit: number; _continue?: string }[] = [];
  readonly watches: OpenWatch[] = [];
  readonly answers: (ListPage<Obj> | Error)[] = [];
  readonly seen: string[] = [];
  readonly failures: string[] = [];
  private waiters: (() => void)[] = [];

  readonly listWatch = new LeanListWatch<Obj>({
    path: "/api/v1/nodes",
    pageSize: 2,
    watchTimeoutSeconds: () => 420,
    list: (page) => {
      this.listCalls.push(page);
      const answer = this.answers.shift();
      if (answer === undefined) throw new Error("the test gave no answer for this list call");
      return answer instanceof Error ? Promise.reject(answer) : Promise.resolve(answer);
    },
    watch: {
      watch: (_path, query, event, done) => {
        const controller = new AbortController();
        this.watches.push({
          resourceVersion: String(query.resourceVersion),
          allowWatchBookmarks: query.allowWatchBookmarks === true,
          timeoutSeconds: Number(query.timeoutSeconds),
          event: (type, object) => event(type, object, {}),
          done,
          aborted: () => controller.signal.aborted,
        });
        for (const wake of this.waiters.splice(0)) wake();
        return Promise.resolve(controller);
      },
    },
    handlers: {
      put: (object, kind) => this.seen.push(`${kind} ${object.metadata.name}@${object.metadata.resourceVersion}`),
      remove: (key) => this.seen.push(`removed ${key}`),
      failed: (error) => this.failures.push(describeError(error)),
    },
  });

  /** Resolves once `count` watches have been opened (a relist or a resume opens the next one). */
  async watchCount(count: number): Promise<OpenWatch> {
    while (this.watches.length < count) await new Promise<void>((resolve) => this.waiters.push(resolve));
    return this.watches[count - 1];
  }
}

function page(items: Obj[], resourceVersion: string, next?: string): ListPage<Obj> {
  return { items, metadata: { resourceVersion, ...(next === undefined ? {} : { _continue: next }) } };
}

describe("LeanListWatch (watcher/listWatch.ts) over a fake apiserver", () => {
  it("lists in pages, hands each object over once, then watches from the list's resourceVersion with bookmarks", async () => {
    const server = new FakeServer();
    server.answers.push(page([obj("a", "10"), obj("b", "11")], "", "token-1"), page([obj("c", "12")], "15"));
    await server.listWatch.start();
    assert.deepEqual(server.listCalls, [{ limit: 2 }, { limit: 2, _continue: "token-1" }]);
    assert.deepEqual(server.seen, ["added a@10", "added b@11", "added c@12"]);
    const watch = server.watches[0];
    assert.deepEqual([watch.resourceVersion, watch.allowWatchBookmarks, watch.timeoutSeconds], ["15", true, 420]);
    assert.deepEqual(
      [server.listWatch.lists(), server.listWatch.resourceVersion(), [...server.listWatch.keys()]],
      [1, "15", ["a", "b", "c"]],
    );
  });

  it("watch events: a new object is added, a new version updated, the same version again nothing, a delete removed once; a bookmark only moves the resourceVersion", async () => {
    const server = new FakeServer();
    server.answers.push(page([obj("a", "10", "ns")], "10"));
    await server.listWatch.start();
    const watch = server.watches[0];
    watch.event("ADDED", obj("b", "11", "ns"));
    watch.event("MODIFIED", obj("a", "12", "ns"));
    watch.event("MODIFIED", obj("a", "12", "ns"));
    watch.event("BOOKMARK", { metadata: { resourceVersion: "20" } });
    watch.event("DELETED", obj("b", "21", "ns"));
    watch.event("DELETED", obj("never-seen", "22", "ns"));
    assert.deepEqual(server.seen, ["added a@10", "added b@11", "updated a@12", "removed ns/b"]);
    assert.equal(server.listWatch.resourceVersion(), "22");
    assert.deepEqual(server.failures, []);
  });

  it("a watch the server ends normally (its timeout) resumes from the last resourceVersion, without a list", async () => {
    const server = new FakeServer();
    server.answers.push(page([obj("a", "10")], "10"));
    await server.listWatch.start();
    server.watches[0].event("BOOKMARK", { metadata: { resourceVersion: "30" } });
    server.watches[0].done(null);
    const next = await server.watchCount(2);
    assert.deepEqual(
      [next.resourceVersion, server.listCalls.length, server.listWatch.lists(), server.failures],
      ["30", 1, 1, []],
    );
  });

  for (const [how, end] of [
    [
      "an ERROR event with a 410 Status",
      (w: OpenWatch) => {
        w.event("ERROR", { kind: "Status", code: 410, message: "too old resource version: 10 (40)" });
        // The event aborts the watch; the client then reports it done, as client-node's does.
        assert.equal(w.aborted(), true);
        w.done(null);
      },
    ],
    ["the watch request failing with 410", (w: OpenWatch) => w.done(new Gone("Gone"))],
  ] as const) {
    it(`410 Gone (${how}) lists again: what the new list lacks is removed, an unchanged version is not handed over again`, async () => {
      const server = new FakeServer();
      server.answers.push(page([obj("a", "10"), obj("b", "11")], "11"));
      await server.listWatch.start();
      server.answers.push(page([obj("a", "10"), obj("c", "50")], "55"));
      end(server.watches[0]);
      const next = await server.watchCount(2);
      assert.deepEqual(server.seen, ["added a@10", "added b@11", "added c@50", "removed b"]);
      assert.deepEqual([next.resourceVersion, server.listWatch.lists(), server.failures], ["55", 2, []]);
    });
  }

  it(`an expired continue token starts the list over from its first page; after ${MAX_LIST_RESTARTS} in a row the list fails, named`, async () => {
    const server = new FakeServer();
    for (let i = 0; i < MAX_LIST_RESTARTS; i++)
      server.answers.push(
        page([obj("a", "10"), obj("b", "11")], "", `token-${i}`),
        new Gone("the provided continue parameter is too old"),
      );
    await server.listWatch.start();
    assert.deepEqual(
      server.listCalls.map((call) => call._continue ?? "first"),
      ["first", "token-0", "first", "token-1", "first", "token-2"],
    );
    assert.deepEqual(server.failures, [
      `listing /api/v1/nodes: the continue token expired ${MAX_LIST_RESTARTS} times in a row`,
    ]);
    assert.deepEqual([server.watches.length, server.listWatch.lists()], [0, 0]);
  });

  it("an expired continue token once: the second pass completes and the watch opens from its resourceVersion", async () => {
    const server = new FakeServer();
    server.answers.push(
      page([obj("a", "10"), obj("b", "11")], "", "token-0"),
      new Gone("expired"),
      page([obj("a", "10"), obj("b", "11")], "", "token-1"),
      page([obj("c", "12")], "13"),
    );
    await server.listWatch.start();
    assert.deepEqual(
      [server.seen, server.watches[0].resourceVersion, server.failures],
      [["added a@10", "added b@11", "added c@12"], "13", []],
    );
  });

  it("a first page that fails is reported as the listing's failure, its cause kept; start() again lists again", async () => {
    const server = new FakeServer();
    server.answers.push(new Error("connect ECONNREFUSED 127.0.0.1:6443"));
    await server.listWatch.start();
    assert.deepEqual(server.failures, ["listing /api/v1/nodes: connect ECONNREFUSED 127.0.0.1:6443"]);
    server.answers.push(page([obj("a", "10")], "10"));
    await server.listWatch.start();
    assert.deepEqual([server.seen, server.watches[0].resourceVersion], [["added a@10"], "10"]);
  });

  it("an ERROR event with another Status fails the watch, named with its code and message; start() resumes from the last resourceVersion", async () => {
    const server = new FakeServer();
    server.answers.push(page([obj("a", "10")], "10"));
    await server.listWatch.start();
    server.watches[0].event("ERROR", { kind: "Status", code: 500, message: "etcdserver: request timed out" });
    assert.equal(server.watches[0].aborted(), true);
    server.watches[0].done(null);
    assert.deepEqual(server.failures, ["watching /api/v1/nodes: 500 etcdserver: request timed out"]);
    await server.listWatch.start();
    assert.deepEqual([server.watches[1].resourceVersion, server.listCalls.length], ["10", 1]);
  });

  it("stop() during a list: the list's objects are not handed over and no watch opens", async () => {
    const server = new FakeServer();
    let answer: (value: ListPage<Obj>) => void = () => undefined;
    const lw = new LeanListWatch<Obj>({
      path: "/api/v1/services",
      list: () => new Promise((resolve) => (answer = resolve)),
      watch: { watch: () => Promise.reject(new Error("no watch may open")) },
      handlers: {
        put: (o) => server.seen.push(o.metadata.name),
        remove: (k) => server.seen.push(k),
        failed: (e) => server.failures.push(describeError(e)),
      },
    });
    const started = lw.start();
    lw.stop();
    answer(page([obj("a", "10")], "10"));
    await started;
    assert.deepEqual([server.seen, server.failures, lw.lists()], [[], [], 0]);
  });
});
