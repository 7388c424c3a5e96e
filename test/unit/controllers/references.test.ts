/** controllers/references.ts: the union of what Service stacks point at, and what the cluster stack is told of it. */
import * as assert from "node:assert/strict";
import fc from "fast-check";
import { ReferenceUnion, withReferences, type ClusterReferences } from "../../../controllers/references";
import { NOTHING_OBSERVED, type ObservedCloud } from "../../../model";

describe("controllers/references: ReferenceUnion", () => {
  it("unions zones (sorted, once each) and the legacy health check; a replaced or dropped stack takes its part away", () => {
    const union = new ReferenceUnion();
    const b = { zones: ["us-central1-b"], legacyHealthCheck: false };
    const ab = { zones: ["us-central1-a", "us-central1-b"], legacyHealthCheck: true };
    assert.deepEqual(union.union(), { zones: [], legacyHealthCheck: false });
    union.replace(undefined, b);
    union.replace(undefined, ab);
    assert.deepEqual(union.union(), { zones: ["us-central1-a", "us-central1-b"], legacyHealthCheck: true });
    union.replace(ab, { zones: ["us-central1-c"], legacyHealthCheck: false });
    assert.deepEqual(union.union(), { zones: ["us-central1-b", "us-central1-c"], legacyHealthCheck: false });
    union.replace(b, undefined);
    assert.deepEqual(union.union(), { zones: ["us-central1-c"], legacyHealthCheck: false });
  });

  it("after any sequence of sets and drops, equals the union of what each stack points at now", () => {
    const zone = fc.constantFrom("us-central1-a", "us-central1-b", "us-central1-c", "us-central1-f");
    const references = fc.record({ zones: fc.array(zone, { maxLength: 3 }), legacyHealthCheck: fc.boolean() });
    const step = fc.tuple(fc.integer({ min: 0, max: 5 }), fc.option(references, { nil: undefined }));
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const union = new ReferenceUnion();
        const current = new Map<number, ClusterReferences>();
        for (const [stack, next] of steps) {
          union.replace(current.get(stack), next);
          if (next === undefined) current.delete(stack);
          else current.set(stack, next);
        }
        const naive = [...current.values()];
        assert.deepEqual(union.union(), {
          zones: [...new Set(naive.flatMap((reference) => reference.zones))].sort(),
          legacyHealthCheck: naive.some((reference) => reference.legacyHealthCheck),
        });
      }),
    );
  });
});

describe("controllers/references: withReferences, enableL4DenyFirewall off: what the cluster stack is told (ObservedCloud.denyRulesHeld, denyRulesUnread)", () => {
  const held: ClusterReferences = {
    zones: ["us-central1-a"],
    legacyHealthCheck: false,
    denyRules: ["default/a", "default/b"],
  };
  const observed: Array<[string, ObservedCloud, ClusterReferences, boolean, ObservedCloud]> = [
    [
      "deny rules held",
      NOTHING_OBSERVED,
      held,
      false,
      {
        ...NOTHING_OBSERVED,
        referencedZones: ["us-central1-a"],
        referencedGroups: [],
        denyRulesHeld: ["default/a", "default/b"],
      },
    ],
    [
      "unread stacks, the cluster's firewall recorded at 999",
      NOTHING_OBSERVED,
      { zones: [], legacyHealthCheck: false, unread: true },
      true,
      { ...NOTHING_OBSERVED, referencedGroups: [], denyRulesUnread: true },
    ],
    [
      "unread stacks, the cluster's firewall at 1000: nothing to hold",
      NOTHING_OBSERVED,
      { zones: [], legacyHealthCheck: false, unread: true },
      false,
      { ...NOTHING_OBSERVED, referencedGroups: [] },
    ],
    [
      "none held any more: the fields go (the desired state as without them)",
      { ...NOTHING_OBSERVED, denyRulesHeld: ["default/a"], denyRulesUnread: true },
      { zones: [], legacyHealthCheck: false },
      true,
      { ...NOTHING_OBSERVED, referencedGroups: [] },
    ],
  ];
  for (const [title, before, references, aboveDeny, expected] of observed)
    it(`withReferences: ${title}`, () =>
      assert.deepStrictEqual(withReferences(before, references, aboveDeny), expected));
});
