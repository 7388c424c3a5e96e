// GKE's Service annotations with ingress-gce's meaning and precedence (docs/guides/services.md),
// through desiredState: the subnetwork keys and cloud.google.com/l4-rbs, each error exact.
import * as assert from "node:assert/strict";
import * as fc from "fast-check";

import { desiredState } from "../../../model/desired";
import { readAddressNames } from "../../../model/gkeAnnotations";
import type { Config, DesiredState, Rejection, ServiceDesired, ServiceInfo } from "../../../model/types";
import { CONFIG, gceNode, lbService } from "../../support/builders";

const LB_TYPE = "networking.gke.io/load-balancer-type";
const LB_SUBNET = "networking.gke.io/load-balancer-subnet";
const ILB_SUBNET = "networking.gke.io/internal-load-balancer-subnet";
const IPV6_SUBNET = "dccm.io/ipv6-subnet";
const RBS = "cloud.google.com/l4-rbs";
const BACKEND = "dccm.io/backend";

const UID = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
const KEY = "default/svc";
const NODES = [gceNode("n-a", "00000000-0000-4000-8000-000000000001", "us-central1-a", [])];
const DUAL: Partial<ServiceInfo> = { ipFamilies: ["IPv4", "IPv6"], ipFamilyPolicy: "RequireDualStack" };

function run(
  annotations: Record<string, string>,
  over: Partial<ServiceInfo> = {},
  config: Partial<Config> = {},
): DesiredState {
  return desiredState(
    { nodes: NODES, services: [lbService("default", "svc", UID, { annotations, ...over })] },
    { ...CONFIG, ...config },
  );
}

function accepted(state: DesiredState): ServiceDesired {
  assert.deepStrictEqual(state.rejected, []);
  assert.equal(state.services.length, 1);
  return state.services[0];
}

function rejections(state: DesiredState): [string, string][] {
  assert.deepStrictEqual(state.services, []);
  return state.rejected.map((r: Rejection) => {
    const prefix = `Service ${KEY}: ${r.field}: `;
    assert.equal(r.service, KEY);
    assert.ok(r.message.startsWith(prefix), r.message);
    return [r.field, r.message.slice(prefix.length)];
  });
}

