/**
 * `dccm preview`'s pure part (preview/plan.ts): the daemon's hashes, which stacks would change,
 * a resource change from an engine event, the plan as text and JSON, and the exit code.
 */
import * as assert from "node:assert/strict";
import type { StepEventMetadata } from "@pulumi/pulumi/automation";
import {
  changesByStack,
  decideStacks,
  desiredStacks,
  previewQuotas,
  quotaLines,
  engineRuns,
  exitCode,
  formatPlan,
  formatValue,
  inStack,
  mapLimit,
  observedAfterApply,
  parsePropertyPath,
  planDocument,
  previewParallelism,
  defaultPreviewParallelism,
  resourceChange,
  stackPlan,
  summarize,
  type RecordedStack,
  type RejectedService,
  type ResourceChange,
  type StackDecision,
  type StackPlan,
} from "../../../preview/plan";
import type { ClusterSnapshot, ServiceInfo } from "../../../model/types";
import { stackOfResource } from "../../../model/stacks";
import { DesiredCache, hashOf } from "../../../model/desiredCache";
import { CONFIG, gceNode, lbService } from "../../support/builders";

const CLASSES = ["dccm.io/gce"];

const SNAPSHOT: ClusterSnapshot = {
  nodes: [
    gceNode("node-a1", "0a0a0a0a-0000-4000-8000-000000000001", "us-central1-a", ["10.64.1.0/24"]),
    gceNode("node-b1", "0b0b0b0b-0000-4000-8000-000000000001", "us-central1-b", ["10.64.2.0/24"]),
  ],
  services: [
    lbService("default", "web", "5e1f0000-0000-4000-8000-000000000001"),
    lbService("default", "bad", "5e1f0000-0000-4000-8000-000000000002", { ports: [{ protocol: "SCTP", port: 80 }] }),
    lbService("default", "plain", "5e1f0000-0000-4000-8000-000000000003", { type: "ClusterIP" }),
  ],
};

describe("preview/plan: desiredStacks", () => {
  it("hashes every stack as the daemon's cache does, and lists the rejected Services with their messages", () => {
    const cache = new DesiredCache(CONFIG);
    cache.update(SNAPSHOT);
    const { desired, hashes, rejected } = desiredStacks(SNAPSHOT, CONFIG);
    const web = desired.services.find((service) => service.key === "default/web");
    assert.ok(web !== undefined);
    assert.deepEqual(
      [...hashes],
      [
        ["cluster", hashOf(desired.cluster)],
        ["service.default.web", hashOf(web)],
      ],
    );
    // What the Service stacks point at is kept by the cluster stack anyway: the same hash as the cache's before they ran.
    assert.equal(hashes.get("cluster"), cache.view("cluster").hash);
    assert.equal(hashes.get("service.default.web"), cache.view("service.default.web").hash);
    assert.deepEqual(
      [...rejected],
      [
        [
          "service.default.bad",
          ["Service default/bad: spec.ports[0].protocol: SCTP is not supported by GCE load balancers (TCP or UDP)"],
        ],
      ],
    );
  });

  it("observes what the applied Service stacks point at: their zones, and the legacy health check of shared target pools", () => {
    const { desired } = desiredStacks(SNAPSHOT, CONFIG);
    assert.deepEqual(observedAfterApply(desired.services), {
      goneInstances: [],
      referencedZones: ["us-central1-a", "us-central1-b"],
      legacyHealthCheckReferenced: false,
    });
    // Target pools name instances, not instance groups.
    const pools = desiredStacks(SNAPSHOT, { ...CONFIG, backendMode: "target-pool" });
    assert.deepEqual(observedAfterApply(pools.desired.services), {
      goneInstances: [],
      referencedZones: [],
      legacyHealthCheckReferenced: true,
    });
    assert.deepEqual(observedAfterApply([]), {
      goneInstances: [],
      referencedZones: [],
      legacyHealthCheckReferenced: false,
    });
  });
});

