// The incremental DesiredCache against the reference (model/desired.ts desiredState recomputed from
// scratch, every stack hashed): equal state, hashes, StackChange lists and rejections after every
// event of random sequences; and what each kind of event recomputes.
import * as assert from "node:assert/strict";

import * as fc from "fast-check";

import { desiredState } from "../../../model/desired";
import { instanceGroupName } from "../../../model/names";
import {
  NOTHING_OBSERVED,
  type ClusterSnapshot,
  type Config,
  type NodeInfo,
  type ObservedCloud,
  type ServiceInfo,
} from "../../../model/types";
import { DesiredCache, rejectionStack, stackHashes, type StackChange } from "../../../model/desiredCache";
import { CONFIG, gceNode, lbService } from "../../support/builders";
import { nodeArb, serviceArb } from "../../support/modelArbitraries";

const ZONES = ["us-central1-a", "us-central1-b", "us-central1-c"];
const NODE_NAMES = ["n1", "n2", "n3", "n4", "n5", "n6"];
const SERVICE_KEYS = ["default/web", "default/api", "db/pg", "kube-system/dns", "db/cache"];
// UIDs that agree in their first 31 hex digits give one load balancer name (model/names.ts loadBalancerName).
const SHARED_UIDS = [
  "5ec00001-7a1b-4c2d-8e3f-a0b1c2d3e4f1",
  "5ec00001-7a1b-4c2d-8e3f-a0b1c2d3e4f2",
  "5ec00002-7a1b-4c2d-8e3f-a0b1c2d3e4f5",
];

type Event =
  | { kind: "putNode"; node: NodeInfo }
  | { kind: "deleteNode"; name: string }
  | { kind: "putService"; service: ServiceInfo }
  | { kind: "deleteService"; key: string }
  | { kind: "observe"; observed: ObservedCloud }
  | { kind: "resend"; reverse: boolean }
  /** The NEG controller's tell: the last observation with one NEG's members over it, every other field the same object. */
  | { kind: "negMembers"; key: string; members: string[] };

/** A valid Service of each kind (backend service, target pool, internal, ETP=Local), or anything serviceArb makes. */
const serviceOf = (key: string): fc.Arbitrary<ServiceInfo> => {
  const [namespace, name] = key.split("/");
  const valid = fc
    .record({
      uid: fc.constantFrom(
        ...SHARED_UIDS,
        "5ec00003-7a1b-4c2d-8e3f-a0b1c2d3e4f5",
        "5ec00004-7a1b-4c2d-8e3f-a0b1c2d3e4f5",
      ),
      annotations: fc.constantFrom<Record<string, string>>(
        {},
        { "dccm.io/backend": "target-pool" },
        { "networking.gke.io/load-balancer-type": "Internal" },
        { "dccm.io/backend": "neg" },
        { "dccm.io/backend": "neg", "dccm.io/node-selector": "pool in (edge),!gpu" },
        { "dccm.io/backend": "neg", "networking.gke.io/load-balancer-type": "Internal" },
        { "dccm.io/backend": "neg", "dccm.io/node-selector": "pool=core" },
        { "dccm.io/node-selector": "pool" },
      ),
      local: fc.boolean(),
      port: fc.constantFrom(80, 443),
    })
    .map(({ uid, annotations, local, port }) =>
      lbService(namespace, name, uid, {
        annotations,
        ports: [{ protocol: "TCP", port }],
        ...(local ? { externalTrafficPolicy: "Local", healthCheckNodePort: 31000 } : {}),
      }),
    );
  const any = fc
    .tuple(serviceArb({ namespace, name }), fc.option(fc.constantFrom(...SHARED_UIDS), { freq: 2, nil: undefined }))
    .map(([service, uid]) => (uid === undefined ? service : { ...service, uid }));
  return fc.oneof(valid, any);
};

