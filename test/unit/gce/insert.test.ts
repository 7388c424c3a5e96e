// The Compute client's addresses.insert against the GCE emulator's REST face: a created address,
// the promotion of a forwarding rule's ephemeral IP, a taken name answered as "exists", GCE's
// refusal of an IP another address holds, one request ID across retries, and the call metric.

import * as assert from "node:assert/strict";

import { Registry } from "prom-client";

import { type GceEmulator, startGceEmulator } from "../../../emulator/gce";
import { ComputeClient, ComputeError } from "../../../gce";

const PROJECT = "dccm-test";
const REGION = "us-central1";
const ADDRESSES = `projects/${PROJECT}/regions/${REGION}/addresses`;

describe("gce/ ComputeClient.insertAddress against the emulator", function () {
  let gce: GceEmulator;
  let registry: Registry;

  beforeEach(async () => {
    gce = await startGceEmulator();
    registry = new Registry();
  });
  afterEach(async () => gce?.stop());

  function client(fetchFn?: typeof fetch): ComputeClient {
    return new ComputeClient({
      endpoint: gce.computeEndpoint,
      registry,
      sleep: async () => undefined,
      random: () => 0,
      ...(fetchFn === undefined ? {} : { fetch: fetchFn }),
    });
  }

  async function count(call: string, code: string): Promise<number> {
    const m = await registry.getSingleMetric("dccm_compute_calls_total")?.get();
    return m?.values.find((v) => v.labels["call"] === call && v.labels["code"] === code)?.value ?? 0;
  }

  function address(name: string): Record<string, unknown> | undefined {
    return gce.listResources().find((r) => r.kind === "addresses" && r.name === name)?.properties;
  }

  it("reserves an address and waits for its operation: created, counted as addresses.insert", async () => {
    assert.equal(
      await client().insertAddress(PROJECT, REGION, {
        name: "a1",
        description: '{"kubernetes.io/service-name":"default/web"}',
        networkTier: "PREMIUM",
      }),
      "created",
    );
    const a = address("a1");
    assert.deepEqual(
      [a?.address, a?.addressType, a?.networkTier, a?.description],
      ["203.0.113.1", "EXTERNAL", "PREMIUM", '{"kubernetes.io/service-name":"default/web"}'],
    );
    assert.equal(await count("addresses.insert", "200"), 1);
    assert.deepEqual(gce.calls(), { "POST /compute/v1/projects/{project}/regions/{region}/addresses": 1 });
  });

  it("promotes a forwarding rule's ephemeral IP: the new address holds it and the rule keeps it", async () => {
    const rule = gce.insertOutOfBand("forwardingRules", { name: "a1", portRange: "80" });
    assert.equal(rule.properties.ipAddress, "203.0.113.1");
    assert.equal(
      await client().insertAddress(PROJECT, REGION, { name: "a1", address: "203.0.113.1", networkTier: "PREMIUM" }),
      "created",
    );
    assert.equal(address("a1")?.address, "203.0.113.1");
    assert.equal(gce.listResources().find((r) => r.kind === "forwardingRules")?.properties.ipAddress, "203.0.113.1");
  });

  it("a taken name: exists (409 alreadyExists), not retried", async () => {
    gce.insertOutOfBand("addresses", { name: "a1" });
    assert.equal(await client().insertAddress(PROJECT, REGION, { name: "a1", address: "203.0.113.50" }), "exists");
    assert.equal(await count("addresses.insert", "409"), 1);
    assert.equal(address("a1")?.address, "203.0.113.1");
  });

  it("an internal IP another address holds: the failed operation's ComputeError (409 IP_IN_USE_BY_ANOTHER_RESOURCE)", async () => {
    const subnetwork = `projects/${PROJECT}/regions/${REGION}/subnetworks/default`;
    gce.insertOutOfBand("addresses", { name: "held", addressType: "INTERNAL", subnetwork, address: "10.128.0.9" });
    await assert.rejects(
      client().insertAddress(PROJECT, REGION, {
        name: "a1",
        addressType: "INTERNAL",
        subnetwork,
        address: "10.128.0.9",
      }),
      (e: unknown) => {
        assert.ok(e instanceof ComputeError);
        assert.deepEqual(
          [e.status, e.reason, e.message],
          [
            409,
            "IP_IN_USE_BY_ANOTHER_RESOURCE",
            `compute addresses.insert ${ADDRESSES}/a1: HTTP 409: IP '10.128.0.9' is already being used by another resource.`,
          ],
        );
        return true;
      },
    );
    assert.equal(address("a1"), undefined);
  });

  it("one request ID across retries: a lost answer retried gets the first operation back, and one address exists", async () => {
    const requestIds: string[] = [];
    let lose = true;
    const flaky: typeof fetch = async (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      const res = await fetch(input, init);
      if (init?.method === "POST" && url.pathname.endsWith("/addresses")) {
        requestIds.push(url.searchParams.get("requestId") ?? "none");
        if (lose) {
          // The insert happened, but its answer is lost on the way back.
          lose = false;
          return new Response(JSON.stringify({ error: { code: 503, message: "backend error" } }), { status: 503 });
        }
      }
      return res;
    };
    assert.equal(await client(flaky).insertAddress(PROJECT, REGION, { name: "a1" }), "created");
    assert.equal(requestIds.length, 2);
    assert.equal(requestIds[0], requestIds[1]);
    assert.match(requestIds[0] ?? "", /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    assert.deepEqual(
      gce.listResources().map((r) => `${r.kind}/${r.name}`),
      ["addresses/a1"],
    );
    assert.deepEqual([await count("addresses.insert", "503"), await count("addresses.insert", "200")], [1, 1]);
  });
});