describe("preview/plan: decideStacks", () => {
  const wanted = {
    hashes: new Map([
      ["cluster", "h-cluster"],
      ["service.default.same", "h-same"],
      ["service.default.changed", "h-new"],
      ["service.default.new", "h-created"],
      ["service.default.pending", "h-pending"],
    ]),
    rejected: new Map([
      [
        "service.default.bad",
        ["Service default/bad: spec.ports[0].protocol: SCTP is not supported by GCE load balancers (TCP or UDP)"],
      ],
      ["service.default.badnew", ["Service default/badnew: spec.ports: at least one port is required"]],
    ]),
    services: new Map<string, string>(),
  };
  const service = (name: string, over: Partial<ServiceInfo> = {}): ServiceInfo =>
    lbService("default", name, `uid-${name}`, over);
  const services = [
    service("same"),
    service("changed"),
    service("new"),
    service("pending"),
    service("bad"),
    service("badnew"),
    service("retyped", { type: "ClusterIP" }),
    service("foreign", { loadBalancerClass: "metallb.io/metallb" }),
    service("deleting", { deleting: true }),
  ];
  const recorded = new Map<string, RecordedStack>([
    ["service.default.same", { hash: "h-same" }],
    ["service.default.changed", { hash: "h-old" }],
    ["service.default.pending", { hash: undefined }],
    ["service.default.bad", { hash: "h-bad-before" }],
    ["service.default.gone", { hash: "h-gone" }],
    ["service.default.retyped", { hash: "h-retyped" }],
    ["service.default.foreign", { hash: "h-foreign" }],
    ["service.default.deleting", { hash: "h-deleting" }],
    ["cluster", { hash: "h-cluster" }],
  ]);
  const expected: StackDecision[] = [
    { stack: "cluster", kind: "unchanged" },
    {
      stack: "service.default.bad",
      service: "default/bad",
      kind: "rejected",
      messages: [
        "Service default/bad: spec.ports[0].protocol: SCTP is not supported by GCE load balancers (TCP or UDP)",
      ],
      hasStack: true,
    },
    {
      stack: "service.default.badnew",
      service: "default/badnew",
      kind: "rejected",
      messages: ["Service default/badnew: spec.ports: at least one port is required"],
      hasStack: false,
    },
    { stack: "service.default.changed", service: "default/changed", kind: "preview" },
    { stack: "service.default.deleting", service: "default/deleting", kind: "destroy" },
    { stack: "service.default.foreign", service: "default/foreign", kind: "destroy" },
    { stack: "service.default.gone", service: "default/gone", kind: "destroy" },
    { stack: "service.default.new", service: "default/new", kind: "create" },
    { stack: "service.default.pending", service: "default/pending", kind: "preview" },
    { stack: "service.default.retyped", service: "default/retyped", kind: "destroy" },
    { stack: "service.default.same", service: "default/same", kind: "unchanged" },
  ];
  it("unchanged by hash, preview on another or no hash, create without a stack, destroy by the daemon's removal rules, rejected kept apart; cluster first", () => {
    assert.deepEqual(decideStacks(wanted, recorded, services, CLASSES), expected);
  });

  const single: [string, Map<string, RecordedStack>, StackDecision[]][] = [
    ["a cluster stack the backend lacks is a create", new Map(), [{ stack: "cluster", kind: "create" }]],
    [
      "a cluster stack of another hash is previewed",
      new Map([["cluster", { hash: "h-0" }]]),
      [{ stack: "cluster", kind: "preview" }],
    ],
    [
      "a stack that is neither the cluster's nor a Service's is not dccm's",
      new Map([
        ["cluster", { hash: "h-cluster" }],
        ["ci", { hash: undefined }],
      ]),
      [{ stack: "cluster", kind: "unchanged" }],
    ],
  ];
  for (const [title, backend, decisions] of single) {
    it(title, () =>
      assert.deepEqual(
        decideStacks(
          { hashes: new Map([["cluster", "h-cluster"]]), rejected: new Map(), services: new Map() },
          backend,
          [],
          CLASSES,
        ),
        decisions,
      ),
    );
  }

  it("a Service stack whose LoadBalancer of our class the model does not want and that is not being deleted stays (the daemon removes nothing then)", () => {
    const decisions = decideStacks(
      { hashes: new Map(), rejected: new Map(), services: new Map() },
      new Map([["service.default.kept", { hash: "h" }]]),
      [service("kept")],
      CLASSES,
    );
    assert.deepEqual(decisions, [{ stack: "service.default.kept", service: "default/kept", kind: "unchanged" }]);
  });

  it("shortened stack names: the Service from the desired state, else from what the stack records; a stack recording none is not touched", () => {
    const ns = "n".repeat(63);
    const wantedStack = `service.${ns}.${"w".repeat(3)}_${"1".repeat(24)}`;
    const goneStack = `service.${ns}.${"g".repeat(3)}_${"2".repeat(24)}`;
    const unknownStack = `service.${ns}.${"u".repeat(3)}_${"3".repeat(24)}`;
    const decisions = decideStacks(
      {
        hashes: new Map([[wantedStack, "h-w"]]),
        rejected: new Map(),
        services: new Map([[wantedStack, `${ns}/${"w".repeat(40)}`]]),
      },
      new Map<string, RecordedStack>([
        [wantedStack, { hash: "h-old", service: `${ns}/${"w".repeat(40)}` }],
        [goneStack, { hash: "h-g", service: `${ns}/${"g".repeat(40)}` }],
        [unknownStack, { hash: undefined }],
      ]),
      [lbService(ns, "w".repeat(40), "uid-w")],
      CLASSES,
    );
    assert.deepEqual(decisions, [
      { stack: goneStack, service: `${ns}/${"g".repeat(40)}`, kind: "destroy" },
      { stack: wantedStack, service: `${ns}/${"w".repeat(40)}`, kind: "preview" },
    ]);
  });
});

