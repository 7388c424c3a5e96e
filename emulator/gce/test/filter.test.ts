// The GCE emulator's rules (`npm run test:emulator`), one row each: what real GCE (and the
// provider @pulumi/gcp bridges) accepts, refuses with which message, replaces or updates in place.
// The source of each rule is cited next to it in emulator/gce/ (kinds.ts, validation.ts, rules/,
// networks.ts, instances.ts); a change that loosens a rule fails its row here.
// This file: the list filter grammar (filter.ts).
import * as assert from "node:assert/strict";

import type { JsonObject } from "../json";
import { matchesFilter, parseFilter } from "../filter";

describe("GCE emulator rules: list filter grammar (filter.ts, one row per rule)", () => {
  const R = (over: JsonObject): JsonObject => ({
    name: "k8s-e2e-1",
    network: "http://gce.test/compute/v1/projects/p/global/networks/k8s-net",
    description: "k8s-node-route",
    priority: 1000,
    tags: ["a", "b"],
    ...over,
  });
  const ROWS: ReadonlyArray<{ rule: string; filter: string; resource: JsonObject; expect: boolean | string }> = [
    {
      rule: "eq: the literal is a regular expression matching the entire field",
      filter: "name eq k8s-e2e-.*",
      resource: R({}),
      expect: true,
    },
    { rule: "eq: a partial match is no match", filter: "name eq k8s", resource: R({}), expect: false },
    { rule: "eq: double-quoted literal", filter: 'name eq ".*"', resource: R({}), expect: true },
    { rule: "eq: single-quoted literal", filter: "name eq 'k8s-e2e-1'", resource: R({}), expect: true },
    {
      rule: "ne: holds when the regular expression does not match",
      filter: "name ne k8s-.*",
      resource: R({}),
      expect: false,
    },
    {
      rule: "ne: an absent field matches nothing, so ne holds",
      filter: "nextHopIp ne 10\\..*",
      resource: R({}),
      expect: true,
    },
    {
      rule: "eq: an IP literal's dots match themselves too (addresses.list by address)",
      filter: "address eq 203.0.113.7",
      resource: { address: "203.0.113.7" },
      expect: true,
    },
    {
      rule: "several parenthesized regular expressions must all hold (the stock CCM's routes list)",
      filter:
        "(name eq e2e-.*) (network eq http://gce.test/compute/v1/projects/p/global/networks/k8s-net) (description eq k8s-node-route)",
      resource: R({ name: "e2e-1" }),
      expect: true,
    },
    {
      rule: "one of several parenthesized expressions failing fails the filter",
      filter: "(name eq e2e-.*) (description eq other)",
      resource: R({ name: "e2e-1" }),
      expect: false,
    },
    { rule: "= compares exactly", filter: 'name = "k8s-e2e-1"', resource: R({}), expect: true },
    { rule: "= is no regular expression", filter: "name = k8s-.*", resource: R({}), expect: false },
    { rule: "!= holds for another value", filter: "name != other", resource: R({}), expect: true },
    { rule: "numbers compare as numbers", filter: "priority < 1001", resource: R({}), expect: true },
    { rule: "a list field matches when one element does", filter: "tags = b", resource: R({}), expect: true },
    { rule: ": matches a substring of a string field", filter: "description : node", resource: R({}), expect: true },
    { rule: ":* tests that a field is defined", filter: "nextHopIp:*", resource: R({}), expect: false },
    {
      rule: "nested fields by dotted path",
      filter: "httpHealthCheck.port = 10256",
      resource: { httpHealthCheck: { port: 10256 } },
      expect: true,
    },
    {
      rule: "AND and implicit AND",
      filter: "(name = k8s-e2e-1) AND (priority = 1000) (tags = a)",
      resource: R({}),
      expect: true,
    },
    { rule: "OR holds when one side does", filter: "(name = x) OR (priority = 1000)", resource: R({}), expect: true },
    {
      rule: "eq/ne cannot be mixed with = in one filter: 400",
      filter: "(name eq x) (priority = 1000)",
      resource: R({}),
      expect:
        "Invalid value for field 'filter': '(name eq x) (priority = 1000)'. Invalid list filter expression: eq/ne (regular expressions) cannot be mixed with =, !=, >, <, >=, <= or :.",
    },
    {
      rule: "several expressions without parentheses: 400",
      filter: "name eq x description eq y",
      resource: R({}),
      expect:
        "Invalid value for field 'filter': 'name eq x description eq y'. Invalid list filter expression: several expressions must each be in parentheses.",
    },
    {
      rule: "a regular expression that does not compile: 400",
      filter: "name eq (",
      resource: R({}),
      expect:
        "Invalid value for field 'filter': 'name eq ('. Invalid list filter expression: '(' is not a regular expression (Invalid regular expression: /^(?:()$/s: Unterminated group).",
    },
  ];
  for (const row of ROWS) {
    it(row.rule, () => {
      if (typeof row.expect === "string") {
        assert.throws(() => parseFilter(row.filter), { message: row.expect });
      } else {
        assert.equal(matchesFilter(parseFilter(row.filter), row.resource), row.expect);
      }
    });
  }
});
