// The GCE emulator's rules (`npm run test:emulator`), one row each: what real GCE (and the
// provider @pulumi/gcp bridges) accepts, refuses with which message, replaces or updates in place.
// The source of each rule is cited next to it in emulator/gce/ (kinds.ts, validation.ts, rules/,
// networks.ts, instances.ts); a change that loosens a rule fails its row here.
// This file: Compute DELETE over HTTP, and the instances one instance group holds.
import * as assert from "node:assert/strict";

import { startGceEmulator, type GceEmulator } from "../index";
import type { JsonObject } from "../json";
import { GceState } from "../state";
import { ENDPOINT, PROJECT, REGION, T, NETWORKS, regional, passthrough, isObject, gceError } from "./rulesFixtures";

/**
 * Compute deletes over the HTTP face (the leak detector's `dccm gc` calls them). Sources: the
 * Compute API reference of each `{collection}.delete` (DELETE on the resource, answered with an
 * Operation; query parameter `requestId`: "the server will know to ignore the request if it has
 * already been completed", "a valid UUID with the exception that zero UUID is not supported"), the
 * Operation resource (status PENDING, RUNNING or DONE; targetLink), and GCE's 400
 * resourceInUseByAnotherResource for a resource another one uses (state.ts, GceState.delete).
 */