/** Nodes as nodeArb makes them, some with an internal IP and a `pool` label (NEG endpoints, node selectors). */
const negNodeArb = (name: string): fc.Arbitrary<NodeInfo> =>
  fc
    .tuple(
      nodeArb(name),
      fc.option(fc.constantFrom("10.0.0.1", "10.0.0.2", "10.0.0.3"), { nil: undefined, freq: 4 }),
      fc.option(fc.constantFrom("edge", "core"), { nil: undefined }),
    )
    .map(([node, ip, pool]) => ({
      ...node,
      labels: pool === undefined ? node.labels : { ...node.labels, pool },
      ...(ip !== undefined ? { internalIP: ip } : {}),
    }));

const NEG_UIDS = [...SHARED_UIDS, "5ec00003-7a1b-4c2d-8e3f-a0b1c2d3e4f5"];
const NEG_NAMES = NEG_UIDS.flatMap((uid) => {
  const lb = ("a" + uid.replace(/-/g, "")).slice(0, 32);
  return [lb, `${lb}-eb0aa583`];
});

const observedArb: fc.Arbitrary<ObservedCloud> = fc
  .record({
    gone: fc.subarray(NODE_NAMES.map((name, i) => ({ zone: ZONES[i % ZONES.length], name }))),
    referencedZones: fc.subarray(ZONES),
    legacyHealthCheckReferenced: fc.boolean(),
    referencedGroups: fc.subarray(ZONES.map((zone) => `${zone}/${instanceGroupName(CONFIG.clusterId, 2)}`)),
    members: fc.option(fc.subarray(NODE_NAMES), { nil: undefined }),
    denyRulesHeld: fc.option(fc.subarray(SERVICE_KEYS), { nil: undefined }),
    denyRulesUnread: fc.boolean(),
    instanceSubnets: fc.option(
      fc
        .subarray(NODE_NAMES.flatMap((name) => ZONES.map((zone) => `${zone}/${name}`)))
        .chain((keys) =>
          fc
            .tuple(...keys.map(() => fc.constantFrom("other-subnet", "k8s-subnet")))
            .map((subnets) => Object.fromEntries(keys.map((key, i) => [key, subnets[i]]))),
        ),
      { nil: undefined },
    ),
    negMembers: fc.option(fc.tuple(fc.constantFrom(...ZONES), fc.constantFrom(...NEG_NAMES), fc.subarray(NODE_NAMES)), {
      nil: undefined,
    }),
  })
  .map((o): ObservedCloud => ({
    ...(o.instanceSubnets !== undefined ? { instanceSubnets: o.instanceSubnets } : {}),
    ...(o.negMembers !== undefined
      ? { negMembers: { [`${o.negMembers[0]}/${o.negMembers[1]}`]: o.negMembers[2] } }
      : {}),
    goneInstances: o.gone,
    referencedZones: o.referencedZones,
    legacyHealthCheckReferenced: o.legacyHealthCheckReferenced,
    referencedGroups: o.referencedGroups,
    ...(o.members !== undefined
      ? { groupMembers: { [`${ZONES[0]}/${instanceGroupName(CONFIG.clusterId, 2)}`]: o.members } }
      : {}),
    ...(o.denyRulesHeld !== undefined ? { denyRulesHeld: o.denyRulesHeld } : {}),
    ...(o.denyRulesUnread ? { denyRulesUnread: true as const } : {}),
  }));

const eventArb: fc.Arbitrary<Event> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .constantFrom(...NODE_NAMES)
      .chain((name) => negNodeArb(name).map((node): Event => ({ kind: "putNode", node }))),
  },
  { weight: 1, arbitrary: fc.constantFrom(...NODE_NAMES).map((name): Event => ({ kind: "deleteNode", name })) },
  {
    weight: 6,
    arbitrary: fc
      .constantFrom(...SERVICE_KEYS)
      .chain((key) => serviceOf(key).map((service): Event => ({ kind: "putService", service }))),
  },
  { weight: 2, arbitrary: fc.constantFrom(...SERVICE_KEYS).map((key): Event => ({ kind: "deleteService", key })) },
  { weight: 2, arbitrary: observedArb.map((observed): Event => ({ kind: "observe", observed })) },
  { weight: 1, arbitrary: fc.boolean().map((reverse): Event => ({ kind: "resend", reverse })) },
  {
    weight: 3,
    arbitrary: fc
      .tuple(fc.constantFrom(...ZONES), fc.constantFrom(...NEG_NAMES), fc.subarray(NODE_NAMES))
      .map(([zone, name, members]): Event => ({ kind: "negMembers", key: `${zone}/${name}`, members })),
  },
);

