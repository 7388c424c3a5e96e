/**
 * Tier 1: `dccm drift`'s report (drift/report.ts): the stacks as the backend records them against
 * a listing, observe-only; its human form and exit code.
 */
import * as assert from "node:assert/strict";
import { appliedResource } from "../../../drift/declared";
import { driftExitCode, driftReport, formatDriftReport, type RecordedStack } from "../../../drift/report";

const FIREWALL = appliedResource("gcp:compute/firewall:Firewall", "projects/p/global/firewalls/k8s-fw-a1", {
  name: "k8s-fw-a1",
  sourceRanges: ["0.0.0.0/0"],
  priority: 1000,
});
const ROUTE = appliedResource("gcp:compute/route:Route", "projects/p/global/routes/r1", {
  name: "r1",
  destRange: "10.64.1.0/24",
});
if (FIREWALL === undefined || ROUTE === undefined) throw new Error("declared types");

const STACKS: RecordedStack[] = [
  { stack: "service.default.web", service: "default/web", resources: [FIREWALL] },
  { stack: "cluster", resources: [ROUTE] },
  { stack: "service.default.half", service: "default/half", resources: undefined },
];

describe("drift/report: dccm drift's report", () => {
  it("nothing drifted: exit 0, the summary line alone (and the stacks not compared)", () => {
    const listed = new Map<string, Record<string, unknown>>([
      ["firewalls/global/k8s-fw-a1", { name: "k8s-fw-a1", sourceRanges: ["0.0.0.0/0"], priority: 1000 }],
      ["routes/global/r1", { name: "r1", destRange: "10.64.1.0/24" }],
    ]);
    const report = driftReport("p", STACKS, listed);
    assert.deepEqual(report, { project: "p", compared: 2, listed: 2, unknown: ["service.default.half"], drifted: [] });
    assert.equal(driftExitCode(report), 0);
    assert.deepEqual(formatDriftReport(report), [
      "no drift: 2 stacks compared with 2 GCE resources of project p; nothing was changed",
      "not compared (a run left pending operations; the stack's next run settles them): service.default.half",
    ]);
  });

  it("a changed firewall and a missing route: each stack with its Service and its reasons, sorted by stack; exit 2", () => {
    const listed = new Map<string, Record<string, unknown>>([
      ["firewalls/global/k8s-fw-a1", { name: "k8s-fw-a1", sourceRanges: ["10.0.0.0/8"], priority: 1000 }],
    ]);
    const report = driftReport("p", STACKS.slice(0, 2), listed);
    assert.deepEqual(report, {
      project: "p",
      compared: 2,
      listed: 1,
      unknown: [],
      drifted: [
        { stack: "cluster", reasons: ["routes/global/r1: missing"] },
        {
          stack: "service.default.web",
          service: "default/web",
          reasons: ['firewalls/global/k8s-fw-a1: sourceRanges: declared "0.0.0.0/0", found "10.0.0.0/8"'],
        },
      ],
    });
    assert.equal(driftExitCode(report), 2);
    assert.deepEqual(formatDriftReport(report), [
      "drift in 2 of 2 stacks: 2 stacks compared with 1 GCE resources of project p; nothing was changed",
      "cluster:",
      "  routes/global/r1: missing",
      "service.default.web (Service default/web):",
      '  firewalls/global/k8s-fw-a1: sourceRanges: declared "0.0.0.0/0", found "10.0.0.0/8"',
    ]);
  });

  it("no stacks: nothing compared, no drift", () => {
    const report = driftReport("p", [], new Map());
    assert.deepEqual(report, { project: "p", compared: 0, listed: 0, unknown: [], drifted: [] });
    assert.equal(driftExitCode(report), 0);
  });
});