describe("model: GKE annotations", () => {
  describe("subnetwork: networking.gke.io/load-balancer-subnet", () => {
    // [title, annotations, service fields, internal subnetwork, IPv6 subnetwork]
    const cases: [string, Record<string, string>, Partial<ServiceInfo>, string | undefined, string | undefined][] = [
      ["internal, none: config subnetwork", { [LB_TYPE]: "Internal" }, {}, "k8s-subnet", undefined],
      ["internal, GKE's key", { [LB_TYPE]: "Internal", [LB_SUBNET]: "gke-sub" }, {}, "gke-sub", undefined],
      ["internal, the stock key", { [LB_TYPE]: "Internal", [ILB_SUBNET]: "old-sub" }, {}, "old-sub", undefined],
      [
        "internal, both: GKE's key wins (GetInternalLoadBalancerAnnotationSubnet)",
        { [LB_TYPE]: "Internal", [LB_SUBNET]: "gke-sub", [ILB_SUBNET]: "old-sub" },
        {},
        "gke-sub",
        undefined,
      ],
      [
        "internal dual-stack: both families in GKE's subnetwork",
        { [LB_TYPE]: "Internal", [LB_SUBNET]: "gke-sub" },
        DUAL,
        "gke-sub",
        "gke-sub",
      ],
      ["external dual-stack, none: config subnetwork", {}, DUAL, undefined, "k8s-subnet"],
      ["external dual-stack, GKE's key", { [LB_SUBNET]: "v6-sub" }, DUAL, undefined, "v6-sub"],
      ["external dual-stack, the alias", { [IPV6_SUBNET]: "v6-sub" }, DUAL, undefined, "v6-sub"],
      [
        "external dual-stack, both the same",
        { [LB_SUBNET]: "v6-sub", [IPV6_SUBNET]: "v6-sub" },
        DUAL,
        undefined,
        "v6-sub",
      ],
      [
        "external, the stock internal key: not read (GKE reads it for internal Services only)",
        { [ILB_SUBNET]: "old-sub" },
        DUAL,
        undefined,
        "k8s-subnet",
      ],
      ["external IPv4: GKE's key read, nothing uses it", { [LB_SUBNET]: "v6-sub" }, {}, undefined, undefined],
    ];
    for (const [title, annotations, over, subnetwork, ipv6Subnet] of cases)
      it(title, () => {
        const desired = accepted(run(annotations, over));
        assert.equal(desired.subnetwork, subnetwork);
        assert.equal(desired.ipv6?.subnetwork, ipv6Subnet);
      });

    const refusals: [string, Record<string, string>, Partial<ServiceInfo>, [string, string][]][] = [
      [
        "internal, GKE's key not a name",
        { [LB_TYPE]: "Internal", [LB_SUBNET]: "Bad_Sub" },
        {},
        [[`metadata.annotations[${LB_SUBNET}]`, '"Bad_Sub" is not a valid subnetwork name']],
      ],
      [
        "internal, the stock key not a name",
        { [LB_TYPE]: "Internal", [ILB_SUBNET]: "Bad_Sub" },
        {},
        [[`metadata.annotations[${ILB_SUBNET}]`, '"Bad_Sub" is not a valid subnetwork name']],
      ],
      [
        "external, GKE's key not a name",
        { [LB_SUBNET]: "Bad_Sub" },
        DUAL,
        [[`metadata.annotations[${LB_SUBNET}]`, '"Bad_Sub" is not a valid subnetwork name']],
      ],
      [
        "external, GKE's key and the alias disagree",
        { [LB_SUBNET]: "a-sub", [IPV6_SUBNET]: "b-sub" },
        DUAL,
        [
          [
            `metadata.annotations[${IPV6_SUBNET}]`,
            `"b-sub" differs from metadata.annotations[${LB_SUBNET}] "a-sub"; set one (${IPV6_SUBNET} is its alias)`,
          ],
        ],
      ],
      [
        "internal, the alias",
        { [LB_TYPE]: "Internal", [IPV6_SUBNET]: "v6-sub" },
        {},
        [
          [
            `metadata.annotations[${IPV6_SUBNET}]`,
            `internal load balancers take their subnetwork from metadata.annotations[${LB_SUBNET}] or metadata.annotations[${ILB_SUBNET}]`,
          ],
        ],
      ],
    ];
    for (const [title, annotations, over, want] of refusals)
      it(`refused: ${title}`, () => assert.deepStrictEqual(rejections(run(annotations, over)), want));

    it("property: on an internal Service GKE's key wins over the stock one, whatever both say", () => {
      const name = fc.stringMatching(/^[a-z][-a-z0-9]{0,20}[a-z0-9]$/);
      fc.assert(
        fc.property(name, name, (gke, stock) => {
          const desired = accepted(run({ [LB_TYPE]: "Internal", [LB_SUBNET]: gke, [ILB_SUBNET]: stock }));
          assert.equal(desired.subnetwork, gke);
        }),
      );
    });
  });

  describe("cloud.google.com/l4-rbs", () => {
    const cases: [string, Record<string, string>, Partial<Config>, ServiceDesired["backend"]][] = [
      [
        "enabled, config target-pool: a backend service",
        { [RBS]: "enabled" },
        { backendMode: "target-pool" },
        "backend-service",
      ],
      ["enabled, config backend-service", { [RBS]: "enabled" }, {}, "backend-service"],
      [
        "enabled with dccm.io/backend backend-service",
        { [RBS]: "enabled", [BACKEND]: "backend-service" },
        { backendMode: "target-pool" },
        "backend-service",
      ],
      ["absent, config target-pool: a target pool", {}, { backendMode: "target-pool" }, "target-pool"],
      ["internal, enabled: a backend service", { [LB_TYPE]: "Internal", [RBS]: "enabled" }, {}, "backend-service"],
    ];
    for (const [title, annotations, config, backend] of cases)
      it(title, () => assert.equal(accepted(run(annotations, {}, config)).backend, backend));

    it("refused: enabled with dccm.io/backend target-pool, naming both", () =>
      assert.deepStrictEqual(rejections(run({ [RBS]: "enabled", [BACKEND]: "target-pool" })), [
        [
          `metadata.annotations[${RBS}]`,
          `enabled asks for a backend service, but metadata.annotations[${BACKEND}] asks for target-pool; remove one`,
        ],
      ]));

    it("refused: a value other than enabled", () =>
      assert.deepStrictEqual(rejections(run({ [RBS]: "Enabled" })), [
        [`metadata.annotations[${RBS}]`, '"Enabled" is not enabled'],
      ]));
  });
});

describe("readAddressNames (networking.gke.io/load-balancer-ip-addresses)", () => {
  const KEY_FIELD = "metadata.annotations[networking.gke.io/load-balancer-ip-addresses]";
  function read(value: string | undefined): { names: string[]; problems: [string, string][] } {
    const problems: [string, string][] = [];
    const names = readAddressNames(
      (key) => (key === "networking.gke.io/load-balancer-ip-addresses" ? value : undefined),
      { add: (where, message) => problems.push([where, message]) },
    );
    return { names, problems };
  }
  const cases: [string | undefined, string[], [string, string][]][] = [
    [undefined, [], []],
    ["web-v4", ["web-v4"], []],
    [" web-v4 , web-v6 ", ["web-v4", "web-v6"], []],
    ["web-v4,,", ["web-v4"], []],
    ["", [], [[KEY_FIELD, "names no address"]]],
    [" , ", [], [[KEY_FIELD, "names no address"]]],
    [
      "Web",
      [],
      [
        [
          KEY_FIELD,
          `"Web" is not an address name (1-63 characters: a lowercase letter, then lowercase letters, digits or hyphens, not ending with a hyphen)`,
        ],
      ],
    ],
    [
      "a-",
      [],
      [
        [
          KEY_FIELD,
          `"a-" is not an address name (1-63 characters: a lowercase letter, then lowercase letters, digits or hyphens, not ending with a hyphen)`,
        ],
      ],
    ],
    ["a,a", [], [[KEY_FIELD, `"a" is named twice`]]],
    ["a,b,c", [], [[KEY_FIELD, "3 addresses named; at most two (one IPv4, one IPv6)"]]],
  ];
  for (const [value, names, problems] of cases)
    it(value === undefined ? "absent" : JSON.stringify(value), () => {
      assert.deepStrictEqual(read(value), { names, problems });
    });
  it("takes every valid name of 63 characters and refuses 64", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z][-a-z0-9]{0,61}[a-z0-9]$/), (name) => {
        assert.deepStrictEqual(read(name), { names: [name], problems: [] });
      }),
    );
    assert.equal(read(`a${"b".repeat(63)}`).problems.length, 1);
  });
});