const { clusterCIDR: _dropped, ...noCidr } = CONFIG;
const CONFIGS: Config[] = [
  CONFIG,
  { ...CONFIG, backendMode: "target-pool", enableL4DenyFirewall: true },
  { ...CONFIG, instanceGroupLimit: 1, instanceGroupZones: ["us-central1-a", "us-central1-f"] },
  { ...noCidr, configureRoutes: false, loadBalancerClasses: ["example.com/other"], instanceGroupLimit: 2 },
  { ...CONFIG, backendMode: "neg" },
  { ...noCidr, backendMode: "neg", instanceGroupLimit: 1 },
];

function changesBetween(before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): StackChange[] {
  const changes: StackChange[] = [];
  for (const [stack, hash] of after) if (before.get(stack) !== hash) changes.push({ stack, hash });
  for (const stack of before.keys()) if (!after.has(stack)) changes.push({ stack, hash: undefined });
  return changes.sort((a, b) => (a.stack < b.stack ? -1 : a.stack > b.stack ? 1 : 0));
}

/** The cluster as a watcher keeps it: the same object for what did not change. */
class World {
  readonly nodes = new Map<string, NodeInfo>();
  readonly services = new Map<string, ServiceInfo>();
  observed: ObservedCloud = NOTHING_OBSERVED;
  reverse = false;

  snapshot(): ClusterSnapshot {
    const nodes = [...this.nodes.values()];
    const services = [...this.services.values()];
    return this.reverse ? { nodes: nodes.reverse(), services: services.reverse() } : { nodes, services };
  }
}