describe("preview/plan: parsePropertyPath", () => {
  const table: [string, (string | number)[]][] = [
    ["ports", ["ports"]],
    ["allows[0].ports[1]", ["allows", 0, "ports", 1]],
    ['labels["app.kubernetes.io/name"]', ["labels", "app.kubernetes.io/name"]],
    ['a["q\\"uote"].b', ["a", 'q"uote', "b"]],
  ];
  for (const [path, parts] of table) it(path, () => assert.deepEqual(parsePropertyPath(path), parts));
});

const FR = "gcp:compute/forwardingRule:ForwardingRule";
const FW = "gcp:compute/firewall:Firewall";
const URN = (type: string, name: string): string =>
  `urn:pulumi:service.default.web::dccm-e2e::dccm:ServiceLoadBalancer$${type}::${name}`;

function state(
  type: string,
  name: string,
  inputs: Record<string, unknown>,
  over: Partial<NonNullable<StepEventMetadata["old"]>> = {},
): NonNullable<StepEventMetadata["old"]> {
  return {
    type,
    urn: URN(type, name),
    custom: true,
    id: "",
    parent: "",
    inputs,
    outputs: inputs,
    provider: "",
    ...over,
  };
}

describe("preview/plan: resourceChange", () => {
  const fwOld = state(FW, "default/web:firewall", { name: "k8s-fw-a1", allows: [{ protocol: "tcp", ports: ["80"] }] });
  const fwNew = state(FW, "default/web:firewall", {
    name: "k8s-fw-a1",
    allows: [{ protocol: "tcp", ports: ["80", "443"] }],
  });
  const frOld = state(FR, "default/web:forwarding-rule-tcp", { name: "a1", ports: ["80"] });
  const frNew = state(FR, "default/web:forwarding-rule-tcp", { name: "a1", ports: ["443", "80"] });
  const base = (
    op: StepEventMetadata["op"],
    type: string,
    name: string,
    over: Partial<StepEventMetadata> = {},
  ): StepEventMetadata => ({ op, urn: URN(type, name), type, provider: "", ...over });
  const fwChange = (over: Partial<ResourceChange>): ResourceChange => ({
    op: "update",
    type: FW,
    name: "default/web:firewall",
    urn: URN(FW, "default/web:firewall"),
    fields: [],
    replaceBecause: [],
    ...over,
  });
  const frChange = (over: Partial<ResourceChange>): ResourceChange => ({
    op: "replace",
    type: FR,
    name: "default/web:forwarding-rule-tcp",
    urn: URN(FR, "default/web:forwarding-rule-tcp"),
    fields: [],
    replaceBecause: [],
    ...over,
  });
  const table: [string, StepEventMetadata, ResourceChange | undefined][] = [
    [
      "an update with a nested detailed diff: old and new at that path",
      base("update", FW, "default/web:firewall", {
        old: fwOld,
        new: fwNew,
        diffs: ["allows"],
        detailedDiff: { "allows[0].ports[1]": { diffKind: "add" as never, inputDiff: true } },
      }),
      fwChange({ fields: [{ path: "allows[0].ports[1]", new: "443" }] }),
    ],
    [
      "an update with top-level diffs only",
      base("update", FW, "default/web:firewall", { old: fwOld, new: fwNew, diffs: ["allows"] }),
      fwChange({
        fields: [
          {
            path: "allows",
            old: [{ protocol: "tcp", ports: ["80"] }],
            new: [{ protocol: "tcp", ports: ["80", "443"] }],
          },
        ],
      }),
    ],
    [
      "a diff against the recorded state (not an input diff) takes the old value from the outputs",
      base("update", FW, "default/web:firewall", {
        old: { ...fwOld, outputs: { allows: [{ protocol: "tcp", ports: ["22"] }] } },
        new: fwNew,
        detailedDiff: { allows: { diffKind: "update" as never, inputDiff: false } },
      }),
      fwChange({
        fields: [
          {
            path: "allows",
            old: [{ protocol: "tcp", ports: ["22"] }],
            new: [{ protocol: "tcp", ports: ["80", "443"] }],
          },
        ],
      }),
    ],
    [
      "a replace, because of its replace keys",
      base("replace", FR, "default/web:forwarding-rule-tcp", {
        old: frOld,
        new: frNew,
        keys: ["ports"],
        diffs: ["ports"],
        detailedDiff: { ports: { diffKind: "update-replace" as never, inputDiff: true } },
      }),
      frChange({ fields: [{ path: "ports", old: ["80"], new: ["443", "80"] }], replaceBecause: ["ports"] }),
    ],
    ["a create", base("create", FR, "default/web:forwarding-rule-tcp", { new: frNew }), frChange({ op: "create" })],
    ["a delete", base("delete", FR, "default/web:forwarding-rule-tcp", { old: frOld }), frChange({ op: "delete" })],
    ["same: no change", base("same", FR, "default/web:forwarding-rule-tcp", { old: frOld, new: frOld }), undefined],
    [
      "the create half of a replace: told by the replace",
      base("create-replacement", FR, "default/web:forwarding-rule-tcp", { old: frOld, new: frNew }),
      undefined,
    ],
    [
      "the delete half of a replace: told by the replace",
      base("delete-replaced", FR, "default/web:forwarding-rule-tcp", { old: frOld }),
      undefined,
    ],
    [
      "a component: not a cloud resource",
      base("delete", "dccm:ServiceLoadBalancer", "default/web", {
        old: state("dccm:ServiceLoadBalancer", "default/web", {}, { custom: false }),
      }),
      undefined,
    ],
    [
      "a provider: not a cloud resource",
      base("delete", "pulumi:providers:gcp", "default", { old: state("pulumi:providers:gcp", "default", {}) }),
      undefined,
    ],
  ];
  for (const [title, metadata, change] of table) it(title, () => assert.deepEqual(resourceChange(metadata), change));
});

