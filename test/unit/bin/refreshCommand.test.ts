// `dccm refresh`: the pure parts (the Service named, which Services can be refreshed, the Event
// answering a value) and, as a child process, its help and the usage errors that stop it before it
// talks to the cluster (its --help: cli.test.ts; the whole round trip with a daemon is test/e2e/refresh.e2e.ts).
import * as assert from "node:assert/strict";
import type * as k8s from "@kubernetes/client-node";
import { refreshAnswerOf, refreshRefusal, refreshTarget } from "../../../bin/refreshCommand";
import { runDccm } from "../../support/cli";

function event(uid: string, reason: string, message: string, type = "Normal"): k8s.CoreV1Event {
  return { metadata: {}, involvedObject: { kind: "Service", uid }, reason, message, type };
}

describe("bin/refreshCommand: the pure parts", () => {
  it("refreshTarget: NAMESPACE/NAME, anything else a usage error saying what was given", () => {
    assert.deepEqual(refreshTarget(["default/web"]), { namespace: "default", name: "web" });
    assert.deepEqual(refreshTarget(["kube-system/a-b1"]), { namespace: "kube-system", name: "a-b1" });
    const errors: Array<[string[], string]> = [
      [[], "expected one Service as NAMESPACE/NAME, got none"],
      [["a/b", "c/d"], "expected one Service as NAMESPACE/NAME, got a/b c/d"],
      [["web"], 'expected NAMESPACE/NAME, got "web"'],
      [["default/"], 'expected NAMESPACE/NAME, got "default/"'],
      [["Default/Web"], 'expected NAMESPACE/NAME, got "Default/Web"'],
    ];
    for (const [positionals, message] of errors)
      assert.throws(() => refreshTarget(positionals), { name: "UsageError", message }, positionals.join(" "));
  });

  it("refreshRefusal: a LoadBalancer Service is refreshed; another type or one being deleted is refused, named", () => {
    const metadata = { namespace: "default", name: "web" };
    assert.equal(refreshRefusal({ metadata, spec: { type: "LoadBalancer" } }), undefined);
    assert.equal(
      refreshRefusal({ metadata, spec: { type: "ClusterIP" } }),
      "Service default/web is of type ClusterIP, not LoadBalancer: dccm has no load balancer to refresh",
    );
    assert.equal(
      refreshRefusal({ metadata, spec: {} }),
      "Service default/web is of type ClusterIP, not LoadBalancer: dccm has no load balancer to refresh",
    );
    assert.equal(
      refreshRefusal({ metadata: { ...metadata, deletionTimestamp: new Date(0) }, spec: { type: "LoadBalancer" } }),
      "Service default/web is being deleted",
    );
  });

  it("refreshAnswerOf: only the daemon's answer to this value, on this object", () => {
    const events = [
      event("u1", "Refreshed", "Refresh t0: no drift: GCE matches the stack"),
      event("u0", "Refreshed", "Refresh t1: no drift: GCE matches the stack"),
      event("u1", "DriftCorrected", "Refresh t1: lookalike of another reason"),
      event("u1", "RefreshFailed", "Refresh t1: failed: boom; retried with backoff", "Warning"),
    ];
    assert.deepEqual(refreshAnswerOf(events, "u1", "t1"), {
      type: "Warning",
      reason: "RefreshFailed",
      message: "Refresh t1: failed: boom; retried with backoff",
    });
    assert.deepEqual(refreshAnswerOf(events, "u1", "t0"), {
      type: "Normal",
      reason: "Refreshed",
      message: "Refresh t0: no drift: GCE matches the stack",
    });
    assert.equal(refreshAnswerOf(events, "u1", "t2"), undefined);
  });
});

describe("bin/dccm refresh (child process, before it talks to the cluster)", function () {
  this.timeout(60_000);

  const usageErrors: Array<[string[], string]> = [
    [["refresh"], "dccm: expected one Service as NAMESPACE/NAME, got none\nsee dccm refresh --help\n"],
    [["refresh", "web"], 'dccm: expected NAMESPACE/NAME, got "web"\nsee dccm refresh --help\n'],
    [
      ["refresh", "default/web", "--timeout", "soon"],
      "dccm: --timeout soon: expected a duration such as 30s or 5m\nsee dccm refresh --help\n",
    ],
    [
      ["refresh", "default/web", "--timout", "5m"],
      "dccm: unknown flag --timout (did you mean --timeout?)\nsee dccm refresh --help\n",
    ],
  ];
  for (const [args, stderr] of usageErrors) {
    it(`${args.join(" ")}: one line, exit 2`, () =>
      assert.deepStrictEqual(runDccm(args), { status: 2, stdout: "", stderr }));
  }
});