describe("GCE emulator rules: Compute DELETE over HTTP (one row per rule)", function () {
  let gce: GceEmulator;
  const P = `projects/${PROJECT}/regions/${REGION}`;
  const url = (rel: string, query = ""): string => `${gce.computeEndpoint}${rel}${query}`;
  const call = async (method: string, rel: string, query = ""): Promise<{ status: number; body: JsonObject }> => {
    const res = await fetch(url(rel, query), { method });
    return { status: res.status, body: (await res.json()) as JsonObject };
  };
  const REQUEST_ID = "6f1c2b3a-4d5e-4f60-8172-93a4b5c6d7e8";
  const post = async (rel: string, body: JsonObject, query = ""): Promise<{ status: number; body: JsonObject }> => {
    const res = await fetch(url(rel, query), {
      method: "POST",
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" },
    });
    return { status: res.status, body: (await res.json()) as JsonObject };
  };
  const withoutTimes = (op: JsonObject): JsonObject => {
    const { id: _id, targetId: _targetId, insertTime: _i, startTime: _s, endTime: _e, ...rest } = op;
    return rest;
  };

  beforeEach(async () => {
    gce = await startGceEmulator({ networks: NETWORKS });
    gce.state.create(T.address, { ...regional, name: "lb" });
    gce.state.create(T.forwardingRule, { ...regional, name: "lb", ipAddress: `${P}/addresses/lb`, portRange: "80" });
  });
  afterEach(async () => gce?.stop());

  const ROWS: ReadonlyArray<{ rule: string; run: () => Promise<void> }> = [
    {
      rule: "DELETE answers an Operation (DONE in the emulator) naming its target",
      run: async () => {
        const { status, body } = await call("DELETE", `${P}/forwardingRules/lb`);
        assert.equal(status, 200);
        const { id: _id, targetId: _targetId, insertTime: _i, startTime: _s, endTime: _e, ...rest } = body;
        assert.deepEqual(rest, {
          kind: "compute#operation",
          name: "operation-1",
          operationType: "delete",
          targetLink: `${gce.endpoint}/compute/v1/${P}/forwardingRules/lb`,
          status: "DONE",
          progress: 100,
          selfLink: `${gce.endpoint}/compute/v1/${P}/operations/operation-1`,
          region: `${gce.endpoint}/compute/v1/${P}`,
        });
        assert.deepEqual(
          gce.listResources().filter((r) => r.kind === "forwardingRules"),
          [],
        );
      },
    },
    {
      rule: "DELETE of a resource another uses: 400 resourceInUseByAnotherResource naming the user; it stays",
      run: async () => {
        gce.state.create(T.httpHealthCheck, { project: PROJECT, name: "legacy" });
        gce.state.create(T.targetPool, { ...regional, name: "tp", healthChecks: "legacy" });
        const G = `projects/${PROJECT}/global`;
        const { status, body } = await call("DELETE", `${G}/httpHealthChecks/legacy`);
        assert.deepEqual(
          [status, body],
          [
            400,
            {
              error: {
                code: 400,
                message: `The http_health_check resource '${G}/httpHealthChecks/legacy' is already being used by '${P}/targetPools/tp'`,
                errors: [{ reason: "resourceInUseByAnotherResource" }],
              },
            },
          ],
        );
        assert.equal(gce.listResources().filter((r) => r.kind === "httpHealthChecks").length, 1);
      },
    },
    {
      rule: "DELETE of an address a forwarding rule uses: released (DONE), the rule keeps the IP as ephemeral",
      run: async () => {
        const ip = gce.listResources().find((r) => r.kind === "addresses")?.properties.address;
        assert.equal(ip, "203.0.113.1");
        assert.equal((await call("DELETE", `${P}/addresses/lb`)).status, 200);
        assert.deepEqual(
          gce
            .listResources()
            .map((r) => [r.kind, r.name, r.kind === "forwardingRules" ? r.properties.ipAddress : null]),
          [["forwardingRules", "lb", "203.0.113.1"]],
        );
      },
    },
    {
      rule: "DELETE of an address out of band (/emulator/resources): the same, the rule keeps the IP as ephemeral",
      run: async () => {
        const res = await fetch(`${gce.endpoint}/emulator/resources/addresses/${PROJECT}/${REGION}/lb`, {
          method: "DELETE",
        });
        assert.equal(res.status, 200);
        assert.deepEqual(
          gce
            .listResources()
            .map((r) => [r.kind, r.name, r.kind === "forwardingRules" ? r.properties.ipAddress : null]),
          [["forwardingRules", "lb", "203.0.113.1"]],
        );
      },
    },
    {
      rule: "DELETE of a resource that does not exist: 404 naming it",
      run: async () => {
        const { status, body } = await call("DELETE", `${P}/targetPools/nothing`);
        assert.deepEqual(
          [status, body],
          [
            404,
            {
              error: {
                code: 404,
                message: `The resource '${P}/targetPools/nothing' was not found`,
                errors: [{ reason: "notFound" }],
              },
            },
          ],
        );
      },
    },
    {
      rule: "a repeated requestId gets the first request's operation back, and nothing is done twice",
      run: async () => {
        const first = await call("DELETE", `${P}/forwardingRules/lb`, `?requestId=${REQUEST_ID}`);
        gce.state.create(T.forwardingRule, {
          ...regional,
          name: "lb",
          ipAddress: `${P}/addresses/lb`,
          portRange: "80",
        });
        const again = await call("DELETE", `${P}/forwardingRules/lb`, `?requestId=${REQUEST_ID}`);
        assert.deepEqual(again, first);
        assert.equal(gce.listResources().filter((r) => r.kind === "forwardingRules").length, 1);
      },
    },
    {
      rule: "a requestId that is not a UUID, or the zero UUID: 400",
      run: async () => {
        for (const id of ["retry-1", "00000000-0000-0000-0000-000000000000"]) {
          const { status, body } = await call("DELETE", `${P}/forwardingRules/lb`, `?requestId=${id}`);
          assert.deepEqual(
            [status, body],
            [
              400,
              {
                error: {
                  code: 400,
                  message: `Invalid value for field 'requestId': '${id}'. The request ID must be a valid UUID other than the zero UUID.`,
                  errors: [{ reason: "invalid" }],
                },
              },
            ],
          );
        }
      },
    },
    {
      rule: "regionOperations get and wait return the operation; one never returned is 404",
      run: async () => {
        const { body } = await call("DELETE", `${P}/forwardingRules/lb`);
        assert.deepEqual(await call("GET", `${P}/operations/operation-1`), { status: 200, body });
        assert.deepEqual(await call("POST", `${P}/operations/operation-1/wait`), { status: 200, body });
        assert.equal((await call("GET", `${P}/operations/operation-9`)).status, 404);
      },
    },
    {
      rule: "POST addresses (addresses.insert) answers a DONE insert Operation; the address gets an IP",
      run: async () => {
        const { status, body } = await post(`${P}/addresses`, { name: "new", description: "d" });
        assert.equal(status, 200);
        assert.deepEqual(withoutTimes(body), {
          kind: "compute#operation",
          name: "operation-1",
          operationType: "insert",
          targetLink: `${gce.endpoint}/compute/v1/${P}/addresses/new`,
          status: "DONE",
          progress: 100,
          selfLink: `${gce.endpoint}/compute/v1/${P}/operations/operation-1`,
          region: `${gce.endpoint}/compute/v1/${P}`,
        });
        const created = gce.listResources().find((r) => r.kind === "addresses" && r.name === "new");
        assert.deepEqual(
          [
            created?.properties.address,
            created?.properties.addressType,
            created?.properties.networkTier,
            created?.properties.description,
          ],
          ["203.0.113.2", "EXTERNAL", "PREMIUM", "d"],
        );
      },
    },
    {
      rule: "POST addresses naming the ephemeral IP of a rule of the project and region promotes it; the rule keeps it",
      run: async () => {
        const ip = gce.state.create(T.forwardingRule, { ...regional, name: "eph", portRange: "80" }).properties
          .ipAddress;
        assert.equal(ip, "203.0.113.2");
        assert.equal(
          (await post(`${P}/addresses`, { name: "eph", address: "203.0.113.2", networkTier: "PREMIUM" })).status,
          200,
        );
        assert.deepEqual(
          gce
            .listResources()
            .filter((r) => r.name === "eph")
            .map((r) => [r.kind, r.kind === "addresses" ? r.properties.address : r.properties.ipAddress]),
          [
            ["addresses", "203.0.113.2"],
            ["forwardingRules", "203.0.113.2"],
          ],
        );
      },
    },
    {
      rule: "POST addresses with a repeated requestId gets the first operation back and inserts once",
      run: async () => {
        const first = await post(`${P}/addresses`, { name: "once" }, `?requestId=${REQUEST_ID}`);
        gce.deleteOutOfBand("addresses", "once");
        const again = await post(`${P}/addresses`, { name: "once" }, `?requestId=${REQUEST_ID}`);
        assert.deepEqual(again, first);
        assert.equal(gce.listResources().filter((r) => r.name === "once").length, 0);
      },
    },
    {
      rule: "POST addresses with a taken name: 409 alreadyExists",
      run: async () => {
        assert.deepEqual(await post(`${P}/addresses`, { name: "lb" }), {
          status: 409,
          body: {
            error: {
              code: 409,
              message: `The resource '${P}/addresses/lb' already exists`,
              errors: [{ reason: "alreadyExists" }],
            },
          },
        });
      },
    },
    {
      rule: "POST addresses with an INTERNAL IP another address holds: the operation fails with IP_IN_USE_BY_ANOTHER_RESOURCE (HTTP 409)",
      run: async () => {
        const sub = `${P}/subnetworks/k8s-subnet`;
        assert.equal(
          (
            await post(`${P}/addresses`, {
              name: "int-1",
              addressType: "INTERNAL",
              subnetwork: sub,
              address: "10.130.0.9",
            })
          ).status,
          200,
        );
        const { status, body } = await post(`${P}/addresses`, {
          name: "int-2",
          addressType: "INTERNAL",
          subnetwork: sub,
          address: "10.130.0.9",
        });
        assert.equal(status, 200);
        assert.deepEqual(
          [body.status, body.operationType, body.error, body.httpErrorStatusCode, body.httpErrorMessage],
          [
            "DONE",
            "insert",
            {
              errors: [
                {
                  code: "IP_IN_USE_BY_ANOTHER_RESOURCE",
                  message: "IP '10.130.0.9' is already being used by another resource.",
                },
              ],
            },
            409,
            "CONFLICT",
          ],
        );
        assert.equal(gce.listResources().filter((r) => r.name === "int-2").length, 0);
      },
    },
    {
      rule: "POST addresses with a field an Address does not have: 400",
      run: async () => {
        assert.deepEqual(await post(`${P}/addresses`, { name: "x", IPAddress: "203.0.113.9" }), {
          status: 400,
          body: {
            error: {
              code: 400,
              message: `Invalid JSON payload received. Unknown name "IPAddress" at 'resource': Cannot find field.`,
              errors: [{ reason: "invalid" }],
            },
          },
        });
      },
    },
    {
      rule: "global health checks: get, list and delete at global/healthChecks; in use by a backend service: 400",
      run: async () => {
        const G = `projects/${PROJECT}/global/healthChecks`;
        gce.insertOutOfBand("globalHealthChecks", {
          name: "k8s-c1-node",
          httpHealthCheck: { port: 10256, requestPath: "/healthz" },
        });
        gce.insertOutOfBand(
          "backendServices",
          passthrough({ name: "bs", network: "k8s-net", healthChecks: `${gce.endpoint}/compute/v1/${G}/k8s-c1-node` }),
        );
        const got = await call("GET", `${G}/k8s-c1-node`);
        assert.deepEqual(
          [got.status, got.body.kind, got.body.type, got.body.selfLink, got.body.region],
          [200, "compute#healthCheck", "HTTP", `${gce.endpoint}/compute/v1/${G}/k8s-c1-node`, undefined],
        );
        const listed = await call("GET", G);
        assert.deepEqual(
          Array.isArray(listed.body.items) ? listed.body.items.map((i) => (isObject(i) ? i.name : null)) : null,
          ["k8s-c1-node"],
        );
        assert.deepEqual((await call("GET", `${P}/healthChecks`)).body.items, undefined);
        const inUse = await call("DELETE", `${G}/k8s-c1-node`);
        assert.deepEqual(
          [inUse.status, inUse.body.error],
          [
            400,
            {
              code: 400,
              message: `The health_check resource '${G}/k8s-c1-node' is already being used by '${P}/backendServices/bs'`,
              errors: [{ reason: "resourceInUseByAnotherResource" }],
            },
          ],
        );
        assert.equal((await call("DELETE", `${P}/backendServices/bs`)).status, 200);
        assert.equal((await call("DELETE", `${G}/k8s-c1-node`)).status, 200);
        assert.equal(gce.calls()["DELETE /compute/v1/projects/{project}/global/healthChecks/{name}"], 2);
      },
    },
    {
      rule: "a delete fault fails the DELETE with the injected status",
      run: async () => {
        gce.injectFault({
          kind: "forwardingRules",
          name: "lb",
          operation: "delete",
          status: 503,
          message: "backend error",
        });
        assert.deepEqual(await call("DELETE", `${P}/forwardingRules/lb`), {
          status: 503,
          body: { error: { code: 503, message: "backend error", errors: [{ reason: "backendError" }] } },
        });
        assert.equal((await call("DELETE", `${P}/forwardingRules/lb`)).status, 200);
      },
    },
  ];
  for (const row of ROWS) it(row.rule, row.run);
});