describe("preview/plan: formatValue", () => {
  const table: [unknown, string][] = [
    [undefined, "(unset)"],
    [["80", "443"], '["80","443"]'],
    ["x".repeat(198), `"${"x".repeat(198)}"`],
    ["x".repeat(250), `"${"x".repeat(199)}… (252 characters)`],
  ];
  for (const [value, text] of table) it(text.slice(0, 40), () => assert.equal(formatValue(value), text));
});

describe("preview/plan: the plan", () => {
  const change = (
    op: ResourceChange["op"],
    type: string,
    name: string,
    over: Partial<ResourceChange> = {},
  ): ResourceChange => ({
    op,
    type,
    name,
    urn: URN(type, name),
    fields: [],
    replaceBecause: [],
    ...over,
  });
  const grow: ResourceChange[] = [
    change("update", FW, "default/grow:firewall", {
      fields: [
        { path: "allows", old: [{ protocol: "tcp", ports: ["80"] }], new: [{ protocol: "tcp", ports: ["80", "443"] }] },
      ],
    }),
    change("replace", FR, "default/grow:forwarding-rule-tcp", {
      fields: [{ path: "ports", old: ["80"], new: ["443", "80"] }],
      replaceBecause: ["ports"],
    }),
  ];
  const gone: ResourceChange[] = [
    change("delete", FR, "default/gone:forwarding-rule-tcp"),
    change("delete", "gcp:compute/address:Address", "default/gone:address"),
    change("delete", FR, "default/gone:forwarding-rule-tcp"),
  ];
  const plans: StackPlan[] = [
    stackPlan({ stack: "cluster", kind: "unchanged" }, []),
    stackPlan({ stack: "service.default.gone", service: "default/gone", kind: "destroy" }, gone),
    // Reported in the event order: sorted by name.
    stackPlan({ stack: "service.default.grow", service: "default/grow", kind: "preview" }, [...grow].reverse()),
    stackPlan({ stack: "service.default.keep", service: "default/keep", kind: "unchanged" }, []),
    stackPlan({ stack: "service.default.new", service: "default/new", kind: "create" }, [
      change("create", "gcp:compute/address:Address", "default/new:address"),
    ]),
    // Another hash (recorded by an older dccm) but nothing to change: unchanged.
    stackPlan({ stack: "service.default.old", service: "default/old", kind: "preview" }, []),
  ];
  const rejected: RejectedService[] = [
    {
      service: "default/bad",
      stack: "service.default.bad",
      messages: [
        "Service default/bad: spec.ports[0].protocol: SCTP is not supported by GCE load balancers (TCP or UDP)",
      ],
      hasStack: true,
    },
  ];

  it("a stack's action and its changes, one per URN and op, sorted by name", () => {
    assert.deepEqual(
      plans.map((plan) => [plan.stack, plan.action, plan.changes.map((c) => `${c.op} ${c.name}`)]),
      [
        ["cluster", "unchanged", []],
        ["service.default.gone", "delete", ["delete default/gone:address", "delete default/gone:forwarding-rule-tcp"]],
        [
          "service.default.grow",
          "update",
          ["update default/grow:firewall", "replace default/grow:forwarding-rule-tcp"],
        ],
        ["service.default.keep", "unchanged", []],
        ["service.default.new", "create", ["create default/new:address"]],
        ["service.default.old", "unchanged", []],
      ],
    );
  });

  it("as text: per Service its resources and fields, the rejected Services, the unchanged stacks and the summary", () => {
    assert.equal(
      formatPlan(plans, rejected),
      [
        "Service default/gone: delete (stack service.default.gone)",
        "  delete Address default/gone:address",
        "  delete ForwardingRule default/gone:forwarding-rule-tcp",
        "Service default/grow: update (stack service.default.grow)",
        "  update Firewall default/grow:firewall",
        '      allows: [{"protocol":"tcp","ports":["80"]}] → [{"protocol":"tcp","ports":["80","443"]}]',
        "  replace ForwardingRule default/grow:forwarding-rule-tcp because ports",
        '      ports: ["80"] → ["443","80"]',
        "Service default/new: create (stack service.default.new)",
        "  create Address default/new:address",
        "Service default/bad: rejected, its load balancer is left as it is",
        "  Service default/bad: spec.ports[0].protocol: SCTP is not supported by GCE load balancers (TCP or UDP)",
        "Unchanged stacks: cluster, service.default.keep, service.default.old",
        "Plan: 1 to create, 1 to update, 1 to replace, 2 to delete, 3 unchanged stacks",
        "",
      ].join("\n"),
    );
  });

  it("a cluster stack that changes, and a rejected Service without a load balancer", () => {
    const cluster = stackPlan({ stack: "cluster", kind: "preview" }, [
      change("update", "gcp:compute/instanceGroup:InstanceGroup", "cluster:ig-us-central1-a", {
        fields: [{ path: "instances", old: ["a"] }],
      }),
    ]);
    assert.equal(
      formatPlan([cluster], [{ ...rejected[0], hasStack: false }]),
      [
        "Cluster: update (stack cluster)",
        "  update InstanceGroup cluster:ig-us-central1-a",
        '      instances: ["a"] → (unset)',
        "Service default/bad: rejected, no load balancer is created",
        "  Service default/bad: spec.ports[0].protocol: SCTP is not supported by GCE load balancers (TCP or UDP)",
        "Plan: 0 to create, 1 to update, 0 to replace, 0 to delete, 0 unchanged stacks",
        "",
      ].join("\n"),
    );
  });

  it("as JSON: changes, summary, every stack's plan and the rejected Services", () => {
    assert.deepEqual(JSON.parse(JSON.stringify(planDocument(plans, rejected))), {
      changes: true,
      summary: { create: 1, update: 1, replace: 1, delete: 2, unchangedStacks: 3 },
      stacks: JSON.parse(JSON.stringify(plans)) as unknown,
      rejected: [
        {
          service: "default/bad",
          stack: "service.default.bad",
          messages: [
            "Service default/bad: spec.ports[0].protocol: SCTP is not supported by GCE load balancers (TCP or UDP)",
          ],
          hasStack: true,
        },
      ],
    });
    assert.deepEqual(planDocument([plans[0]], []), {
      changes: false,
      summary: { create: 0, update: 0, replace: 0, delete: 0, unchangedStacks: 1 },
      stacks: [plans[0]],
      rejected: [],
    });
  });

  const exits: [string, StackPlan[], 0 | 2][] = [
    ["nothing changes: 0", [plans[0], plans[3], plans[5]], 0],
    ["an update: 2", [plans[0], plans[2]], 2],
    ["a delete: 2", [plans[1]], 2],
    [
      "a stack removed with no resource left is still a change: 2",
      [stackPlan({ stack: "service.default.empty", service: "default/empty", kind: "destroy" }, [])],
      2,
    ],
    ["no stack at all: 0", [], 0],
  ];
  for (const [title, list, code] of exits) it(`exit code: ${title}`, () => assert.equal(exitCode(list), code));

  it("summarize counts resources by op and the unchanged stacks", () => {
    assert.deepEqual(summarize(plans), { create: 1, update: 1, replace: 1, delete: 2, unchangedStacks: 3 });
  });
});

