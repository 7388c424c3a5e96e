/**
 * Tier 1: a repair never changes a Service's IP (controllers/service/repairs.ts): which planned steps are
 * dangerous, which IPs provably stay, what a repair pins and what the Warning says.
 */
import * as assert from "node:assert/strict";
import type { StepEventMetadata } from "@pulumi/pulumi/automation";
import pino from "pino";
import {
  ADDRESS_TYPE,
  FORWARDING_RULE_TYPE,
  heldMessage,
  judgeRepair,
  pinnableRepair,
  planChanges,
  plannedResources,
  repairPins,
  RepairGuard,
  type HeldResource,
  type PlannedResource,
  type RepairVerdict,
} from "../../../../controllers/service/repairs";
import type { Adoption } from "../../../../components/adoption";
import { ControllerMetrics } from "../../../../controllers/metrics";
import { DesiredCache } from "../../../../model/desiredCache";
import type { ServiceDesired } from "../../../../model";
import { CONFIG, externalServiceDesired } from "../../../support/builders";
import { counter } from "../../../support/metrics";

const IP = "203.0.113.8";
const NEW = "203.0.113.13";
const ADDRESS = "default/web:address";
const RULE = "default/web:forwarding-rule-tcp";
const UDP_RULE = "default/web:forwarding-rule-udp";
const FIREWALL = "gcp:compute/firewall:Firewall";

const address = (op: PlannedResource["op"], before?: string, after?: string): PlannedResource => ({
  type: ADDRESS_TYPE,
  name: ADDRESS,
  op,
  ...(before !== undefined ? { before } : {}),
  ...(after !== undefined ? { after } : {}),
});
const rule = (op: PlannedResource["op"], before?: string, after?: string, name = RULE): PlannedResource => ({
  type: FORWARDING_RULE_TYPE,
  name,
  op,
  ...(before !== undefined ? { before } : {}),
  ...(after !== undefined ? { after } : {}),
});
const held = (
  type: string,
  name: string,
  op: PlannedResource["op"],
  why: string,
): { type: string; name: string; op: PlannedResource["op"]; why: string } => ({ type, name, op, why });

