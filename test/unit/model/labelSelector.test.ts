// model/labelSelector.ts: `dccm.io/node-selector`'s grammar (k8s.io/apimachinery pkg/labels Parse)
// and its matching, as Kubernetes has them.
import * as assert from "node:assert/strict";

import { parseLabelSelector, selectorMatches, type LabelRequirement } from "../../../model/labelSelector";

describe("model/labelSelector parseLabelSelector", () => {
  const accepted: [string, LabelRequirement[]][] = [
    ["pool=edge", [{ key: "pool", operator: "in", values: ["edge"] }]],
    ["pool==edge", [{ key: "pool", operator: "in", values: ["edge"] }]],
    ["pool != edge", [{ key: "pool", operator: "notin", values: ["edge"] }]],
    ["pool in (edge, core,edge)", [{ key: "pool", operator: "in", values: ["core", "edge"] }]],
    ["pool notin (a)", [{ key: "pool", operator: "notin", values: ["a"] }]],
    ["gpu", [{ key: "gpu", operator: "exists" }]],
    ["!gpu", [{ key: "gpu", operator: "!exists" }]],
    ["tier=", [{ key: "tier", operator: "in", values: [""] }]],
    [
      "cloud.google.com/gke-nodepool=edge-1, topology.kubernetes.io/zone in (us-central1-a,us-central1-b), !spot",
      [
        { key: "cloud.google.com/gke-nodepool", operator: "in", values: ["edge-1"] },
        { key: "topology.kubernetes.io/zone", operator: "in", values: ["us-central1-a", "us-central1-b"] },
        { key: "spot", operator: "!exists" },
      ],
    ],
  ];
  for (const [text, requirements] of accepted) {
    it(`accepts ${JSON.stringify(text)}`, () => {
      assert.deepStrictEqual(parseLabelSelector(text), { ok: true, requirements });
    });
  }

  const refused: [string, string][] = [
    ["", "is empty (remove the annotation to use every eligible node)"],
    ["a=b,,c", "an empty requirement (two commas in a row, or one at an end)"],
    ["a=b,", "an empty requirement (two commas in a row, or one at an end)"],
    ["pool in (a", '"pool in (a": unbalanced parentheses'],
    ["pool in ()", '"pool in ()": in needs at least one value'],
    [
      "pool=bad value",
      '"pool=bad value" is not key, !key, key=value, key!=value, key in (values) or key notin (values)',
    ],
    [
      "pool=-edge",
      '"-edge" is not a label value (at most 63 letters, digits, "-", "_" or ".", alphanumeric at both ends)',
    ],
    [
      "-pool=edge",
      '"-pool" is not a label key (at most 63 letters, digits, "-", "_" or ".", alphanumeric at both ends, after an optional prefix and "/")',
    ],
    ["Example.com/pool=edge", '"Example.com/pool": the prefix before "/" must be a DNS subdomain'],
    [
      "pool<3",
      '"pool<3" is not a label key (at most 63 letters, digits, "-", "_" or ".", alphanumeric at both ends, after an optional prefix and "/")',
    ],
  ];
  for (const [text, reason] of refused) {
    it(`refuses ${JSON.stringify(text)}`, () => {
      assert.deepStrictEqual(parseLabelSelector(text), { ok: false, reason });
    });
  }
});

describe("model/labelSelector selectorMatches", () => {
  const labels = { pool: "edge", gpu: "" };
  const table: [string, boolean][] = [
    ["pool=edge", true],
    ["pool=core", false],
    ["pool!=core", true],
    ["zone!=a", true],
    ["zone notin (a)", true],
    ["zone in (a)", false],
    ["gpu", true],
    ["!gpu", false],
    ["!spot", true],
    ["pool in (core,edge),gpu,!spot", true],
    ["pool in (core,edge),spot", false],
  ];
  for (const [text, want] of table) {
    it(`${text} → ${want}`, () => {
      const parsed = parseLabelSelector(text);
      assert.ok(parsed.ok);
      assert.equal(selectorMatches(parsed.requirements, labels), want);
    });
  }
});