describe("preview/plan: engine runs", () => {
  const decisions: StackDecision[] = [
    { stack: "cluster", kind: "create" },
    { stack: "service.default.a", service: "default/a", kind: "create" },
    { stack: "service.default.b", service: "default/b", kind: "preview" },
    { stack: "service.default.c", service: "default/c", kind: "unchanged" },
    { stack: "service.default.d", service: "default/d", kind: "create" },
    { stack: "service.default.e", service: "default/e", kind: "destroy" },
    { stack: "service.default.f", service: "default/f", kind: "rejected", messages: ["m"], hasStack: false },
    { stack: "service.default.g", service: "default/g", kind: "create" },
  ];
  it("a stack of the backend gets a run of its own, new stacks two to a run, unchanged and rejected ones none", () => {
    assert.deepEqual(engineRuns(decisions, 2), [
      { kind: "creates", stacks: ["cluster", "service.default.a"] },
      { kind: "stack", decision: { stack: "service.default.b", service: "default/b", kind: "preview" } },
      { kind: "stack", decision: { stack: "service.default.e", service: "default/e", kind: "destroy" } },
      { kind: "creates", stacks: ["service.default.d", "service.default.g"] },
    ]);
  });
  it("the last run of new stacks may be short; none when there are none", () => {
    assert.deepEqual(engineRuns(decisions, 3), [
      { kind: "stack", decision: { stack: "service.default.b", service: "default/b", kind: "preview" } },
      { kind: "creates", stacks: ["cluster", "service.default.a", "service.default.d"] },
      { kind: "stack", decision: { stack: "service.default.e", service: "default/e", kind: "destroy" } },
      { kind: "creates", stacks: ["service.default.g"] },
    ]);
    assert.deepEqual(engineRuns(decisions.slice(2, 4), 25), [
      { kind: "stack", decision: { stack: "service.default.b", service: "default/b", kind: "preview" } },
    ]);
  });

  const resources: [string, string][] = [
    ["cluster:node-hc", "cluster"],
    ["cluster:ig-us-central1-a-2", "cluster"],
    ["default/web:forwarding-rule-tcp", "service.default.web"],
    ["kube-system/dns:backend-udp", "service.kube-system.dns"],
  ];
  for (const [name, stack] of resources)
    it(`stackOfResource(${name}) → ${stack}`, () => assert.equal(stackOfResource(name), stack));

  const create = (
    stack: string,
    type: string,
    name: string,
    parent = "dccm:gcp:ServiceLoadBalancer",
  ): ResourceChange => ({
    op: "create",
    type,
    name,
    urn: `urn:pulumi:${stack}::dccm-c0ffee::${parent}$${type}::${name}`,
    fields: [],
    replaceBecause: [],
  });
  it("inStack: the URN as the stack's own run reports it; anything else unchanged", () => {
    assert.deepEqual(
      inStack(create("new-cluster", "gcp:compute/address:Address", "default/web:address"), "service.default.web"),
      create("service.default.web", "gcp:compute/address:Address", "default/web:address"),
    );
    const odd = { ...create("x", "t", "n"), urn: "not-a-urn" };
    assert.deepEqual(inStack(odd, "cluster"), odd);
  });
  it("changesByStack: a run of new stacks' changes, each under its own stack, in the order reported", () => {
    const changes = [
      create("new-cluster", "gcp:compute/address:Address", "default/web:address"),
      create(
        "new-cluster",
        "gcp:compute/regionHealthCheck:RegionHealthCheck",
        "cluster:node-hc",
        "dccm:gcp:ClusterNetwork",
      ),
      create("new-cluster", "gcp:compute/firewall:Firewall", "default/web:firewall"),
    ];
    assert.deepEqual(
      changesByStack(changes),
      new Map([
        [
          "service.default.web",
          [
            create("service.default.web", "gcp:compute/address:Address", "default/web:address"),
            create("service.default.web", "gcp:compute/firewall:Firewall", "default/web:firewall"),
          ],
        ],
        [
          "cluster",
          [
            create(
              "cluster",
              "gcp:compute/regionHealthCheck:RegionHealthCheck",
              "cluster:node-hc",
              "dccm:gcp:ClusterNetwork",
            ),
          ],
        ],
      ]),
    );
  });

  it("mapLimit: every item, at most the limit at once, results in the items' order", async () => {
    let running = 0;
    let most = 0;
    const results = await mapLimit([5, 1, 4, 2, 3, 0], 2, async (n) => {
      running++;
      most = Math.max(most, running);
      for (let tick = 0; tick < n; tick++) await Promise.resolve();
      running--;
      return n * 10;
    });
    assert.deepEqual(results, [50, 10, 40, 20, 30, 0]);
    assert.equal(most, 2);
    assert.deepEqual(await mapLimit([], 4, () => Promise.resolve(1)), []);
  });

  const machine = { cores: 2, memoryBytes: 8 * 1024 ** 3 };
  const parallelisms: [string | undefined, unknown, number][] = [
    [undefined, undefined, 1],
    [undefined, 3, 3],
    [undefined, "5", 5],
    ["4", 3, 4],
    ["64", undefined, 64],
    ["", 7, 1],
  ];
  for (const [flag, fromFile, expected] of parallelisms) {
    it(`previewParallelism(${JSON.stringify(flag)}, ${JSON.stringify(fromFile)}) = ${expected}`, () =>
      assert.equal(previewParallelism(flag, fromFile, machine), expected));
  }
  const GIB = 1024 ** 3;
  const defaults: [number, number, number][] = [
    [1, 8 * GIB, 1],
    [2, 8 * GIB, 1],
    [3, 8 * GIB, 1],
    [4, 8 * GIB, 2],
    [16, 64 * GIB, 8],
    // The memory bound first: 16 cores in 1.25 GiB hold 2 runs of the daemon's, 1 of a preview's.
    [16, 1.25 * GIB, 1],
    [8, 0.5 * GIB, 1],
  ];
  for (const [cores, memoryBytes, expected] of defaults) {
    it(`defaultPreviewParallelism(${cores} cores, ${memoryBytes / GIB} GiB) = ${expected}`, () =>
      assert.equal(defaultPreviewParallelism({ cores, memoryBytes }), expected));
  }
  const refused: [string | undefined, unknown, string][] = [
    ["0", undefined, '--parallelism: "0" is not a whole number from 1 to 64'],
    ["65", undefined, '--parallelism: "65" is not a whole number from 1 to 64'],
    ["two", 3, '--parallelism: "two" is not a whole number from 1 to 64'],
    [undefined, 1.5, "parallelism: 1.5 is not a whole number from 1 to 64"],
    [undefined, true, "parallelism: true is not a whole number from 1 to 64"],
  ];
  for (const [flag, fromFile, message] of refused)
    it(message, () => assert.throws(() => previewParallelism(flag, fromFile, machine), { message }));
});