describe("GCE emulator rules: instances per instance group (rules/instanceGroups.ts INSTANCE_GROUP_MAX_INSTANCES)", () => {
  const ZONE_A = `${REGION}-a`;
  const NET = `projects/${PROJECT}/global/networks/k8s-net`;
  function seeded(count: number, max?: number): GceState {
    const state = new GceState({
      endpoint: ENDPOINT,
      project: PROJECT,
      region: REGION,
      zones: [ZONE_A],
      networks: NETWORKS,
      ...(max !== undefined ? { instanceGroupMaxInstances: max } : {}),
    });
    for (let i = 0; i < count; i++)
      state.putInstance(PROJECT, ZONE_A, `node-${i}`, { networkInterfaces: [{ network: "k8s-net" }] });
    return state;
  }
  const members = (count: number): string[] => Array.from({ length: count }, (_, i) => `${ZONE_A}/node-${i}`);
  const group = (count: number): JsonObject => ({
    project: PROJECT,
    zone: ZONE_A,
    name: "ig",
    network: NET,
    instances: members(count),
  });

  it("the documented limit: 1000 instances are accepted, 1001 refused", () => {
    const state = seeded(1001);
    assert.equal(state.create(T.instanceGroup, group(1000)).properties.size, 1000);
    const e = gceError(() => state.create(T.instanceGroup, { ...group(1001), name: "ig-2" }));
    assert.deepEqual(
      [e.status, e.reason, e.message],
      [400, "limitExceeded", "Exceeded limit 'MAX_INSTANCES_IN_INSTANCE_GROUP' on resource 'ig-2'. Limit: 1000.0"],
    );
  });

  it("a test's lower limit (instanceGroupMaxInstances: 2) holds on create and on update", () => {
    const state = seeded(3, 2);
    const created = state.create(T.instanceGroup, group(2));
    const e = gceError(() => state.create(T.instanceGroup, { ...group(3), name: "ig-3" }));
    assert.deepEqual(
      [e.status, e.message],
      [400, "Exceeded limit 'MAX_INSTANCES_IN_INSTANCE_GROUP' on resource 'ig-3'. Limit: 2.0"],
    );
    const key = { kind: created.kind, project: created.project, scope: created.scope, name: created.name };
    const u = gceError(() => state.update(key, group(3)));
    assert.deepEqual(
      [u.status, u.message],
      [400, "Exceeded limit 'MAX_INSTANCES_IN_INSTANCE_GROUP' on resource 'ig'. Limit: 2.0"],
    );
    assert.deepEqual(state.get(key).properties.size, 2);
  });
});
