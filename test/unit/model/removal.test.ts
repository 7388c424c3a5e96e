/** model/removal: whose Service a stack is, and what removing it writes — pure tables. */
import * as assert from "node:assert/strict";
import { LB_FINALIZER } from "../../../model";
import { classOwnership, holdOrphanDestroys, planRemoval, type ObservedService } from "../../../model/removal";

const CLASSES = ["dccm.io/gce"];

function observed(over: Partial<ObservedService> = {}): ObservedService {
  return { type: "LoadBalancer", finalizers: [LB_FINALIZER], ingress: ["34.1.2.3"], deleting: false, ...over };
}

describe("model/removal: classOwnership", () => {
  const table: [string, Pick<ObservedService, "type" | "loadBalancerClass">, ReturnType<typeof classOwnership>][] = [
    ["no class, LoadBalancer", { type: "LoadBalancer" }, "ours"],
    ["our class", { type: "LoadBalancer", loadBalancerClass: "dccm.io/gce" }, "ours"],
    ["another class", { type: "LoadBalancer", loadBalancerClass: "metallb.io/metallb" }, "foreign"],
    ["no class, ClusterIP (type changed)", { type: "ClusterIP" }, "unknown"],
  ];
  for (const [title, service, expected] of table)
    it(title, () => assert.equal(classOwnership(service, CLASSES), expected));
});

describe("model/removal: planRemoval", () => {
  const nothing = { destroy: false, clearIngress: false, removeFinalizer: false, announce: false };
  const table: [string, ObservedService | undefined, boolean, ReturnType<typeof planRemoval>][] = [
    ["Service absent, our stack: destroy only", undefined, true, { ...nothing, destroy: true }],
    ["Service absent, no stack: nothing", undefined, false, nothing],
    [
      "another class with the standard finalizer, no stack: never touched",
      observed({ loadBalancerClass: "other.io/lb", deleting: true }),
      false,
      nothing,
    ],
    [
      "another class, our stale stack under the name: the stack goes, the Service is not touched",
      observed({ loadBalancerClass: "other.io/lb" }),
      true,
      { ...nothing, destroy: true },
    ],
    [
      "ours, deleting, stack: destroy, announce, remove finalizer",
      observed({ deleting: true }),
      true,
      { destroy: true, clearIngress: false, removeFinalizer: true, announce: true },
    ],
    [
      "ours, deleting, no stack (deleted before its first up): finalizer removed",
      observed({ deleting: true }),
      false,
      { destroy: false, clearIngress: false, removeFinalizer: true, announce: true },
    ],
    ["ours, deleting, no finalizer, no stack: nothing", observed({ deleting: true, finalizers: [] }), false, nothing],
    ["ours by class and not deleting (the model wants it): nothing here", observed(), true, nothing],
    [
      "type changed, our stack: destroy, clear ingress, remove finalizer",
      observed({ type: "ClusterIP" }),
      true,
      { destroy: true, clearIngress: true, removeFinalizer: true, announce: true },
    ],
    [
      "type changed, no ingress: nothing to clear",
      observed({ type: "ClusterIP", ingress: [] }),
      true,
      { destroy: true, clearIngress: false, removeFinalizer: true, announce: true },
    ],
    ["type changed, no stack of ours: not provably ours, nothing", observed({ type: "ClusterIP" }), false, nothing],
    [
      "type changed and deleting, stack: no status write",
      observed({ type: "ClusterIP", deleting: true }),
      true,
      { destroy: true, clearIngress: false, removeFinalizer: true, announce: true },
    ],
  ];
  for (const [title, service, stackExists, expected] of table)
    it(title, () => assert.deepEqual(planRemoval(service, stackExists, LB_FINALIZER, CLASSES), expected));
});

describe("model/removal: holdOrphanDestroys", () => {
  const table: [number, number, number, number, boolean][] = [
    // orphans, service stacks, limit, confirmed, held
    [0, 0, 5, 0, false],
    [1, 1, 5, 0, false],
    [1, 10, 5, 0, false],
    [2, 4, 5, 0, false],
    [3, 4, 5, 0, true],
    [2, 2, 5, 0, true],
    [5, 100, 5, 0, false],
    [6, 100, 5, 0, true],
    [16, 16, 5, 0, true],
    [16, 16, 5, 16, false],
    [16, 16, 5, 15, true],
  ];
  for (const [orphans, stacks, limit, confirmed, held] of table) {
    it(`${orphans} of ${stacks} stacks, limit ${limit}, ${confirmed} confirmed → ${held ? "held" : "proceed"}`, () =>
      assert.equal(holdOrphanDestroys(orphans, stacks, limit, confirmed), held));
  }
});