describe("preview/plan: quotas (dccm preview --quotas)", () => {
  const services = ["a", "b", "c"].map((name, i) =>
    lbService("default", name, `${i + 1}e1f0000-0000-4000-8000-000000000010`),
  );
  const { desired } = desiredStacks({ nodes: SNAPSHOT.nodes, services }, CONFIG);
  const read = {
    region: "us-central1",
    regional: [{ metric: "STATIC_ADDRESSES", limit: 8, usage: 8 }],
    global: [
      { metric: "FORWARDING_RULES", limit: 15, usage: 13 },
      { metric: "FIREWALLS", limit: 100, usage: 40 },
    ],
  };

  it("new Service stacks weighed in stack order: those past the headroom would be held; stacks with a record are not first ups", () => {
    const quotas = previewQuotas(
      [
        { stack: "cluster", kind: "unchanged" },
        { stack: "service.default.a", service: "default/a", kind: "create" },
        { stack: "service.default.b", service: "default/b", kind: "preview" },
        { stack: "service.default.c", service: "default/c", kind: "create" },
      ],
      desired,
      read,
    );
    assert.deepEqual(quotas, {
      read: true,
      quotas: [
        { quota: "STATIC_ADDRESSES", scope: "region", region: "us-central1", limit: 8, usage: 8, headroom: 0 },
        { quota: "FORWARDING_RULES", scope: "global", limit: 15, usage: 13, headroom: 2 },
        { quota: "FIREWALLS", scope: "global", limit: 100, usage: 40, headroom: 60 },
      ],
      held: [],
    });
    const tight = previewQuotas(
      [
        { stack: "service.default.a", service: "default/a", kind: "create" },
        { stack: "service.default.c", service: "default/c", kind: "create" },
      ],
      desired,
      { ...read, global: [{ metric: "FORWARDING_RULES", limit: 15, usage: 14 }] },
    );
    assert.deepEqual(quotaLines(tight), [
      "GCE quotas: STATIC_ADDRESSES (region us-central1) 8 of 8, headroom 0; FORWARDING_RULES (global) 14 of 15, headroom 1",
      "Service default/c: would be held for quota (stack service.default.c): GCE quota FORWARDING_RULES (global) has 15 of 15 in use or being created, and this load balancer needs 1",
    ]);
    assert.deepEqual(quotaLines({ read: false, error: "compute regions.get: HTTP 403: forbidden" }), [
      "GCE quotas not read: compute regions.get: HTTP 403: forbidden",
    ]);
  });
});

