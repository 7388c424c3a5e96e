// The emulator's generic store (store.ts): one map per kind, copies out, sorted lists, ids and the
// history of every change.
import * as assert from "node:assert/strict";

import { type ResourceKey, ResourceStore } from "../store";

const AT = new Date("2024-01-02T03:04:05.000Z");
const key = (kind: ResourceKey["kind"], scope: string, name: string): ResourceKey => ({
  kind,
  project: "p",
  scope,
  name,
});

describe("GCE emulator store (store.ts)", () => {
  it("find returns a copy: changing it changes nothing stored; peek returns the stored resource", () => {
    const store = new ResourceStore(() => AT);
    const k = key("addresses", "us-central1", "a");
    store.put(k, { address: "203.0.113.1", labels: { x: "1" } }, "create");
    const copy = store.find(k);
    assert.ok(copy !== undefined);
    copy.properties.address = "changed";
    assert.deepEqual(store.find(k), { ...k, properties: { address: "203.0.113.1", labels: { x: "1" } } });
    assert.equal(store.peek(k)?.properties.address, "203.0.113.1");
    assert.equal(store.find(key("addresses", "us-central1", "b")), undefined);
  });

  it("list sorts by kind, project, scope and name, and filters by each; ofKind keeps insertion order", () => {
    const store = new ResourceStore(() => AT);
    store.put(key("routes", "global", "r"), {});
    store.put(key("addresses", "us-east1", "b"), {});
    store.put(key("addresses", "us-central1", "z"), {});
    store.put(key("addresses", "us-central1", "a"), {});
    assert.deepEqual(
      store.list().map((r) => `${r.kind}/${r.scope}/${r.name}`),
      ["addresses/us-central1/a", "addresses/us-central1/z", "addresses/us-east1/b", "routes/global/r"],
    );
    assert.deepEqual(
      store.list({ kind: "addresses", scope: "us-central1" }).map((r) => r.name),
      ["a", "z"],
    );
    assert.deepEqual(store.list({ project: "other" }), []);
    assert.deepEqual(
      store.ofKind("addresses").map((r) => r.name),
      ["b", "z", "a"],
    );
  });

  it("records creates, updates and deletes with the clock; a put without an op is not recorded", () => {
    let now = AT;
    const store = new ResourceStore(() => now);
    const k = key("firewalls", "global", "fw");
    store.put(k, { priority: 1000 }, "create");
    now = new Date(AT.getTime() + 1000);
    store.put(k, { priority: 900 }, "update");
    store.put(k, { priority: 800 });
    const gone = store.remove(k);
    assert.deepEqual(gone, { ...k, properties: { priority: 800 } });
    assert.equal(store.has(k), false);
    assert.deepEqual(store.history(), [
      { at: AT.getTime(), kind: "firewalls", scope: "global", name: "fw", op: "create" },
      { at: AT.getTime() + 1000, kind: "firewalls", scope: "global", name: "fw", op: "update" },
      { at: AT.getTime() + 1000, kind: "firewalls", scope: "global", name: "fw", op: "delete" },
    ]);
    store.clearHistory();
    assert.deepEqual(store.history(), []);
  });

  it("ids count up from 1e18 and go on counting after clear, which empties resources and history", () => {
    const store = new ResourceStore(() => AT);
    assert.deepEqual([store.newId(), store.newId()], ["1000000000000000001", "1000000000000000002"]);
    store.put(key("routes", "global", "r"), {}, "create");
    store.clear();
    assert.deepEqual([store.all(), store.history(), store.newId()], [[], [], "1000000000000000003"]);
  });
});
