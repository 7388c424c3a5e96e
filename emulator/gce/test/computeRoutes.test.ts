// The GCE emulator's rules (`npm run test:emulator`), one row each: what real GCE (and the
// provider @pulumi/gcp bridges) accepts, refuses with which message, replaces or updates in place.
// The source of each rule is cited next to it in emulator/gce/ (kinds.ts, validation.ts, rules/,
// networks.ts, instances.ts); a change that loosens a rule fails its row here.
// This file: the stock CCM's Compute mutations over HTTP (computeRoutes.ts).
import * as assert from "node:assert/strict";

import { startGceEmulator, type GceEmulator } from "../index";
import { ProviderApi } from "../provider-api";
import type { JsonObject } from "../json";
import { PROJECT, REGION, NETWORKS, isObject } from "./rulesFixtures";

describe("GCE emulator rules: the stock CCM's Compute mutations over HTTP (one row per rule)", function () {
  let gce: GceEmulator;
  const P = `projects/${PROJECT}/regions/${REGION}`;
  const G = `projects/${PROJECT}/global`;
  const Z = `projects/${PROJECT}/zones/${REGION}-a`;
  const call = async (
    method: string,
    rel: string,
    body?: JsonObject,
  ): Promise<{ status: number; body: JsonObject }> => {
    const res = await fetch(`${gce.computeEndpoint}${rel}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
    });
    return { status: res.status, body: (await res.json()) as JsonObject };
  };
  const stored = (kind: string, name: string): JsonObject | undefined =>
    gce.listResources().find((r) => r.kind === kind && r.name === name)?.properties;
  const link = (rel: string): string => `${gce.endpoint}/compute/v1/${rel}`;

  beforeEach(async () => {
    gce = await startGceEmulator({ networks: NETWORKS });
    gce.putInstance("node-1", { zone: `${REGION}-a`, networkInterfaces: [{ network: "k8s-net" }] });
    gce.putInstance("node-2", { zone: `${REGION}-a`, networkInterfaces: [{ network: "k8s-net" }] });
  });
  afterEach(async () => gce?.stop());

  const ROWS: ReadonlyArray<{ rule: string; run: () => Promise<void> }> = [
    {
      rule: "forwardingRules.insert takes REST names (IPAddress, IPProtocol); the provider face reads the same resource",
      run: async () => {
        const { status, body } = await call("POST", `${P}/forwardingRules`, {
          name: "fr",
          IPProtocol: "UDP",
          portRange: "53-53",
          networkTier: "PREMIUM",
        });
        assert.deepEqual(
          [status, body.operationType, body.status, body.targetLink],
          [200, "insert", "DONE", link(`${P}/forwardingRules/fr`)],
        );
        const rule = stored("forwardingRules", "fr");
        assert.deepEqual([rule?.ipAddress, rule?.ipProtocol, rule?.portRange], ["203.0.113.1", "UDP", "53-53"]);
        const got = await call("GET", `${P}/forwardingRules/fr`);
        assert.deepEqual(
          [got.body.IPAddress, got.body.IPProtocol, got.body.kind],
          ["203.0.113.1", "UDP", "compute#forwardingRule"],
        );
        const read = new ProviderApi(gce.state).dispatch("read", {
          type: "gcp:compute/forwardingRule:ForwardingRule",
          id: `${P}/forwardingRules/fr`,
        });
        assert.equal(isObject(read.outputs) ? read.outputs.ipProtocol : undefined, "UDP");
      },
    },
    {
      rule: "an insert with a field the kind does not have: 400",
      run: async () => {
        assert.deepEqual(
          await call("POST", `${G}/firewalls`, {
            name: "fw",
            network: link(`${G}/networks/k8s-net`),
            allowed: [{ IPProtocol: "tcp" }],
            sourceRanges: ["0.0.0.0/0"],
            bogus: 1,
          }),
          {
            status: 400,
            body: {
              error: {
                code: 400,
                message: `Invalid JSON payload received. Unknown name "bogus" at 'resource': Cannot find field.`,
                errors: [{ reason: "invalid" }],
              },
            },
          },
        );
      },
    },
    {
      rule: "firewalls.insert takes allowed[].IPProtocol; patch merges (a null removes), update replaces",
      run: async () => {
        const network = link(`${G}/networks/k8s-net`);
        assert.equal(
          (
            await call("POST", `${G}/firewalls`, {
              name: "fw",
              network,
              allowed: [{ IPProtocol: "tcp", ports: ["80"] }],
              sourceRanges: ["0.0.0.0/0"],
              targetTags: ["n"],
            })
          ).status,
          200,
        );
        assert.deepEqual(stored("firewalls", "fw")?.allows, [{ protocol: "tcp", ports: ["80"] }]);
        const patched = await call("PATCH", `${G}/firewalls/fw`, { sourceRanges: ["10.0.0.0/8"], targetTags: null });
        assert.deepEqual([patched.status, patched.body.operationType], [200, "patch"]);
        assert.deepEqual(
          [
            stored("firewalls", "fw")?.sourceRanges,
            stored("firewalls", "fw")?.targetTags,
            stored("firewalls", "fw")?.allows,
          ],
          [["10.0.0.0/8"], undefined, [{ protocol: "tcp", ports: ["80"] }]],
        );
        assert.equal(
          (
            await call("PUT", `${G}/firewalls/fw`, {
              name: "fw",
              network,
              allowed: [{ IPProtocol: "udp" }],
              sourceRanges: ["0.0.0.0/0"],
            })
          ).status,
          200,
        );
        assert.deepEqual(
          [stored("firewalls", "fw")?.allows, stored("firewalls", "fw")?.sourceRanges],
          [[{ protocol: "udp" }], ["0.0.0.0/0"]],
        );
      },
    },
    {
      rule: "an update with a fingerprint that is not the current one: 412 conditionNotMet, nothing changes",
      run: async () => {
        assert.equal(
          (await call("POST", `${G}/httpHealthChecks`, { name: "hc", port: 10256, requestPath: "/healthz" })).status,
          200,
        );
        const current = (await call("GET", `${G}/httpHealthChecks/hc`)).body;
        const stale = await call("PUT", `${G}/httpHealthChecks/hc`, { ...current, port: 1, fingerprint: "c3RhbGU=" });
        assert.deepEqual(
          [stale.status, stale.body.error],
          [
            412,
            {
              code: 412,
              message: `Invalid fingerprint 'c3RhbGU=' for '${G}/httpHealthChecks/hc': the resource changed since it was read (current fingerprint '${String(current.fingerprint)}').`,
              errors: [{ reason: "conditionNotMet" }],
            },
          ],
        );
        assert.equal(stored("httpHealthChecks", "hc")?.port, 10256);
        assert.equal((await call("PUT", `${G}/httpHealthChecks/hc`, { ...current, port: 10257 })).status, 200);
        assert.equal(stored("httpHealthChecks", "hc")?.port, 10257);
      },
    },
    {
      rule: "targetPools.insert takes instances as the stock CCM sends them (/zones/Z/instances/N); addInstance and removeInstance change them (a link twice is one member)",
      run: async () => {
        assert.equal(
          (await call("POST", `${P}/targetPools`, { name: "tp", instances: [`/zones/${REGION}-a/instances/node-1`] }))
            .status,
          200,
        );
        assert.deepEqual(stored("targetPools", "tp")?.instances, [link(`${Z}/instances/node-1`)]);
        const added = await call("POST", `${P}/targetPools/tp/addInstance`, {
          instances: [{ instance: link(`${Z}/instances/node-2`) }, { instance: link(`${Z}/instances/node-1`) }],
        });
        assert.deepEqual([added.status, added.body.operationType], [200, "addInstance"]);
        assert.deepEqual(stored("targetPools", "tp")?.instances, [
          link(`${Z}/instances/node-1`),
          link(`${Z}/instances/node-2`),
        ]);
        assert.equal(
          (
            await call("POST", `${P}/targetPools/tp/removeInstance`, {
              instances: [{ instance: link(`${Z}/instances/node-1`) }],
            })
          ).status,
          200,
        );
        assert.deepEqual(stored("targetPools", "tp")?.instances, [link(`${Z}/instances/node-2`)]);
      },
    },
    {
      rule: "instanceGroups.insert then addInstances / removeInstances; listInstances shows them",
      run: async () => {
        assert.equal((await call("POST", `${Z}/instanceGroups`, { name: "ig" })).status, 200);
        assert.equal(
          (
            await call("POST", `${Z}/instanceGroups/ig/addInstances`, {
              instances: [{ instance: link(`${Z}/instances/node-1`) }, { instance: link(`${Z}/instances/node-2`) }],
            })
          ).status,
          200,
        );
        assert.equal(
          (
            await call("POST", `${Z}/instanceGroups/ig/removeInstances`, {
              instances: [{ instance: link(`${Z}/instances/node-2`) }],
            })
          ).status,
          200,
        );
        const listed = await call("POST", `${Z}/instanceGroups/ig/listInstances`);
        assert.deepEqual(listed.body.items, [{ instance: link(`${Z}/instances/node-1`), status: "RUNNING" }]);
        assert.equal((await call("GET", `${Z}/instanceGroups/ig`)).body.size, 1);
      },
    },
    {
      rule: "an INTERNAL forwarding rule and an INTERNAL address inserted with no networkTier read back PREMIUM (the stock CCM sends none)",
      run: async () => {
        assert.equal(
          (
            await call("POST", `${G}/healthChecks`, {
              name: "hc",
              type: "HTTP",
              httpHealthCheck: { port: 10256, requestPath: "/healthz" },
            })
          ).status,
          200,
        );
        const bs = {
          name: "bs",
          protocol: "TCP",
          loadBalancingScheme: "INTERNAL",
          healthChecks: [link(`${G}/healthChecks/hc`)],
        };
        assert.equal((await call("POST", `${P}/backendServices`, bs)).status, 200);
        const address = await call("POST", `${P}/addresses`, {
          name: "ilb",
          addressType: "INTERNAL",
          subnetwork: link(`${P}/subnetworks/k8s-subnet`),
        });
        assert.equal(address.status, 200, JSON.stringify(address.body));
        const rule = await call("POST", `${P}/forwardingRules`, {
          name: "ilb",
          loadBalancingScheme: "INTERNAL",
          IPProtocol: "TCP",
          ports: ["80"],
          backendService: link(`${P}/backendServices/bs`),
          network: link(`${G}/networks/k8s-net`),
          subnetwork: link(`${P}/subnetworks/k8s-subnet`),
        });
        assert.equal(rule.status, 200, JSON.stringify(rule.body));
        assert.deepEqual(
          [
            (await call("GET", `${P}/forwardingRules/ilb`)).body.networkTier,
            (await call("GET", `${P}/addresses/ilb`)).body.networkTier,
          ],
          ["PREMIUM", "PREMIUM"],
        );
        assert.deepEqual(
          [stored("forwardingRules", "ilb")?.networkTier, stored("addresses", "ilb")?.networkTier],
          ["PREMIUM", "PREMIUM"],
        );
      },
    },
    {
      rule: "an INTERNAL backend service whose backends name no balancingMode gets CONNECTION (the stock CCM sends none)",
      run: async () => {
        assert.equal(
          (
            await call("POST", `${G}/healthChecks`, {
              name: "hc",
              type: "HTTP",
              httpHealthCheck: { port: 10256, requestPath: "/healthz" },
            })
          ).status,
          200,
        );
        assert.equal((await call("POST", `${Z}/instanceGroups`, { name: "ig" })).status, 200);
        const created = await call("POST", `${P}/backendServices`, {
          name: "bs",
          protocol: "TCP",
          loadBalancingScheme: "INTERNAL",
          sessionAffinity: "NONE",
          healthChecks: [link(`${G}/healthChecks/hc`)],
          backends: [{ group: link(`${Z}/instanceGroups/ig`) }],
        });
        assert.equal(created.status, 200, JSON.stringify(created.body));
        const got = await call("GET", `${P}/backendServices/bs`);
        assert.deepEqual(
          [got.body.healthChecks, got.body.backends],
          [[link(`${G}/healthChecks/hc`)], [{ group: link(`${Z}/instanceGroups/ig`), balancingMode: "CONNECTION" }]],
        );
        const two = await call("PUT", `${P}/backendServices/bs`, {
          ...got.body,
          healthChecks: [link(`${G}/healthChecks/hc`), link(`${G}/healthChecks/hc`)],
        });
        assert.deepEqual(
          [two.status, two.body.error],
          [
            400,
            {
              code: 400,
              message: `Invalid value for field 'resource.healthChecks': ${JSON.stringify([link(`${G}/healthChecks/hc`), link(`${G}/healthChecks/hc`)])}. Only one health check may be specified.`,
              errors: [{ reason: "invalid" }],
            },
          ],
        );
      },
    },
    {
      rule: "routes.insert with a zones/Z/instances/N next hop; list with the stock CCM's filter finds it",
      run: async () => {
        const network = link(`${G}/networks/k8s-net`);
        assert.equal(
          (
            await call("POST", `${G}/routes`, {
              name: "e2e-1",
              destRange: "10.64.1.0/24",
              nextHopInstance: `zones/${REGION}-a/instances/node-1`,
              network,
              priority: 1000,
              description: "k8s-node-route",
            })
          ).status,
          200,
        );
        const filter = encodeURIComponent(`(name eq e2e-.*) (network eq ${network}) (description eq k8s-node-route)`);
        const listed = await call("GET", `${G}/routes?filter=${filter}`);
        assert.deepEqual(
          Array.isArray(listed.body.items)
            ? listed.body.items.map((r) => (isObject(r) ? [r.name, r.nextHopInstance] : null))
            : null,
          [["e2e-1", link(`${Z}/instances/node-1`)]],
        );
        const none = await call(
          "GET",
          `${G}/routes?filter=${encodeURIComponent("(name eq other-.*) (description eq k8s-node-route)")}`,
        );
        assert.equal(none.body.items, undefined);
      },
    },
  ];
  for (const row of ROWS) it(row.rule, row.run);
});
