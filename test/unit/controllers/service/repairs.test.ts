/**
 * Tier 1: a repair never changes a Service's IP (controllers/service/repairs.ts): which planned steps are
 * dangerous, which IPs provably stay, what a repair pins and what the Warning says.
 */
import * as assert from "node:assert/strict";
import type { StepEventMetadata } from "@pulumi/pulumi/automation";
import {
  ADDRESS_TYPE,
  FORWARDING_RULE_TYPE,
  heldMessage,
  judgeRepair,
  planChanges,
  plannedResources,
  repairPins,
  type PlannedResource,
  type RepairVerdict,
} from "../../../../controllers/service/repairs";
import { externalServiceDesired } from "../../../support/builders";

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

  it("the IPv4 address to the one IPv4 IP published; nothing for a user's loadBalancerIP, IPv6 only, or no single IPv4", () => {
    assert.deepEqual([...repairPins(service, "p", "us-central1", [IP, "2600:1900:4000:1::"])], [[ADDRESS_ID, IP]]);
    assert.deepEqual([...repairPins({ ...service, userIP: IP }, "p", "us-central1", [IP])], []);
    assert.deepEqual([...repairPins({ ...service, ipv6Only: true }, "p", "us-central1", ["2600:1900:4000:1::"])], []);
    assert.deepEqual([...repairPins(service, "p", "us-central1", [])], []);
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
