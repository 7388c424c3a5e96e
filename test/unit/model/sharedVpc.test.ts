// Tier 1: config `networkProject` in the desired state: which stack slices carry the host project,
// and that without it every slice (and so every stack's hash) is what it was.
import * as assert from "node:assert/strict";

import * as fc from "fast-check";

import { hashOf } from "../../../model/desiredCache";
import { desiredState } from "../../../model/desired";
import type { ClusterSnapshot, Config } from "../../../model/types";
import { CONFIG, gceNode, lbService } from "../../support/builders";

const SNAPSHOT: ClusterSnapshot = {
  nodes: [
    gceNode("node-a1", "11111111-1111-4111-8111-111111111111", "us-central1-a", ["10.64.1.0/24"]),
    gceNode("node-b1", "33333333-3333-4333-8333-333333333333", "us-central1-b", ["10.64.3.0/24"]),
  ],
  services: [
    lbService("default", "web", "1b4e28ba-2fa1-41d2-883f-0016d3cca427"),
    lbService("db", "internal", "2b4e28ba-2fa1-41d2-883f-0016d3cca427", {
      annotations: { "networking.gke.io/load-balancer-type": "Internal" },
      ports: [
        { protocol: "TCP", port: 5432 },
        { protocol: "UDP", port: 5432 },
      ],
    }),
    lbService("default", "local", "3b4e28ba-2fa1-41d2-883f-0016d3cca427", {
      externalTrafficPolicy: "Local",
      healthCheckNodePort: 30123,
    }),
  ],
};

/** [what, config over CONFIG, the cluster's networkProject, each Service's networkProject]. */
const CASES: [string, Partial<Config>, string | undefined, (string | undefined)[]][] = [
  ["absent: no slice names a host project", {}, undefined, [undefined, undefined, undefined]],
  [
    "a host project: the cluster and every Service carry it",
    { networkProject: "vpc-host" },
    "vpc-host",
    ["vpc-host", "vpc-host", "vpc-host"],
  ],
];

describe("model: networkProject in the desired state", () => {
  for (const [what, over, cluster, services] of CASES) {
    it(what, () => {
      const desired = desiredState(SNAPSHOT, { ...CONFIG, ...over });
      assert.deepStrictEqual(desired.rejected, []);
      assert.equal(desired.cluster.networkProject, cluster);
      assert.equal("networkProject" in desired.cluster, cluster !== undefined);
      assert.deepStrictEqual(
        desired.services.map((service) => [service.key, service.networkProject]),
        [
          ["db/internal", services[0]],
          ["default/local", services[1]],
          ["default/web", services[2]],
        ],
      );
    });
  }

  it("a host project changes each slice only by that field: the same resources, firewalls and routes by the same names", () => {
    const plain = desiredState(SNAPSHOT, CONFIG);
    const shared = desiredState(SNAPSHOT, { ...CONFIG, networkProject: "vpc-host" });
    const { networkProject: _cluster, ...cluster } = shared.cluster;
    assert.deepStrictEqual(cluster, plain.cluster);
    assert.deepStrictEqual(
      shared.services.map(({ networkProject: _service, ...rest }) => rest),
      plain.services,
    );
  });

  it("property: any host project changes every stack's hash; none keeps every hash", () => {
    const plain = desiredState(SNAPSHOT, CONFIG);
    const hashes = (state: typeof plain): string[] => [hashOf(state.cluster), ...state.services.map(hashOf)];
    assert.deepStrictEqual(hashes(desiredState(SNAPSHOT, { ...CONFIG })), hashes(plain));
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z][-a-z0-9]{4,28}[a-z0-9]$/), (host) => {
        fc.pre(host !== CONFIG.project);
        const shared = hashes(desiredState(SNAPSHOT, { ...CONFIG, networkProject: host }));
        return shared.every((hash, index) => hash !== hashes(plain)[index]);
      }),
    );
  });
});