describe("repairs: which plans keep the IP (judgeRepair)", () => {
  const ROWS: ReadonlyArray<{
    plan: string;
    resources: PlannedResource[];
    published?: string[];
    changes?: boolean;
    verdict: RepairVerdict;
  }> = [
    {
      plan: "nothing changes (a full refresh that found nothing)",
      resources: [address("same", IP, IP), rule("same", IP, IP)],
      changes: false,
      verdict: { kind: "nothing" },
    },
    {
      plan: "only a firewall changes",
      resources: [address("same", IP, IP), rule("same", IP, IP)],
      verdict: { kind: "apply" },
    },
    {
      plan: "address released out of band, reserved again with the IP its rule serves (promotion)",
      resources: [address("create", undefined, IP), rule("same", IP, IP)],
      verdict: { kind: "apply" },
    },
    {
      plan: "rule deleted out of band, created again on the address that stayed",
      resources: [address("same", IP, IP), rule("create", undefined, IP)],
      verdict: { kind: "apply" },
    },
    {
      plan: "rule replaced (its target pool replaced), the address stays",
      resources: [address("same", IP, IP), rule("replace", IP, IP)],
      verdict: { kind: "apply" },
    },
    {
      plan: "address released, TCP rule deleted, UDP rule kept: promoted from the UDP rule, TCP rule back on it",
      resources: [address("create", undefined, IP), rule("create", undefined, IP), rule("same", IP, IP, UDP_RULE)],
      verdict: { kind: "apply" },
    },
    {
      plan: "a user's loadBalancerIP: the rule created again on the literal",
      resources: [rule("create", undefined, IP)],
      verdict: { kind: "apply" },
    },
    {
      plan: "address released unpinned (the pre-fix plan): a new address, the rule replaced with an unknown IP",
      resources: [address("create"), rule("replace", IP)],
      verdict: {
        kind: "hold",
        held: [
          held(ADDRESS_TYPE, ADDRESS, "create", "a new IP would be allocated"),
          held(
            FORWARDING_RULE_TYPE,
            RULE,
            "replace",
            "its IP is not known before the run: GCE would allocate a new one",
          ),
        ],
      },
    },
    {
      plan: "address and rule both gone (the IP released by GCE)",
      resources: [address("create", undefined, IP), rule("create", undefined, IP)],
      verdict: {
        kind: "hold",
        held: [
          held(
            ADDRESS_TYPE,
            ADDRESS,
            "create",
            `${IP} is on no forwarding rule any more, so it cannot be reserved again`,
          ),
          held(FORWARDING_RULE_TYPE, RULE, "create", `${IP} is held by no address`),
        ],
      },
    },
    {
      plan: "address pinned but the rule replaced in the same run: the rule would release the IP first",
      resources: [address("create", undefined, IP), rule("replace", IP, IP)],
      verdict: {
        kind: "hold",
        held: [
          held(
            ADDRESS_TYPE,
            ADDRESS,
            "create",
            `${IP} is on no forwarding rule any more, so it cannot be reserved again`,
          ),
          held(FORWARDING_RULE_TYPE, RULE, "replace", `${IP} is held by no address`),
        ],
      },
    },
    {
      plan: "address replaced to another IP",
      resources: [address("replace", IP, NEW), rule("replace", IP, NEW)],
      verdict: {
        kind: "hold",
        held: [
          held(ADDRESS_TYPE, ADDRESS, "replace", `its IP would change from ${IP} to ${NEW}`),
          held(FORWARDING_RULE_TYPE, RULE, "replace", `its IP would change from ${IP} to ${NEW}`),
        ],
      },
    },
    {
      plan: "address replaced with the same pinned IP while its rule stays: released and promoted again",
      resources: [address("replace", IP, IP), rule("same", IP, IP)],
      verdict: { kind: "apply" },
    },
    {
      plan: "address deleted by the plan",
      resources: [address("delete", IP), rule("same", IP, IP)],
      verdict: { kind: "hold", held: [held(ADDRESS_TYPE, ADDRESS, "delete", `its IP ${IP} would be released`)] },
    },
    {
      plan: "a rule deleted by the plan while the address holds its IP",
      resources: [address("same", IP, IP), rule("delete", IP)],
      verdict: { kind: "apply" },
    },
    {
      plan: "an ephemeral rule deleted by the plan",
      resources: [rule("delete", IP)],
      verdict: { kind: "hold", held: [held(FORWARDING_RULE_TYPE, RULE, "delete", `its IP ${IP} would be released`)] },
    },
    {
      plan: "a rule created on an IP the Service does not have",
      resources: [rule("create", undefined, NEW)],
      verdict: {
        kind: "hold",
        held: [held(FORWARDING_RULE_TYPE, RULE, "create", `${NEW} is not an IP the Service has`)],
      },
    },
  ];
  for (const row of ROWS) {
    it(row.plan, () => {
      assert.deepEqual(judgeRepair(row.resources, row.published ?? [IP], row.changes ?? true), row.verdict);
    });
  }
});

const URN = "urn:pulumi:service.default.web::dccm-c1::dccm:gcp:ServiceLoadBalancer$";
const state = (type: string, ip: string | undefined, field: string): StepEventMetadata["old"] => ({
  type,
  urn: "",
  id: "",
  parent: "",
  provider: "",
  inputs: ip === undefined ? {} : { [field]: ip },
  outputs: ip === undefined ? {} : { [field]: ip },
});
const step = (
  op: string,
  type: string,
  name: string,
  before: string | undefined,
  after: string | undefined,
): StepEventMetadata => {
  const field = type === ADDRESS_TYPE ? "address" : "ipAddress";
  const meta: Record<string, unknown> = { op, type, urn: `${URN}${type}::${name}`, provider: "" };
  if (before !== undefined || op !== "create") meta.old = state(type, before, field);
  if (op !== "delete")
    meta.new = { ...state(type, undefined, field), inputs: after === undefined ? {} : { [field]: after } };
  return meta as unknown as StepEventMetadata;
};

