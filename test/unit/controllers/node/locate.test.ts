// InstanceLocator: one aggregated list serves a whole wave of lookups; absence is only trusted
// from a list taken after the lookup was asked; deletion lookups always ask instances.get.

import * as assert from "node:assert/strict";

import { MemoryCompute as FakeCompute } from "../../../support/fakes/nodes";
import { InstanceLocator } from "../../../../controllers/node/locate";

describe("controllers/node/locate InstanceLocator", () => {
  let compute: FakeCompute;
  let clock: number;
  let locator: InstanceLocator;

  beforeEach(() => {
    compute = new FakeCompute();
    clock = 1_000_000;
    locator = new InstanceLocator(compute, { project: "p", region: "us-central1", ttlMs: 10_000, now: () => clock });
  });

  it("500 concurrent name lookups cost one regions.get and one aggregated list", async () => {
    for (let i = 0; i < 500; i++) {
      compute.add("p", `us-central1-${"abc"[i % 3] ?? "a"}`, `node-${i}`);
    }
    const results = await Promise.all(Array.from({ length: 500 }, (_, i) => locator.byName(`node-${i}`)));
    assert.ok(results.every((r) => r.kind === "found"));
    assert.deepEqual(compute.calls.sort(), ["aggregatedList", "region"]);
  });

  it("ignores instances outside the region's zones", async () => {
    compute.add("p", "europe-west1-b", "n1");
    const r = await locator.byName("n1");
    assert.equal(r.kind, "notFound");
    assert.ok(r.kind === "notFound" && r.scope === "region");
  });

  it("a name missing from a cached list triggers one fresh list before saying notFound", async () => {
    compute.add("p", "us-central1-a", "old");
    assert.equal((await locator.byName("old")).kind, "found");
    compute.add("p", "us-central1-b", "new");
    const r = await locator.byName("new");
    assert.equal(r.kind, "found");
    assert.equal(compute.count("aggregatedList"), 2);
    // Truly absent: one more list (taken after the ask), then notFound.
    const miss = await locator.byName("nope");
    assert.deepEqual(miss, {
      kind: "notFound",
      scope: "region",
      name: "nope",
      zones: ["us-central1-a", "us-central1-b", "us-central1-c"],
    });
    assert.equal(compute.count("aggregatedList"), 3);
  });

  it("serves hits from cache within the TTL and refetches after", async () => {
    compute.add("p", "us-central1-a", "n1");
    await locator.byName("n1");
    clock += 5_000;
    await locator.byName("n1");
    assert.equal(compute.count("aggregatedList"), 1);
    clock += 6_000;
    await locator.byName("n1");
    assert.equal(compute.count("aggregatedList"), 2);
    assert.equal(compute.count("region"), 1, "zones are fetched once");
  });

  it("same name in two zones is ambiguous", async () => {
    compute.add("p", "us-central1-a", "twin");
    compute.add("p", "us-central1-c", "twin");
    assert.deepEqual(await locator.byName("twin"), {
      kind: "ambiguous",
      name: "twin",
      zones: ["us-central1-a", "us-central1-c"],
    });
  });

  it("a failing list is reported as error, and the next lookup tries again", async () => {
    compute.failures.set("aggregatedList", [new Error("503 from compute")]);
    const r = await locator.byName("n1");
    assert.equal(r.kind, "error");
    compute.add("p", "us-central1-a", "n1");
    assert.equal((await locator.byName("n1")).kind, "found");
  });

  it("byProviderID uses the shared list when it has the instance, else one get", async () => {
    compute.add("p", "us-central1-a", "n1");
    compute.add("p", "us-central1-a", "n2");
    await Promise.all([
      locator.byProviderID({ project: "p", zone: "us-central1-a", name: "n1" }),
      locator.byProviderID({ project: "p", zone: "us-central1-a", name: "n2" }),
    ]);
    assert.equal(compute.count("get"), 0);
    assert.equal(compute.count("aggregatedList"), 1);
    // Another project: never in our list, straight to get.
    const r = await locator.byProviderID({ project: "other", zone: "us-central1-a", name: "n1" });
    assert.equal(r.kind, "notFound");
    assert.equal(compute.count("get"), 1);
  });

  it("confirmGone always asks instances.get in the providerID's zone", async () => {
    compute.add("p", "us-central1-a", "n1");
    await locator.byName("n1");
    const r = await locator.confirmGone({ project: "p", zone: "us-central1-b", name: "n1" });
    assert.deepEqual(r, { kind: "notFound", scope: "instance", project: "p", zone: "us-central1-b", name: "n1" });
    assert.equal(compute.count("get"), 1);
    compute.failures.set("get", [new Error("HTTP 403")]);
    assert.equal((await locator.confirmGone({ project: "p", zone: "us-central1-a", name: "n1" })).kind, "error");
  });

  it("uses configured zones without calling regions.get", async () => {
    const l = new InstanceLocator(compute, { project: "p", region: "us-central1", zones: ["us-central1-f"] });
    compute.add("p", "us-central1-f", "n1");
    compute.add("p", "us-central1-a", "n2");
    assert.equal((await l.byName("n1")).kind, "found");
    assert.equal((await l.byName("n2")).kind, "notFound");
    assert.equal(compute.count("region"), 0);
  });
});