describe("model/desiredCache DesiredCache: incremental, equal to the full recompute", () => {
  it("after every event of a random sequence (Nodes and Services added, changed, deleted, neg Services with node selectors; observations with subnetworks and NEG members; the NEG controller's tells of one NEG's members; the same snapshot again): the same state, hashes, changes and rejections as desiredState from scratch", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...CONFIGS),
        fc.boolean(),
        fc.array(eventArb, { minLength: 1, maxLength: 30 }),
        (config, observeFirst, events) => {
          const world = new World();
          const cache = new DesiredCache(config);
          let reference = new Map<string, string>();
          const step = (changes: StackChange[]): void => {
            const full = desiredState(world.snapshot(), config, world.observed);
            const hashes = stackHashes(full);
            assert.deepStrictEqual(changes, changesBetween(reference, hashes));
            reference = hashes;
            assert.deepStrictEqual(cache.desired(), full);
            assert.deepStrictEqual(cache.stacks(), [...hashes.keys()].sort());
            for (const stack of cache.stacks()) {
              const view = cache.view(stack);
              assert.equal(view.hash, hashes.get(stack));
              assert.deepStrictEqual(
                view.service,
                full.services.find((service) => service.stack === stack),
              );
              assert.deepStrictEqual(
                view.rejections,
                full.rejected.filter((rejection) => rejectionStack(rejection) === stack),
              );
            }
          };
          if (observeFirst) {
            world.observed = {
              ...NOTHING_OBSERVED,
              denyRulesHeld: ["default/web"],
              referencedZones: ["us-central1-b"],
            };
            assert.deepStrictEqual(cache.observe(world.observed), []);
          }
          step(cache.update(world.snapshot()));
          for (const event of events) {
            if (event.kind === "putNode") world.nodes.set(event.node.name, event.node);
            else if (event.kind === "deleteNode") world.nodes.delete(event.name);
            else if (event.kind === "putService")
              world.services.set(`${event.service.namespace}/${event.service.name}`, event.service);
            else if (event.kind === "deleteService") world.services.delete(event.key);
            else if (event.kind === "resend") world.reverse = event.reverse;
            if (event.kind === "observe") {
              world.observed = event.observed;
              step(cache.observe(event.observed));
            } else if (event.kind === "negMembers") {
              world.observed = {
                ...world.observed,
                negMembers: { ...world.observed.negMembers, [event.key]: event.members },
              };
              step(cache.tellNegMembers({ [event.key]: event.members }));
            } else step(cache.update(world.snapshot()));
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("model/desiredCache DesiredCache: what each change recomputes", () => {
  const A = "us-central1-a";
  const nodes = [
    gceNode("n1", "11111111-1111-4111-8111-111111111111", A, []),
    gceNode("n2", "22222222-2222-4222-8222-222222222222", A, []),
  ];
  const web = lbService("default", "web", "5ec00001-7a1b-4c2d-8e3f-a0b1c2d3e4f5");
  const api = lbService("default", "api", "5ec00002-7a1b-4c2d-8e3f-a0b1c2d3e4f5");
  const pool = lbService("default", "pool", "5ec00003-7a1b-4c2d-8e3f-a0b1c2d3e4f5", {
    annotations: { "dccm.io/backend": "target-pool" },
  });

  function filled(): DesiredCache {
    const cache = new DesiredCache(CONFIG);
    cache.update({ nodes, services: [web, api, pool] });
    return cache;
  }

  it("the NEG controller tells a NEG listed empty (never listed before): that Service alone is placed again, on the groups until it is filled, as from scratch", () => {
    const negNodes = [
      gceNode("n1", "11111111-1111-4111-8111-111111111111", A, [], { internalIP: "10.0.0.1" }),
      gceNode("n2", "22222222-2222-4222-8222-222222222222", A, [], { internalIP: "10.0.0.2" }),
    ];
    const negWeb = { ...web, annotations: { "dccm.io/backend": "neg" } };
    const cache = new DesiredCache(CONFIG);
    cache.update({ nodes: negNodes, services: [negWeb, api] });
    const api0 = cache.view("service.default.api").service;
    const neg = `${A}/${cache.negsOf("default/web")[0]?.name ?? ""}`;
    const observed = { ...cache.lastObserved(), negMembers: { [neg]: [] } };
    assert.deepStrictEqual(
      cache.observe(observed).map((change) => change.stack),
      ["service.default.web"],
    );
    assert.equal(cache.view("service.default.web").service?.negsPending, true);
    assert.equal(cache.view("service.default.api").service, api0);
    assert.deepStrictEqual(
      cache.desired(),
      desiredState({ nodes: negNodes, services: [negWeb, api] }, CONFIG, observed),
    );
    const full = { ...observed, negMembers: { [neg]: ["n1", "n2"] } };
    assert.deepStrictEqual(
      cache.observe(full).map((change) => change.stack),
      ["service.default.web"],
    );
    assert.equal(cache.view("service.default.web").service?.negsPending, undefined);
  });

  it("tellNegMembers: a NEG listed empty places its Service again; the same list again, or forgetting a NEG never told, places nothing; forgetting it places it again", () => {
    const negNodes = [
      gceNode("n1", "11111111-1111-4111-8111-111111111111", A, [], { internalIP: "10.0.0.1" }),
      gceNode("n2", "22222222-2222-4222-8222-222222222222", A, [], { internalIP: "10.0.0.2" }),
    ];
    const negWeb = { ...web, annotations: { "dccm.io/backend": "neg" } };
    const cache = new DesiredCache(CONFIG);
    cache.update({ nodes: negNodes, services: [negWeb, api] });
    const neg = `${A}/${cache.negsOf("default/web")[0]?.name ?? ""}`;
    const stacks = (changes: { stack: string }[]): string[] => changes.map((change) => change.stack);
    assert.deepStrictEqual(stacks(cache.tellNegMembers({ [neg]: [] })), ["service.default.web"]);
    assert.equal(cache.view("service.default.web").service?.negsPending, true);
    assert.deepStrictEqual(stacks(cache.tellNegMembers({ [neg]: [] })), []);
    assert.deepStrictEqual(stacks(cache.tellNegMembers({ [`${A}/k8s-unknown`]: undefined })), []);
    assert.deepStrictEqual(stacks(cache.tellNegMembers({ [neg]: ["n1", "n2"] })), ["service.default.web"]);
    assert.deepStrictEqual(cache.lastObserved().negMembers, { [neg]: ["n1", "n2"] });
    assert.equal(cache.view("service.default.web").service?.negsPending, undefined);
    assert.deepStrictEqual(
      cache.desired(),
      desiredState({ nodes: negNodes, services: [negWeb, api] }, CONFIG, cache.lastObserved()),
    );
    // An observation from elsewhere brings its own record: the cache copies it before a tell changes it.
    const theirs = { [neg]: ["n1"] };
    cache.observe({ ...cache.lastObserved(), negMembers: theirs });
    cache.tellNegMembers({ [neg]: undefined });
    assert.deepStrictEqual(theirs, { [neg]: ["n1"] });
    assert.deepStrictEqual(cache.lastObserved().negMembers, {});
  });

  it("a Service changed: only its stack changes, and every other Service's desired state is the object it was (not computed again)", () => {
    const cache = filled();
    const before = cache.desired();
    const changedWeb = { ...web, loadBalancerSourceRanges: ["10.0.0.0/8"] };
    const changes = cache.update({ nodes, services: [changedWeb, api, pool] });
    assert.deepStrictEqual(
      changes.map((change) => change.stack),
      ["service.default.web"],
    );
    assert.equal(
      cache.view("service.default.api").service,
      before.services.find((service) => service.key === "default/api"),
    );
    assert.equal(
      cache.view("service.default.pool").service,
      before.services.find((service) => service.key === "default/pool"),
    );
    assert.deepStrictEqual(cache.view("service.default.web").service?.firewall.sourceRanges, ["10.0.0.0/8"]);
  });

  it("a Node joins a zone that has one: the cluster stack and the target pool's change; the backend services are the objects they were", () => {
    const cache = filled();
    const before = cache.desired();
    const changes = cache.update({
      nodes: [...nodes, gceNode("n3", "33333333-3333-4333-8333-333333333333", A, [])],
      services: [web, api, pool],
    });
    assert.deepStrictEqual(
      changes.map((change) => change.stack),
      ["cluster", "service.default.pool"],
    );
    assert.equal(
      cache.view("service.default.web").service,
      before.services.find((service) => service.key === "default/web"),
    );
    assert.equal(
      cache.view("service.default.api").service,
      before.services.find((service) => service.key === "default/api"),
    );
  });

  it("the same snapshot again: nothing changes and nothing is computed again", () => {
    const cache = filled();
    const before = cache.desired();
    assert.deepStrictEqual(cache.update({ nodes: [...nodes], services: [pool, api, web] }), []);
    assert.equal(cache.desired(), before);
  });

  it("an observation that holds one Service's deny rule: that Service's stack only (and the cluster's firewall above the deny rules)", () => {
    const cache = filled();
    const before = cache.desired();
    const changes = cache.observe({ ...NOTHING_OBSERVED, denyRulesHeld: ["default/api"] });
    assert.deepStrictEqual(
      changes.map((change) => change.stack),
      ["cluster", "service.default.api"],
    );
    assert.equal(
      cache.view("service.default.web").service,
      before.services.find((service) => service.key === "default/web"),
    );
    assert.equal(cache.view("service.default.api").service?.firewall.priority, 999);
  });
});
