/** The start-up scan for unwanted stacks (controllers/unwanted.ts): the pure plan, then its reads, hold and enqueues. */
import * as assert from "node:assert/strict";
import pino from "pino";
import { serviceStackName } from "../../../model";
import { ControllerMetrics } from "../../../controllers/metrics";
import type { EventTarget, EventType } from "../../../runtime/events";
import { ServiceStackKeys, type ServiceRef } from "../../../stacks/stackKeys";
import type { ServiceMeta } from "../../../watcher/informers";
import { enqueueUnwanted, planUnwanted, type UnwantedInput } from "../../../controllers/unwanted";
import { LB_FINALIZER } from "../../../model";

const base: UnwantedInput = {
  knownStacks: [],
  wanted: new Set(),
  present: new Set(),
  identified: new Set(),
  finalized: [],
  maxOrphanDestroys: 5,
  confirmOrphanDestroys: 0,
};

describe("controllers: planUnwanted", () => {
  it("nothing beyond the desired state when the backend holds only wanted stacks", () => {
    const plan = planUnwanted({
      ...base,
      knownStacks: ["cluster", "service.default.web"],
      wanted: new Set(["cluster", "service.default.web"]),
      present: new Set(["service.default.web"]),
    });
    assert.deepEqual(plan, { enqueue: [], held: [], serviceStacks: 1 });
  });

  it("enqueues an unwanted stack whose Service is present or identified, in the backend's order; an unidentified one is left", () => {
    const plan = planUnwanted({
      ...base,
      knownStacks: ["cluster", "service.a.one", "service.a.two", "service.a.three", "service.a.four", "service.a.five"],
      wanted: new Set(["cluster", "service.a.four", "service.a.five"]),
      present: new Set(["service.a.three", "service.a.four", "service.a.five"]),
      identified: new Set(["service.a.one"]),
    });
    assert.deepEqual(plan, { enqueue: ["service.a.one", "service.a.three"], held: [], serviceStacks: 5 });
  });

  it("holds the destroys of absent Services when more than half of the Service stacks at once, until confirmed", () => {
    const input: UnwantedInput = {
      ...base,
      knownStacks: ["cluster", "service.a.one", "service.a.two", "service.a.three"],
      wanted: new Set(["cluster", "service.a.three"]),
      present: new Set(["service.a.three"]),
      identified: new Set(["service.a.one", "service.a.two"]),
    };
    assert.deepEqual(planUnwanted(input), { enqueue: [], held: ["service.a.one", "service.a.two"], serviceStacks: 3 });
    assert.deepEqual(planUnwanted({ ...input, confirmOrphanDestroys: 2 }), {
      enqueue: ["service.a.one", "service.a.two"],
      held: [],
      serviceStacks: 3,
    });
  });

  it("holds only the absent ones: a present Service's unwanted stack is still enqueued", () => {
    const plan = planUnwanted({
      ...base,
      knownStacks: ["service.a.one", "service.a.two", "service.a.three"],
      present: new Set(["service.a.three"]),
      identified: new Set(["service.a.one", "service.a.two"]),
      maxOrphanDestroys: 1,
    });
    assert.deepEqual(plan, {
      enqueue: ["service.a.three"],
      held: ["service.a.one", "service.a.two"],
      serviceStacks: 3,
    });
  });

  it("enqueues a finalized Service with neither stack nor desired state, after the unwanted stacks", () => {
    const plan = planUnwanted({
      ...base,
      knownStacks: ["service.a.one", "service.a.two"],
      wanted: new Set(["service.a.wanted"]),
      present: new Set(["service.a.one", "service.a.two", "service.a.gone", "service.a.wanted"]),
      finalized: ["service.a.gone", "service.a.wanted", "service.a.two"],
    });
    assert.deepEqual(plan, {
      enqueue: ["service.a.one", "service.a.two", "service.a.gone"],
      held: [],
      serviceStacks: 2,
    });
  });
});

function meta(namespace: string, name: string, finalizers: string[] = []): ServiceMeta {
  return { namespace, name, uid: `uid-${name}`, type: "LoadBalancer", finalizers, ingress: [], deleting: false };
}

describe("controllers: enqueueUnwanted", () => {
  const longNamespace = "team-" + "a".repeat(50);
  const shortened = (name: string): string => serviceStackName(longNamespace, name + "-" + "b".repeat(60));

  async function run(
    knownStacks: string[],
    metas: ServiceMeta[],
    recorded: (stack: string) => Promise<ServiceRef | undefined>,
    confirm = 0,
  ) {
    const enqueued: string[] = [];
    const events: [EventTarget, EventType, string, string][] = [];
    const metrics = new ControllerMetrics();
    const stackKeys = new ServiceStackKeys();
    await enqueueUnwanted({
      knownStacks,
      wanted: ["cluster"],
      serviceMetas: metas,
      stackKeys,
      recordedService: recorded,
      events: { record: async (...args) => void events.push(args) },
      clusterUid: "uid-kube-system",
      logger: pino({ level: "silent" }),
      metrics,
      maxOrphanDestroys: 5,
      confirmOrphanDestroys: confirm,
      enqueue: (stack) => enqueued.push(stack),
    });
    return { enqueued, events, held: (await metrics.destroysHeld.get()).values[0]?.value, stackKeys };
  }

  it("a shortened name whose Service is gone is destroyed as the Service its stack records; a failed read or no record leaves it", async () => {
    const [gone, failed, unrecorded] = [shortened("gone"), shortened("failed"), shortened("unrecorded")];
    const known = [
      "cluster",
      gone,
      failed,
      unrecorded,
      "service.a.one",
      "service.a.two",
      "service.a.three",
      "service.a.four",
    ];
    const metas = ["one", "two", "three", "four"].map((name) => meta("a", name));
    const result = await run(known, metas, async (stack) => {
      if (stack === failed) throw new Error("checkpoint unreadable");
      return stack === gone ? { namespace: longNamespace, name: "gone-" + "b".repeat(60) } : undefined;
    });
    assert.deepEqual(result.enqueued, [gone, "service.a.one", "service.a.two", "service.a.three", "service.a.four"]);
    assert.deepEqual(result.stackKeys.serviceOf(gone), { namespace: longNamespace, name: "gone-" + "b".repeat(60) });
    assert.equal(result.held, 0);
    assert.deepEqual(result.events, []);
  });

  it("a hold sets dccm_destroys_held, tells it on kube-system, and enqueues the finalized Services without stack", async () => {
    const result = await run(
      ["cluster", "service.a.one", "service.a.two"],
      [meta("b", "new", [LB_FINALIZER])],
      async () => undefined,
    );
    assert.deepEqual(result.enqueued, ["service.b.new"]);
    assert.equal(result.held, 2);
    assert.deepEqual(result.events, [
      [
        { kind: "Namespace", namespace: "kube-system", name: "kube-system", uid: "uid-kube-system" },
        "Warning",
        "OrphanDestroysHeld",
        "2 of 2 Service stacks have no Service in this cluster; destroying none of them until an operator confirms with --confirm-orphan-destroys 2 (an empty or wrong cluster looks the same as every Service deleted)",
      ],
    ]);
  });
});
