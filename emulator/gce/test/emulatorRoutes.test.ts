// The emulator's test-only routes (emulatorRoutes.ts): out-of-band inserts and changes, the history, fault injection.

import * as assert from "node:assert/strict";

import { type GceEmulator, ProviderApi, startGceEmulator } from "../index";
import { toJson } from "../json";
import { PROJECT, REGION, NOW, ADDRESS, FORWARDING_RULE, regional, gceError, getJson } from "./emulatorFixtures";

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

  describe("out-of-band inserts and history", function () {
    it("insertOutOfBand creates under GCE's rules, shown as listResources shows it, without faults", function () {
      gce.injectFault({ kind: "firewalls", operation: "create", status: 503, message: "boom" });
      const fw = gce.insertOutOfBand("firewalls", {
        name: "k8s-fw-a1",
        network: link("global/networks/default"),
        allows: [{ protocol: "tcp", ports: ["80"] }],
        sourceRanges: ["0.0.0.0/0"],
      });
      assert.deepEqual(
        fw,
        gce.listResources().find((r) => r.kind === "firewalls"),
      );
      assert.deepEqual(
        [fw.kind, fw.project, fw.scope, fw.name, fw.properties.direction, fw.properties.priority],
        ["firewalls", PROJECT, "global", "k8s-fw-a1", "INGRESS", 1000],
      );
      const rule = gce.insertOutOfBand("forwardingRules", { name: "a1", portRange: "80" }, { scope: REGION });
      assert.deepEqual(
        [rule.scope, rule.properties.ipAddress, rule.properties.networkTier],
        [REGION, "203.0.113.1", "PREMIUM"],
      );
      const hc = gce.insertOutOfBand("gcp:compute/healthCheck:HealthCheck", {
        name: "k8s-c1-node",
        httpHealthCheck: { port: 10256 },
      });
      assert.deepEqual(
        [hc.kind, hc.scope, hc.properties.type, hc.properties.selfLink],
        ["globalHealthChecks", "global", "HTTP", link("global/healthChecks/k8s-c1-node")],
      );
      const refused = (fn: () => unknown): [number, string] => {
        const e = gceError(fn);
        return [e.status, e.message];
      };
      assert.deepEqual(
        refused(() => gce.insertOutOfBand("forwardingRules", { name: "a1", portRange: "80" })),
        [409, `The resource 'projects/${PROJECT}/regions/${REGION}/forwardingRules/a1' already exists`],
      );
      assert.deepEqual(
        refused(() =>
          gce.insertOutOfBand("forwardingRules", {
            name: "a2",
            portRange: "80",
            target: `regions/${REGION}/targetPools/none`,
          }),
        ),
        [404, `The resource 'projects/${PROJECT}/regions/${REGION}/targetPools/none' was not found`],
      );
      assert.deepEqual(
        refused(() => gce.insertOutOfBand("firewalls", { name: "fw", IPProtocol: "tcp" })),
        [400, "IPProtocol is not a property of Firewall"],
      );
      assert.deepEqual(
        refused(() => gce.insertOutOfBand("firewalls", { name: "fw" }, { scope: REGION })),
        [400, `Firewall is global: its scope is "global", not "${REGION}"`],
      );
      assert.deepEqual(
        refused(() => gce.insertOutOfBand("instances", { name: "vm" })),
        [400, "instances are seeded with putInstance, not inserted out of band"],
      );
    });

    it("POST /emulator/resources/{kind}/{project}/{scope} answers the created listing, or GCE's error", async function () {
      const created = await getJson(`${gce.endpoint}/emulator/resources/addresses/${PROJECT}/${REGION}`, {
        method: "POST",
        body: JSON.stringify({ name: "a1", description: "d" }),
      });
      assert.equal(created.status, 200);
      assert.deepEqual(created.body, toJson(gce.listResources()[0]));
      const again = await getJson(`${gce.endpoint}/emulator/resources/addresses/${PROJECT}/${REGION}`, {
        method: "POST",
        body: JSON.stringify({ name: "a1" }),
      });
      assert.deepEqual(again, {
        status: 409,
        body: {
          error: {
            code: 409,
            message: `The resource 'projects/${PROJECT}/regions/${REGION}/addresses/a1' already exists`,
            errors: [{ reason: "alreadyExists" }],
          },
        },
      });
      const unknown = await getJson(`${gce.endpoint}/emulator/resources/widgets/${PROJECT}/global`, {
        method: "POST",
        body: JSON.stringify({ name: "w" }),
      });
      assert.deepEqual(unknown, {
        status: 400,
        body: { error: { code: 400, message: "unknown kind widgets", errors: [{ reason: "invalid" }] } },
      });
    });

    it("history: every create, update and delete through any face, with the emulator's clock; GET and DELETE /emulator/history", async function () {
      let now = Date.parse(NOW);
      await gce.stop();
      gce = await startGceEmulator({ now: () => new Date(now) });
      const api = new ProviderApi(gce.state);
      api.create({ type: ADDRESS, inputs: { ...regional, name: "a1" } });
      now += 1000;
      gce.insertOutOfBand("forwardingRules", { name: "a1", portRange: "80", ipAddress: "203.0.113.1" });
      now += 1000;
      gce.patchOutOfBand("forwardingRules", "a1", { description: "x" });
      now += 500;
      const del = await fetch(`${gce.computeEndpoint}projects/${PROJECT}/regions/${REGION}/forwardingRules/a1`, {
        method: "DELETE",
      });
      assert.equal(del.status, 200);
      now += 250;
      gce.putInstance("node-1");
      gce.deleteOutOfBand("instances", "node-1");
      const t0 = Date.parse(NOW);
      const expected = [
        { at: t0, kind: "addresses", scope: REGION, name: "a1", op: "create" },
        { at: t0 + 1000, kind: "forwardingRules", scope: REGION, name: "a1", op: "create" },
        { at: t0 + 2000, kind: "forwardingRules", scope: REGION, name: "a1", op: "update" },
        { at: t0 + 2500, kind: "forwardingRules", scope: REGION, name: "a1", op: "delete" },
        { at: t0 + 2750, kind: "instances", scope: "us-central1-a", name: "node-1", op: "create" },
        { at: t0 + 2750, kind: "instances", scope: "us-central1-a", name: "node-1", op: "delete" },
      ];
      assert.deepEqual(gce.history(), expected);
      assert.deepEqual(await getJson(`${gce.endpoint}/emulator/history`), { status: 200, body: toJson(expected) });
      assert.equal((await getJson(`${gce.endpoint}/emulator/history`, { method: "DELETE" })).status, 200);
      assert.deepEqual(gce.history(), []);
    });
  });

  describe("fault injection", function () {
    it("fails the next matching operation(s) with the given status and message", function () {
      gce.injectFault({
        kind: FORWARDING_RULE,
        name: "lb-1",
        operation: "create",
        status: 503,
        message: "backend unavailable",
        count: 2,
      });
      gce.state.create(ADDRESS, { ...regional, name: "lb-1" });
      for (let i = 0; i < 2; i++) {
        const e = gceError(() => gce.state.create(FORWARDING_RULE, { ...regional, name: "lb-1" }));
        assert.deepEqual([e.status, e.reason, e.message], [503, "backendError", "backend unavailable"]);
      }
      assert.equal(gce.state.create(FORWARDING_RULE, { ...regional, name: "lb-1" }).name, "lb-1");

      gce.injectFault({
        kind: "forwardingRules",
        operation: "delete",
        status: 403,
        message: "denied",
        reason: "forbidden",
      });
      const e = gceError(() =>
        gce.state.delete({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "lb-1" }),
      );
      assert.deepEqual([e.status, e.reason, e.message], [403, "forbidden", "denied"]);
      gce.state.delete({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "lb-1" });
    });

    it("over HTTP: a get fault answers the next Compute GET with Google's error body", async function () {
      gce.putInstance("node-1");
      const res = await getJson(`${gce.endpoint}/emulator/faults`, {
        method: "POST",
        body: JSON.stringify({
          kind: "instances",
          name: "node-1",
          operation: "get",
          status: 429,
          message: "Rate Limit Exceeded",
        }),
      });
      assert.deepEqual(res, { status: 200, body: {} });
      const url = `${gce.computeEndpoint}projects/${PROJECT}/zones/us-central1-a/instances/node-1`;
      assert.deepEqual(await getJson(url), {
        status: 429,
        body: { error: { code: 429, message: "Rate Limit Exceeded", errors: [{ reason: "rateLimitExceeded" }] } },
      });
      assert.equal((await getJson(url)).status, 200);
      assert.deepEqual(gce.calls(), { "GET /compute/v1/projects/{project}/zones/{zone}/instances/{name}": 2 });
    });

    it("a read fault fails the provider's read", async function () {
      gce.state.create(ADDRESS, { ...regional, name: "lb-1" });
      gce.injectFault({ kind: ADDRESS, operation: "read", status: 500, message: "internal error" });
      const res = await getJson(`${gce.endpoint}/emulator/provider/read`, {
        method: "POST",
        body: JSON.stringify({ type: ADDRESS, id: `projects/${PROJECT}/regions/${REGION}/addresses/lb-1` }),
      });
      assert.deepEqual(res, {
        status: 500,
        body: { error: { code: 500, message: "internal error", errors: [{ reason: "backendError" }] } },
      });
    });
  });
});
