// The GCE emulator's state (state.ts): what GCE computes for each kind, seeding, and its rules on writes.

import * as assert from "node:assert/strict";

import { type GceEmulator, type GceKind, startGceEmulator } from "../index";
import type { Json } from "../json";
import {
  PROJECT,
  REGION,
  NOW,
  ADDRESS,
  FORWARDING_RULE,
  BACKEND_SERVICE,
  HTTP_HEALTH_CHECK,
  TARGET_POOL,
  INSTANCE_GROUP,
  FIREWALL,
  ROUTE,
  EMPTY_LABELS_FINGERPRINT,
  NAME_REASON,
  regional,
  gceError,
  createLoadBalancer,
} from "./emulatorFixtures";

describe("GCE emulator", function () {
  let gce: GceEmulator;
  let link: (rel: string) => string;

  beforeEach(async function () {
    gce = await startGceEmulator({ now: () => new Date(NOW) });
    link = (rel) => `${gce.endpoint}/compute/v1/projects/${PROJECT}/${rel}`;
  });

  afterEach(async function () {
    await gce.stop();
  });

  describe("state", function () {
    it("computes GCE's outputs for an address", function () {
      const r = gce.state.create(ADDRESS, { ...regional, name: "lb-1", description: "d" });
      assert.deepEqual(r, {
        kind: "addresses",
        project: PROJECT,
        scope: REGION,
        name: "lb-1",
        properties: {
          name: "lb-1",
          project: PROJECT,
          region: REGION,
          description: "d",
          address: "203.0.113.1",
          addressType: "EXTERNAL",
          networkTier: "PREMIUM",
          labelFingerprint: EMPTY_LABELS_FINGERPRINT,
          id: "1000000000000000001",
          creationTimestamp: NOW,
          selfLink: link(`regions/${REGION}/addresses/lb-1`),
          fingerprint: "b0Ybe5X2WUU=",
        },
      });
    });

    it("accepts only names matching ^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$, naming the field", function () {
      for (const good of ["a", "a1", "k8s-fw-a1b2", `a${"b".repeat(62)}`]) {
        assert.equal(
          gce.state.create(FIREWALL, {
            project: PROJECT,
            name: good,
            network: "default",
            allows: [{ protocol: "tcp" }],
            sourceRanges: ["0.0.0.0/0"],
          }).name,
          good,
        );
      }
      for (const bad of ["", "1a", "A", "a_b", "a-", `a${"b".repeat(63)}`, "-a"]) {
        const e = gceError(() => gce.state.create(ADDRESS, { ...regional, name: bad }));
        assert.equal(e.status, 400);
        assert.equal(e.reason, "invalid");
        assert.equal(e.message, NAME_REASON(bad));
      }
    });

    it("refuses to create an existing name: 409 alreadyExists", function () {
      gce.state.create(ADDRESS, { ...regional, name: "lb-1" });
      const e = gceError(() => gce.state.create(ADDRESS, { ...regional, name: "lb-1" }));
      assert.deepEqual(
        [e.status, e.reason, e.message],
        [409, "alreadyExists", `The resource 'projects/${PROJECT}/regions/${REGION}/addresses/lb-1' already exists`],
      );
      // Same name, other region: a different resource.
      assert.equal(
        gce.state.create(ADDRESS, { ...regional, region: "europe-west1", name: "lb-1" }).scope,
        "europe-west1",
      );
    });

    it("normalizes references and resolves a forwarding rule's address to its IP", function () {
      createLoadBalancer(gce, "lb-1");
      const fr = gce.state.get({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "lb-1" });
      assert.equal(fr.properties.ipAddress, "10.128.0.2");
      assert.equal(fr.properties.backendService, link(`regions/${REGION}/backendServices/lb-1`));
      const bs = gce.state.get({ kind: "backendServices", project: PROJECT, scope: REGION, name: "lb-1" });
      assert.equal(bs.properties.healthChecks, link(`regions/${REGION}/healthChecks/lb-1`));
      gce.putInstance("node-1", { zone: "us-central1-b" });
      const route = gce.state.create(ROUTE, {
        project: PROJECT,
        name: "c1-node-1",
        network: "default",
        destRange: "10.4.1.0/24",
        nextHopInstance: "node-1",
        nextHopInstanceZone: "us-central1-b",
      });
      assert.equal(route.properties.nextHopInstance, link("zones/us-central1-b/instances/node-1"));
      assert.equal(route.properties.network, link("global/networks/default"));
    });

    it("enforces the forwarding-rule port rules: per product, and no overlap on one IP and protocol", function () {
      gce.state.create(ADDRESS, { ...regional, name: "lb-1" });
      gce.state.create(TARGET_POOL, { ...regional, name: "tp" });
      const tcp = gce.state.create(FORWARDING_RULE, {
        ...regional,
        name: "lb-1",
        ipAddress: "lb-1",
        portRange: "80-80",
        target: "tp",
      });
      const udp = gce.state.create(FORWARDING_RULE, {
        ...regional,
        name: "lb-1-udp",
        ipAddress: "lb-1",
        ipProtocol: "UDP",
        portRange: "80-80",
        target: "tp",
      });
      assert.deepEqual([tcp.properties.ipAddress, udp.properties.ipAddress], ["203.0.113.1", "203.0.113.1"]);
      const clash = gceError(() =>
        gce.state.create(FORWARDING_RULE, {
          ...regional,
          name: "lb-1-tcp",
          ipAddress: "203.0.113.1",
          portRange: "79-81",
          target: "tp",
        }),
      );
      assert.deepEqual(
        [clash.status, clash.message],
        [
          400,
          `Invalid value for field 'resource.IPAddress': '203.0.113.1'. Specified IP address is in-use and would result in a conflict: forwarding rule 'projects/${PROJECT}/regions/${REGION}/forwardingRules/lb-1' already uses TCP on overlapping ports.`,
        ],
      );
      assert.equal(
        gce.state.create(FORWARDING_RULE, {
          ...regional,
          name: "lb-1-443",
          ipAddress: "lb-1",
          portRange: "443",
          target: "tp",
        }).name,
        "lb-1-443",
      );
      const ports = gceError(() =>
        gce.state.create(FORWARDING_RULE, { ...regional, name: "p", ports: ["80"], target: "tp" }),
      );
      assert.equal(
        ports.message,
        "Invalid value for field 'resource.ports': ports can only be set on forwarding rules with a backend service (internal or backend service-based external passthrough); a target-pool rule takes portRange",
      );
      const range = gceError(() =>
        gce.state.create(FORWARDING_RULE, { ...regional, name: "r", loadBalancingScheme: "INTERNAL", portRange: "80" }),
      );
      assert.equal(
        range.message,
        "Invalid value for field 'resource.portRange': portRange cannot be set on an INTERNAL forwarding rule; use ports or allPorts",
      );
    });

    it("refuses references to resources that do not exist: 404", function () {
      const e = gceError(() =>
        gce.state.create(BACKEND_SERVICE, {
          ...regional,
          name: "bs",
          protocol: "TCP",
          healthChecks: `regions/${REGION}/healthChecks/missing`,
        }),
      );
      assert.deepEqual(
        [e.status, e.reason, e.message],
        [404, "notFound", `The resource 'projects/${PROJECT}/regions/${REGION}/healthChecks/missing' was not found`],
      );
    });

    it("refuses to delete a resource in use, naming the user: 400 resourceInUseByAnotherResource", function () {
      createLoadBalancer(gce, "lb-1");
      gce.putInstance("node-1", { zone: "us-central1-a" });
      gce.state.create(INSTANCE_GROUP, {
        project: PROJECT,
        zone: "us-central1-a",
        name: "k8s-ig--c1",
        instances: ["us-central1-a/node-1"],
      });
      gce.state.create(BACKEND_SERVICE, {
        ...regional,
        name: "lb-2",
        protocol: "TCP",
        healthChecks: `regions/${REGION}/healthChecks/lb-1`,
        backends: [{ group: "zones/us-central1-a/instanceGroups/k8s-ig--c1", balancingMode: "CONNECTION" }],
      });
      gce.state.create(HTTP_HEALTH_CHECK, { project: PROJECT, name: "k8s-c1-node" });
      gce.state.create(TARGET_POOL, {
        ...regional,
        name: "tp",
        healthChecks: "k8s-c1-node",
        instances: ["us-central1-a/node-1"],
      });
      gce.state.create(FORWARDING_RULE, { ...regional, name: "tp", target: "tp" });

      const p = `projects/${PROJECT}/regions/${REGION}`;
      const cases: ReadonlyArray<readonly [GceKind, string, string]> = [
        [
          "backendServices",
          REGION,
          `The backend_service resource '${p}/backendServices/lb-1' is already being used by '${p}/forwardingRules/lb-1'`,
        ],
        [
          "healthChecks",
          REGION,
          `The health_check resource '${p}/healthChecks/lb-1' is already being used by '${p}/backendServices/lb-1'`,
        ],
        [
          "instanceGroups",
          "us-central1-a",
          `The instance_group resource 'projects/${PROJECT}/zones/us-central1-a/instanceGroups/k8s-ig--c1' is already being used by '${p}/backendServices/lb-2'`,
        ],
        [
          "httpHealthChecks",
          "global",
          `The http_health_check resource 'projects/${PROJECT}/global/httpHealthChecks/k8s-c1-node' is already being used by '${p}/targetPools/tp'`,
        ],
        [
          "targetPools",
          REGION,
          `The target_pool resource '${p}/targetPools/tp' is already being used by '${p}/forwardingRules/tp'`,
        ],
      ];
      for (const [kind, scope, message] of cases) {
        const name =
          kind === "instanceGroups"
            ? "k8s-ig--c1"
            : kind === "httpHealthChecks"
              ? "k8s-c1-node"
              : kind === "targetPools"
                ? "tp"
                : "lb-1";
        const key = { kind, project: PROJECT, scope, name };
        const e = gceError(() => gce.state.delete(key));
        assert.deepEqual([e.status, e.reason, e.message], [400, "resourceInUseByAnotherResource", message]);
      }

      // In dependency order, everything goes.
      for (const [kind, scope, name] of [
        ["forwardingRules", REGION, "lb-1"],
        ["forwardingRules", REGION, "tp"],
        ["targetPools", REGION, "tp"],
        ["httpHealthChecks", "global", "k8s-c1-node"],
        ["backendServices", REGION, "lb-1"],
        ["backendServices", REGION, "lb-2"],
        ["healthChecks", REGION, "lb-1"],
        ["instanceGroups", "us-central1-a", "k8s-ig--c1"],
        ["addresses", REGION, "lb-1"],
      ] as const) {
        gce.state.delete({ kind, project: PROJECT, scope, name });
      }
      assert.deepEqual(
        gce.listResources().map((r) => `${r.kind}/${r.name}`),
        ["instances/node-1"],
      );
    });

    it("deletes out of band whatever uses it", function () {
      createLoadBalancer(gce, "lb-1");
      gce.deleteOutOfBand("addresses", "lb-1");
      gce.deleteOutOfBand(BACKEND_SERVICE, "lb-1");
      assert.deepEqual(
        gce.listResources().map((r) => `${r.kind}/${r.name}`),
        ["forwardingRules/lb-1", "healthChecks/lb-1"],
      );
    });

    it("allocates EXTERNAL addresses from 203.0.113.0/24 then 198.51.100.0/24, INTERNAL from 10.128.0.0/20, counting up", function () {
      const ips: Json[] = [];
      for (let i = 0; i < 255; i++) {
        ips.push(gce.state.create(ADDRESS, { ...regional, name: `x-${i}` }).properties.address ?? null);
      }
      assert.equal(ips[0], "203.0.113.1");
      assert.equal(ips[253], "203.0.113.254");
      assert.equal(ips[254], "198.51.100.1");
      assert.equal(
        gce.state.create(ADDRESS, { ...regional, name: "i-0", addressType: "INTERNAL" }).properties.address,
        "10.128.0.2",
      );
      assert.equal(
        gce.state.create(ADDRESS, { ...regional, name: "i-1", addressType: "INTERNAL" }).properties.address,
        "10.128.0.3",
      );
      // A released IP is not handed out again right away: the pool counts up.
      gce.state.delete({ kind: "addresses", project: PROJECT, scope: REGION, name: "i-0" });
      assert.equal(
        gce.state.create(ADDRESS, { ...regional, name: "i-2", addressType: "INTERNAL" }).properties.address,
        "10.128.0.4",
      );
      // A given address is kept; ephemeral forwarding-rule IPs come from the same pools.
      assert.equal(
        gce.state.create(ADDRESS, { ...regional, name: "s", address: "10.0.0.7" }).properties.address,
        "10.0.0.7",
      );
      assert.equal(gce.state.create(FORWARDING_RULE, { ...regional, name: "e" }).properties.ipAddress, "198.51.100.2");
      assert.equal(
        gce.state.create(FORWARDING_RULE, { ...regional, name: "i", loadBalancingScheme: "INTERNAL", allPorts: true })
          .properties.ipAddress,
        "10.128.0.5",
      );
      // An internal rule may name an unreserved IP of its subnetwork (ephemeral with a chosen IP).
      assert.equal(
        gce.state.create(FORWARDING_RULE, {
          ...regional,
          name: "l",
          loadBalancingScheme: "INTERNAL",
          allPorts: true,
          ipAddress: "10.128.0.99",
        }).properties.ipAddress,
        "10.128.0.99",
      );
    });

    it("refuses to update an immutable field: 400", function () {
      createLoadBalancer(gce, "lb-1");
      const key = { kind: "forwardingRules" as const, project: PROJECT, scope: REGION, name: "lb-1" };
      const inputs = {
        ...regional,
        name: "lb-1",
        backendService: "lb-1",
        ipAddress: "lb-1",
        loadBalancingScheme: "INTERNAL",
      };
      const e = gceError(() => gce.state.update(key, { ...inputs, ports: ["8080"] }));
      assert.deepEqual(
        [e.status, e.message],
        [
          400,
          `Invalid value for field 'resource.ports': ["8080"]. Field 'ports' of 'projects/${PROJECT}/regions/${REGION}/forwardingRules/lb-1' cannot be changed.`,
        ],
      );
      const updated = gce.state.update(key, { ...inputs, ports: ["80"], labels: { team: "a" } });
      assert.deepEqual(updated.properties.labels, { team: "a" });
      assert.equal(updated.properties.id, "1000000000000000004");
    });
  });
});