describe("repairs: a plan's forwarding rules and addresses (plannedResources)", () => {
  it("a preview --refresh after the address was released: its refresh step left out, the create with the pinned IP, the rule the same", () => {
    const steps = [
      step("refresh", ADDRESS_TYPE, ADDRESS, IP, undefined),
      step("refresh", FORWARDING_RULE_TYPE, RULE, IP, IP),
      step("create", ADDRESS_TYPE, ADDRESS, undefined, IP),
      step("same", FORWARDING_RULE_TYPE, RULE, IP, IP),
      step("same", FIREWALL, "default/web:firewall", undefined, undefined),
    ];
    assert.deepEqual(plannedResources(steps), [address("create", undefined, IP), rule("same", IP, IP)]);
    assert.equal(planChanges(steps), true);
  });

  it("a replacement's steps (delete-replaced, replace, create-replacement) are one replace; an IP unknown before the run (the engine's sentinel) is none", () => {
    const unknown = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";
    const steps = [
      step("delete-replaced", FORWARDING_RULE_TYPE, RULE, IP, unknown),
      step("replace", FORWARDING_RULE_TYPE, RULE, IP, unknown),
      step("create-replacement", FORWARDING_RULE_TYPE, RULE, IP, unknown),
    ];
    assert.deepEqual(plannedResources(steps), [rule("replace", IP)]);
  });

  it("an IPv6 rule's /96 is read as its address; a plan of only same steps changes nothing", () => {
    const steps = [
      step("same", FORWARDING_RULE_TYPE, `${RULE}-ipv6`, "2600:1900:4000:1::/96", "2600:1900:4000:1::/96"),
    ];
    assert.deepEqual(plannedResources(steps), [
      rule("same", "2600:1900:4000:1::", "2600:1900:4000:1::", `${RULE}-ipv6`),
    ]);
    assert.equal(planChanges(steps), false);
  });
});

describe("repairs: what a repair pins (repairPins) and says (heldMessage)", () => {
  const service = externalServiceDesired(
    "default",
    "web",
    "0b1f2f6e-4c1a-4d59-9e0e-7c1f9d1c2a3b",
    "a0b1f2f6e4c1a4d599e0e7c1f9d1c2a3",
    [80],
  );
  const ADDRESS_ID = "projects/p/regions/us-central1/addresses/a0b1f2f6e4c1a4d599e0e7c1f9d1c2a3";

  it("a Service that reserves <lb> for life: the IPv4 address to the one IPv4 IP published; nothing without a single IPv4", () => {
    const reserved: ServiceDesired = { ...service, reserveAddress: true };
    assert.deepEqual([...repairPins(reserved, "p", "us-central1", [IP, "2600:1900:4000:1::"])], [[ADDRESS_ID, IP]]);
    assert.deepEqual([...repairPins(reserved, "p", "us-central1", [])], []);
    assert.deepEqual([...repairPins(reserved, "p", "us-central1", [IP, NEW])], []);
  });

  it("nothing for a transient Service (no <lb> at rest: addressPins.ts pins it), a user's loadBalancerIP, or IPv6 only", () => {
    assert.deepEqual([...repairPins(service, "p", "us-central1", [IP])], []);
    assert.deepEqual([...repairPins({ ...service, userIP: IP }, "p", "us-central1", [IP])], []);
    assert.deepEqual([...repairPins({ ...service, ipv6Only: true }, "p", "us-central1", ["2600:1900:4000:1::"])], []);
  });

  it("the Warning names every held resource, why, and what the user can do", () => {
    const resources = [
      held(ADDRESS_TYPE, ADDRESS, "create", `${IP} is on no forwarding rule any more, so it cannot be reserved again`),
    ];
    assert.equal(
      heldMessage(resources, [IP], service, "us-central1"),
      `Not repaired: the run would not keep the load balancer's IP ${IP}: Address default/web:address (create): ${IP} is on no forwarding rule any more, so it cannot be reserved again. ` +
        "Nothing was applied; retried with backoff. Reserve 203.0.113.8 again as address a0b1f2f6e4c1a4d599e0e7c1f9d1c2a3 in us-central1 if the project still holds it, or delete and create the Service again to take a new IP",
    );
    assert.equal(
      heldMessage(resources, [IP], { ...service, userIP: IP }, "us-central1"),
      `Not repaired: the run would not keep the load balancer's IP ${IP}: Address default/web:address (create): ${IP} is on no forwarding rule any more, so it cannot be reserved again. ` +
        "Nothing was applied; retried with backoff. Delete and create the Service again to take a new IP",
    );
  });
});

