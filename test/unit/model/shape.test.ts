// Malformed input (arbitrary JSON where the model expects a string, number, object or array): one
// rejection or warning naming the object and the field, exact messages; the rest proceeds unchanged.
import * as assert from "node:assert/strict";

import { desiredState } from "../../../model/desired";
import { describeValue } from "../../../model/shape";
import { serviceDesired } from "../../../model/service";
import type { Rejection, ServiceInfo } from "../../../model/types";
import { trimNode, trimService, type NodeLike, type ServiceLike } from "../../../watcher/trim";
import { CONFIG, gceNode, lbService, ZONE } from "../../support/builders";

const GOOD_UID = "11111111-1111-4111-8111-111111111111";
const BAD_UID = "22222222-2222-4222-8222-222222222222";
const NODE_A = gceNode("n-a", "00000000-0000-4000-8000-000000000001", "us-central1-a", ["10.64.1.0/24"]);
const NODE_B = gceNode("n-b", "00000000-0000-4000-8000-000000000002", "us-central1-b", ["10.64.2.0/24"]);

/** A Service object with one field replaced by a JSON value of the wrong type, as a hand-edited snapshot could have it. */
function malformed(over: Record<string, unknown>): ServiceInfo {
  return { ...lbService("default", "x", BAD_UID), ...over };
}