describe("preview/plan: a Service's notices (BackendLimit, SubsetTruncated, UnsupportedConfiguration) and its NEGs", () => {
  const limit = {
    reason: "BackendLimit" as const,
    message: "internal passthrough load balancers distribute to at most 250 VMs with instance-group backends",
  };
  const desired = desiredStacks(SNAPSHOT, CONFIG).desired;
  const web = desired.services.find((service) => service.key === "default/web");
  assert.ok(web !== undefined);
  const wanted = {
    desired: { ...desired, services: [{ ...web, notices: [limit] }] },
    hashes: new Map([["service.default.web", "h-web"]]),
    rejected: new Map<string, string[]>(),
    services: new Map([["service.default.web", "default/web"]]),
  };

  it("decideStacks carries a Service's notices on its decision, changed or not", () => {
    for (const [recorded, kind] of [
      [new Map<string, RecordedStack>([["service.default.web", { hash: "h-web" }]]), "unchanged"],
      [new Map<string, RecordedStack>(), "create"],
    ] as const)
      assert.deepEqual(decideStacks(wanted, recorded, SNAPSHOT.services, CLASSES), [
        { stack: "service.default.web", service: "default/web", kind, notices: [limit] },
      ]);
  });

  it("the plan shows each notice as a Warning row of its Service (text), and in its stack (JSON)", () => {
    const plans = [
      stackPlan({ stack: "service.default.web", service: "default/web", kind: "unchanged", notices: [limit] }, []),
    ];
    assert.equal(
      formatPlan(plans, []),
      [
        `Service default/web: Warning BackendLimit: ${limit.message}`,
        "Unchanged stacks: service.default.web",
        "Plan: 0 to create, 0 to update, 0 to replace, 0 to delete, 1 unchanged stacks",
        "",
      ].join("\n"),
    );
    assert.deepEqual(planDocument(plans, []).stacks, [
      { stack: "service.default.web", service: "default/web", action: "unchanged", changes: [], notices: [limit] },
    ]);
  });

  it("a plan without notices has no notices field (the JSON as before)", () => {
    assert.equal(
      "notices" in stackPlan({ stack: "service.default.web", service: "default/web", kind: "unchanged" }, []),
      false,
    );
  });
});