describe("repairs: a transient Service's repair replacing a rule on its IP is pinned first (pinnableRepair)", () => {
  const UNKNOWN = "its IP is not known before the run: GCE would allocate a new one";
  const ROWS: [string, HeldResource[], PlannedResource[], string | undefined, boolean][] = [
    [
      "the rule replaced, on the published IP: pinnable",
      [held(FORWARDING_RULE_TYPE, RULE, "replace", UNKNOWN)],
      [rule("replace", IP)],
      IP,
      true,
    ],
    [
      "both rules (TCP and UDP) replaced, each on the published IP: pinnable",
      [held(FORWARDING_RULE_TYPE, RULE, "replace", UNKNOWN), held(FORWARDING_RULE_TYPE, UDP_RULE, "replace", UNKNOWN)],
      [rule("replace", IP), rule("replace", IP, undefined, UDP_RULE)],
      IP,
      true,
    ],
    [
      "one of two rules replaced from another IP: not",
      [held(FORWARDING_RULE_TYPE, RULE, "replace", UNKNOWN), held(FORWARDING_RULE_TYPE, UDP_RULE, "replace", UNKNOWN)],
      [rule("replace", IP), rule("replace", NEW, undefined, UDP_RULE)],
      IP,
      false,
    ],
    [
      "the rule replaced, its IP before unknown: not",
      [held(FORWARDING_RULE_TYPE, RULE, "replace", UNKNOWN)],
      [rule("replace")],
      IP,
      false,
    ],
    [
      "the rule gone, created again: its ephemeral IP went with it, not",
      [held(FORWARDING_RULE_TYPE, RULE, "create", UNKNOWN)],
      [rule("create")],
      IP,
      false,
    ],
    [
      "the rule deleted by the plan: not",
      [held(FORWARDING_RULE_TYPE, RULE, "delete", `its IP ${IP} would be released`)],
      [rule("delete", IP)],
      IP,
      false,
    ],
    [
      "an address held: not",
      [held(ADDRESS_TYPE, ADDRESS, "create", "a new IP would be allocated")],
      [address("create"), rule("same", IP, IP)],
      IP,
      false,
    ],
    [
      "no single published IPv4: not",
      [held(FORWARDING_RULE_TYPE, RULE, "replace", UNKNOWN)],
      [rule("replace", IP)],
      undefined,
      false,
    ],
  ];
  for (const [what, heldResources, resources, ip, pinnable] of ROWS)
    it(what, () => assert.equal(pinnableRepair(heldResources, resources, ip), pinnable));
});

