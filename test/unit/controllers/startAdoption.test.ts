/** `--adopt` at start (controllers/startAdoption.ts): waiting for the watch to show the target-pool pins. */
import * as assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { ANNOTATION_BACKEND, type ClusterSnapshot } from "../../../model";
import { missingPins, watchedPins } from "../../../controllers/startAdoption";
import { lbService } from "../../support/builders";

const PINNED = { [ANNOTATION_BACKEND]: "target-pool" };
const snapshotOf = (pinned: string[]): ClusterSnapshot => ({
  nodes: [],
  services: ["web", "api", "db"].map((name, i) =>
    lbService(
      "default",
      name,
      `${i}0000000-0000-4000-8000-000000000001`,
      pinned.includes(name) ? { annotations: PINNED } : {},
    ),
  ),
});

class FakeWatcher extends EventEmitter {
  current: ClusterSnapshot = snapshotOf([]);
  snapshot(): ClusterSnapshot {
    return this.current;
  }
  meta(): undefined {
    return undefined;
  }
}

describe("controllers: adoption's pins", () => {
  it("missingPins: the pinned Services not shown with dccm.io/backend target-pool, in the order given", () => {
    assert.deepEqual(missingPins(snapshotOf(["api"]), ["default/web", "default/api", "default/db"]), [
      "default/web",
      "default/db",
    ]);
    assert.deepEqual(
      missingPins(
        {
          nodes: [],
          services: [
            lbService("default", "web", "00000000-0000-4000-8000-000000000001", {
              annotations: { [ANNOTATION_BACKEND]: "backend-service" },
            }),
          ],
        },
        ["default/web"],
      ),
      ["default/web"],
    );
    assert.deepEqual(missingPins(snapshotOf(["web"]), ["default/web"]), []);
  });

  it("watchedPins resolves once a change shows every pin, and stops listening", async () => {
    const watcher = new FakeWatcher();
    const waiting = watchedPins(watcher, ["default/web", "default/api"], 5_000);
    watcher.current = snapshotOf(["web"]);
    watcher.emit("change");
    assert.equal(watcher.listenerCount("change"), 1);
    watcher.current = snapshotOf(["web", "api"]);
    watcher.emit("change");
    await waiting;
    assert.equal(watcher.listenerCount("change"), 0);
  });

  it("watchedPins fails the start when the pins do not show within the time, naming the missing ones", async () => {
    const watcher = new FakeWatcher();
    watcher.current = snapshotOf(["web"]);
    await assert.rejects(watchedPins(watcher, ["default/web", "default/api", "default/db"], 20), {
      message: "the watch did not show the target-pool pins of default/api, default/db within 0.02 s",
    });
    assert.equal(watcher.listenerCount("change"), 0);
  });

  it("watchedPins returns at once when nothing is missing, without listening", async () => {
    const watcher = new FakeWatcher();
    await watchedPins(watcher, [], 20);
    assert.equal(watcher.listenerCount("change"), 0);
  });
});