describe("model: malformed input", () => {
  describe("describeValue", () => {
    const cases: [unknown, string][] = [
      [null, "null"],
      [undefined, "nothing"],
      [[1], "an array"],
      [{ a: 1 }, "an object"],
      [5, "5"],
      [true, "true"],
      ["text", '"text"'],
      ["x".repeat(45), `"${"x".repeat(40)}…"`],
    ];
    for (const [value, expected] of cases)
      it(`${JSON.stringify(value) ?? "undefined"} → ${expected}`, () => assert.equal(describeValue(value), expected));
  });

  describe("a malformed Service is exactly one rejection naming it and the field; the good Service is unchanged", () => {
    const cases: [string, Record<string, unknown>, string, string][] = [
      [
        "a null port",
        { ports: [{ protocol: "TCP", port: 80 }, null] },
        "spec.ports[1]",
        "expected an object, got null",
      ],
      ["a port that is a number", { ports: [443] }, "spec.ports[0]", "expected an object, got 443"],
      ["ports that are an object", { ports: { port: 80 } }, "spec.ports", "expected an array, got an object"],
      ["ports that are a string", { ports: "80" }, "spec.ports", 'expected an array, got "80"'],
      [
        "a port number that is a string",
        { ports: [{ protocol: "TCP", port: "80" }] },
        "spec.ports[0].port",
        'expected a number, got "80"',
      ],
      [
        "a protocol that is a number",
        { ports: [{ protocol: 6, port: 80 }] },
        "spec.ports[0].protocol",
        "expected a string, got 6",
      ],
      [
        "a port name that is an array",
        { ports: [{ name: ["http"], protocol: "TCP", port: 80 }] },
        "spec.ports[0].name",
        "expected a string or nothing, got an array",
      ],
      [
        "a nodePort that is a boolean",
        { ports: [{ protocol: "TCP", port: 80, nodePort: true }] },
        "spec.ports[0].nodePort",
        "expected a number or nothing, got true",
      ],
      [
        "a numeric annotation value",
        { annotations: { "cloud.google.com/network-tier": 5 } },
        "metadata.annotations[cloud.google.com/network-tier]",
        "expected a string, got 5",
      ],
      [
        "an annotation value that is null",
        { annotations: { "example.com/x": null } },
        "metadata.annotations[example.com/x]",
        "expected a string, got null",
      ],
      [
        "an annotation value that is an object",
        { annotations: { "networking.gke.io/load-balancer-type": { v: "Internal" } } },
        "metadata.annotations[networking.gke.io/load-balancer-type]",
        "expected a string, got an object",
      ],
      [
        "annotations that are a list",
        { annotations: ["a=b"] },
        "metadata.annotations",
        "expected an object, got an array",
      ],
      [
        "annotations that are a string",
        { annotations: "a=b" },
        "metadata.annotations",
        'expected an object, got "a=b"',
      ],
      ["a uid that is a number", { uid: 7 }, "metadata.uid", "expected a string, got 7"],
      ["a type that is a number", { type: 1 }, "spec.type", "expected a string, got 1"],
      ["a type that is null", { type: null }, "spec.type", "expected a string, got null"],
      [
        "a loadBalancerClass that is an object",
        { loadBalancerClass: {} },
        "spec.loadBalancerClass",
        "expected a string or nothing, got an object",
      ],
      ["deleting that is a string", { deleting: "yes" }, "metadata.deletionTimestamp", 'expected a boolean, got "yes"'],
      [
        "an externalTrafficPolicy that is a boolean",
        { externalTrafficPolicy: false },
        "spec.externalTrafficPolicy",
        "expected a string or nothing, got false",
      ],
      [
        "a healthCheckNodePort that is a string",
        { externalTrafficPolicy: "Local", healthCheckNodePort: "30000" },
        "spec.healthCheckNodePort",
        'expected a number or nothing, got "30000"',
      ],
      [
        "a loadBalancerIP that is a number",
        { loadBalancerIP: 3232235777 },
        "spec.loadBalancerIP",
        "expected a string or nothing, got 3232235777",
      ],
      [
        "source ranges that are a string",
        { loadBalancerSourceRanges: "10.0.0.0/8" },
        "spec.loadBalancerSourceRanges",
        'expected an array, got "10.0.0.0/8"',
      ],
      [
        "a source range that is null",
        { loadBalancerSourceRanges: ["10.0.0.0/8", null] },
        "spec.loadBalancerSourceRanges[1]",
        "expected a string, got null",
      ],
      [
        "a sessionAffinity that is an array",
        { sessionAffinity: [] },
        "spec.sessionAffinity",
        "expected a string or nothing, got an array",
      ],
      ["a name that is a number", { name: 12 }, "metadata.name", "expected a string, got 12"],
    ];
    const good = lbService("default", "good", GOOD_UID, { ports: [{ protocol: "TCP", port: 443 }] });
    const alone = desiredState({ nodes: [NODE_A, NODE_B], services: [good] }, CONFIG);
    for (const [name, over, field, message] of cases) {
      it(`${name} → ${field}: ${message}`, () => {
        const bad = malformed(over);
        const key = over.name === 12 ? "default/12" : "default/x";
        const expected: Rejection = { service: key, field, message: `Service ${key}: ${field}: ${message}` };
        let state: ReturnType<typeof desiredState> | undefined;
        assert.doesNotThrow(() => {
          state = desiredState({ nodes: [NODE_A, NODE_B], services: [bad, good] }, CONFIG);
        });
        assert.deepStrictEqual(state, { ...alone, rejected: [expected] });
        assert.deepStrictEqual(serviceDesired(bad, CONFIG, { zones: ["us-central1-a"], instances: [] }), {
          ok: false,
          rejections: [expected],
        });
      });
    }

    it("only the first problem is reported: one rejection per malformed Service", () => {
      const bad = malformed({ uid: 7, ports: [null], annotations: { a: 1 } });
      assert.deepStrictEqual(desiredState({ nodes: [NODE_A], services: [bad] }, CONFIG).rejected, [
        {
          service: "default/x",
          field: "metadata.uid",
          message: "Service default/x: metadata.uid: expected a string, got 7",
        },
      ]);
    });

    it("a Service that is not ours (ClusterIP, another class, being deleted) is not read, however malformed", () => {
      const notOurs = [
        malformed({ name: "a", type: "ClusterIP", ports: [null], annotations: { a: 1 } }),
        malformed({ name: "b", loadBalancerClass: "example.com/other", ports: "x" }),
        malformed({ name: "c", deleting: true, annotations: [] }),
      ];
      assert.deepStrictEqual(
        desiredState({ nodes: [NODE_A], services: notOurs }, CONFIG),
        desiredState({ nodes: [NODE_A], services: [] }, CONFIG),
      );
    });
  });

  describe("a malformed Node is left out with one warning naming it and the field; everything else is unchanged", () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ["labels that are a list", { labels: [ZONE] }, "metadata.labels: expected an object, got an array"],
      [
        "a label value that is a number",
        { labels: { [ZONE]: "us-central1-b", "node.kubernetes.io/exclude-from-external-load-balancers": 1 } },
        "metadata.labels[node.kubernetes.io/exclude-from-external-load-balancers]: expected a string, got 1",
      ],
      [
        "a providerID that is an object",
        { providerID: { gce: "x" } },
        "spec.providerID: expected a string or nothing, got an object",
      ],
      ["a null taint", { taints: [null] }, "spec.taints[0]: expected an object, got null"],
      ["taints that are a string", { taints: "NoSchedule" }, 'spec.taints: expected an array, got "NoSchedule"'],
      [
        "a taint key that is a number",
        { taints: [{ key: 1, effect: "NoSchedule" }] },
        "spec.taints[0].key: expected a string, got 1",
      ],
      ["a podCIDR that is a number", { podCIDRs: [10] }, "spec.podCIDRs[0]: expected a string, got 10"],
      [
        "podCIDRs that are a string",
        { podCIDRs: "10.64.2.0/24" },
        'spec.podCIDRs: expected an array, got "10.64.2.0/24"',
      ],
      ["a uid that is null", { uid: null }, "metadata.uid: expected a string, got null"],
      ["deleting that is a number", { deleting: 0 }, "metadata.deletionTimestamp: expected a boolean, got 0"],
    ];
    const service = lbService("default", "web", GOOD_UID);
    const withoutB = desiredState({ nodes: [NODE_A], services: [service] }, CONFIG);
    for (const [name, over, problem] of cases) {
      it(`${name} → node n-b: ${problem}`, () => {
        const bad = { ...NODE_B, ...over };
        const state = desiredState({ nodes: [bad, NODE_A], services: [service] }, CONFIG);
        assert.deepStrictEqual(state, { ...withoutB, warnings: [`node n-b: ${problem}; the Node is left out`] });
      });
    }
  });

  describe("trim: any JSON in a Node or Service is kept as written, never thrown on", () => {
    it("a null port and a numeric annotation reach the model as written", () => {
      const service = {
        metadata: { name: "x", namespace: "default", uid: BAD_UID, annotations: { a: 5 } },
        spec: { type: "LoadBalancer", ports: [{ port: 80 }, null] },
      };
      assert.deepStrictEqual(trimService(service as unknown as ServiceLike), {
        namespace: "default",
        name: "x",
        uid: BAD_UID,
        type: "LoadBalancer",
        annotations: { a: 5 },
        ports: [{ protocol: "TCP", port: 80 }, null],
        loadBalancerSourceRanges: [],
        deleting: false,
      });
    });
    it("containers of the wrong kind are kept as written (not spread into characters or indexes)", () => {
      const service = {
        metadata: { name: "x", annotations: "a=b" },
        spec: { type: "LoadBalancer", ports: "80", loadBalancerSourceRanges: 7 },
      };
      const trimmed = trimService(service as unknown as ServiceLike) as unknown as Record<string, unknown>;
      assert.deepStrictEqual([trimmed.annotations, trimmed.ports, trimmed.loadBalancerSourceRanges], ["a=b", "80", 7]);
    });
    it("null optional fields are absent, as the apiserver reads them", () => {
      const service = {
        metadata: { name: "x", annotations: null },
        spec: {
          type: "LoadBalancer",
          ports: [{ name: null, port: 80, nodePort: null }],
          healthCheckNodePort: null,
          loadBalancerSourceRanges: null,
        },
      };
      assert.deepStrictEqual(trimService(service as unknown as ServiceLike), {
        namespace: "default",
        name: "x",
        uid: "",
        type: "LoadBalancer",
        annotations: {},
        ports: [{ protocol: "TCP", port: 80 }],
        loadBalancerSourceRanges: [],
        deleting: false,
      });
    });
    it("a Node with a null taint, list labels and string podCIDRs is kept as written", () => {
      const node = {
        metadata: { name: "n", uid: "u", labels: ["a"] },
        spec: { taints: [null, { key: "k", effect: "NoSchedule" }], podCIDRs: "10.0.0.0/24" },
      };
      assert.deepStrictEqual(trimNode(node as unknown as NodeLike), {
        name: "n",
        uid: "u",
        labels: ["a"],
        taints: [null, { key: "k", effect: "NoSchedule" }],
        deleting: false,
        podCIDRs: "10.0.0.0/24",
      });
    });
    describe("IP families: kept only when they say something other than IPv4 SingleStack", () => {
      const cases: [string, Record<string, unknown>, Record<string, unknown>][] = [
        [
          "IPv4 SingleStack (every Service of an IPv4 cluster): left out",
          { ipFamilies: ["IPv4"], ipFamilyPolicy: "SingleStack" },
          {},
        ],
        ["absent: left out", {}, {}],
        [
          "RequireDualStack",
          { ipFamilies: ["IPv4", "IPv6"], ipFamilyPolicy: "RequireDualStack" },
          { ipFamilies: ["IPv4", "IPv6"], ipFamilyPolicy: "RequireDualStack" },
        ],
        [
          "PreferDualStack on an IPv4 cluster: both kept",
          { ipFamilies: ["IPv4"], ipFamilyPolicy: "PreferDualStack" },
          { ipFamilies: ["IPv4"], ipFamilyPolicy: "PreferDualStack" },
        ],
        [
          "IPv6 SingleStack",
          { ipFamilies: ["IPv6"], ipFamilyPolicy: "SingleStack" },
          { ipFamilies: ["IPv6"], ipFamilyPolicy: "SingleStack" },
        ],
        ["a malformed family list is kept as written", { ipFamilies: "IPv6" }, { ipFamilies: "IPv6" }],
      ];
      for (const [title, spec, want] of cases) {
        it(title, () => {
          const trimmed = trimService({
            metadata: { name: "x" },
            spec: { type: "LoadBalancer", ...spec },
          }) as unknown as Record<string, unknown>;
          assert.deepStrictEqual(
            { ipFamilies: trimmed.ipFamilies, ipFamilyPolicy: trimmed.ipFamilyPolicy },
            { ipFamilies: undefined, ipFamilyPolicy: undefined, ...want },
          );
          assert.equal("ipFamilies" in trimmed, "ipFamilies" in want);
        });
      }
    });
    it("metadata and spec that are not objects read as empty", () => {
      assert.deepStrictEqual(trimService({ metadata: 5, spec: [] } as unknown as ServiceLike), {
        namespace: "default",
        name: "",
        uid: "",
        type: "ClusterIP",
        annotations: {},
        ports: [],
        loadBalancerSourceRanges: [],
        deleting: false,
      });
    });
  });
});