describe("repairs: RepairGuard.decide (a preview, then apply, pin, nothing or held)", () => {
  const LB = "a0b1f2f6e4c1a4d599e0e7c1f9d1c2a3";
  const WEB = externalServiceDesired("default", "web", "0b1f2f6e-4c1a-4d59-9e0e-7c1f9d1c2a3b", LB, [80]);
  const TARGET = { kind: "Service" as const, namespace: "default", name: "web", uid: "uid-web" };

  function guard(steps: StepEventMetadata[]): {
    guard: RepairGuard;
    previews: Array<Adoption | undefined>;
    events: string[][];
    metrics: ControllerMetrics;
  } {
    const cache = new DesiredCache(CONFIG);
    cache.update({ nodes: [], services: [] });
    const previews: Array<Adoption | undefined> = [];
    const events: string[][] = [];
    const metrics = new ControllerMetrics();
    const repairGuard = new RepairGuard({
      runs: {
        preview: async (_stack, _scope, _hash, adoption) => {
          previews.push(adoption);
          return steps;
        },
      },
      cache,
      events: {
        record: async (_target, type, reason, message) => {
          events.push([type, reason, message]);
        },
      },
      metrics,
      logger: pino({ level: "silent" }),
    });
    return { guard: repairGuard, previews, events, metrics };
  }
  const run = (service: ServiceDesired) => ({
    stack: "service.default.web",
    scope: { kind: "service" as const, namespace: "default", name: "web" },
    hash: "h1",
    service,
    published: [IP],
    target: TARGET,
  });
  const unknown = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

  it("transient: a rule replaced from the published IP (drift of a field GCE cannot update) → pin that IP; no Warning, nothing counted", async () => {
    const h = guard([step("replace", FORWARDING_RULE_TYPE, RULE, IP, unknown)]);
    assert.deepEqual(await h.guard.decide(run(WEB)), { kind: "pin", ip: IP });
    assert.deepEqual(h.previews, [{ imports: new Set(), addressIps: new Map() }]);
    assert.deepEqual(h.events, []);
    assert.equal(await counter(h.metrics.registry, "dccm_ip_changes_held_total", {}), 0);
  });

  it("transient: the rule deleted out of band (its ephemeral IP gone with it) → held, Warning IPChangeHeld, counted", async () => {
    const h = guard([step("create", FORWARDING_RULE_TYPE, RULE, undefined, undefined)]);
    const decision = await h.guard.decide(run(WEB));
    const message =
      `Not repaired: the run would not keep the load balancer's IP ${IP}: ForwardingRule ${RULE} (create): its IP is not known before the run: GCE would allocate a new one. ` +
      `Nothing was applied; retried with backoff. Reserve ${IP} again as address ${LB} in us-central1 if the project still holds it, or delete and create the Service again to take a new IP`;
    assert.equal(decision.kind, "held");
    assert.ok(decision.kind === "held");
    assert.equal(decision.error.message, `stack service.default.web: ${message}`);
    assert.deepEqual(h.events, [["Warning", "IPChangeHeld", message]]);
    assert.equal(await counter(h.metrics.registry, "dccm_ip_changes_held_total", {}), 1);
  });

  it("reserved for life: the same replace is no pin (its <lb> is pinned by repairPins instead) → held", async () => {
    const h = guard([step("replace", FORWARDING_RULE_TYPE, RULE, IP, unknown)]);
    const decision = await h.guard.decide(run({ ...WEB, reserveAddress: true }));
    assert.equal(decision.kind, "held");
    assert.deepEqual(h.previews, [
      { imports: new Set(), addressIps: new Map([[`projects/dccm-test/regions/us-central1/addresses/${LB}`, IP]]) },
    ]);
  });

  it("a user's loadBalancerIP: no pin either (never ours to reserve) → held", async () => {
    const h = guard([step("replace", FORWARDING_RULE_TYPE, RULE, IP, unknown)]);
    assert.equal((await h.guard.decide(run({ ...WEB, userIP: IP }))).kind, "held");
  });

  it("transient, a plan that keeps the rule: apply with the preview's adoption", async () => {
    const h = guard([
      step("same", FORWARDING_RULE_TYPE, RULE, IP, IP),
      step("update", "gcp:compute/firewall:Firewall", "default/web:firewall", undefined, undefined),
    ]);
    assert.deepEqual(await h.guard.decide(run(WEB)), {
      kind: "apply",
      adoption: { imports: new Set(), addressIps: new Map() },
    });
  });
});
