/**
 * The Compute client's collection calls (list, get, delete with its Operation) with a scripted
 * fetch, then the leak adapter against the GCE emulator's HTTP face: what it lists, and deletes
 * answered the way GCE answers them.
 */
import * as assert from "node:assert/strict";
import { ComputeClient, ComputeError } from "../../../gce";
import { deleteObserved, exists, listObserved } from "../../../gce/listing";
import { startGceEmulator, type GceEmulator } from "../../../emulator/gce";

const ENDPOINT = "http://127.0.0.1:1/compute/v1/";
const FR = "projects/p/regions/us-central1/forwardingRules/a1";

interface Scripted {
  status: number;
  body: unknown;
}

function scripted(replies: Scripted[]): { client: ComputeClient; requests: string[] } {
  const requests: string[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(String(input));
    const requestId = url.searchParams.get("requestId");
    url.searchParams.delete("requestId");
    requests.push(
      `${init?.method ?? "GET"} ${url.pathname}${url.search}${requestId !== null ? ` requestId=${/^[0-9a-f-]{36}$/.test(requestId) ? requestId : "MALFORMED"}` : ""}`,
    );
    const reply = replies.shift();
    if (reply === undefined) throw new Error(`unscripted ${url.pathname}`);
    return new Response(JSON.stringify(reply.body), {
      status: reply.status,
      headers: { "content-type": "application/json" },
    });
  };
  return {
    client: new ComputeClient({ endpoint: ENDPOINT, fetch, sleep: async () => undefined, random: () => 0 }),
    requests,
  };
}

const op = (status: string, extra: Record<string, unknown> = {}): Scripted => ({
  status: 200,
  body: {
    kind: "compute#operation",
    name: "operation-1",
    status,
    selfLink: "https://compute.googleapis.com/compute/v1/projects/p/regions/us-central1/operations/operation-1",
    ...extra,
  },
});
const inUse =
  "The forwarding_rule resource 'projects/p/regions/us-central1/forwardingRules/a1' is already being used by 'projects/p/regions/us-central1/routes/r1'";

describe("gce/: collection calls", () => {
  it("list: every page's items", async () => {
    const { client, requests } = scripted([
      { status: 200, body: { items: [{ name: "a" }], nextPageToken: "t1" } },
      { status: 200, body: { items: [{ name: "b" }] } },
    ]);
    assert.deepEqual(
      await client.listCollection("forwardingRules.list", "projects/p/regions/us-central1/forwardingRules"),
      [{ name: "a" }, { name: "b" }],
    );
    assert.deepEqual(requests, [
      "GET /compute/v1/projects/p/regions/us-central1/forwardingRules?maxResults=500",
      "GET /compute/v1/projects/p/regions/us-central1/forwardingRules?maxResults=500&pageToken=t1",
    ]);
  });

  it("get: a 404 naming the resource is undefined; one naming something else is an error", async () => {
    const { client } = scripted([
      {
        status: 404,
        body: { error: { code: 404, message: `The resource '${FR}' was not found`, errors: [{ reason: "notFound" }] } },
      },
      {
        status: 404,
        body: {
          error: {
            code: 404,
            message: "The resource 'projects/p/regions/us-central1' was not found",
            errors: [{ reason: "notFound" }],
          },
        },
      },
    ]);
    assert.equal(await client.getResource("forwardingRules.get", FR), undefined);
    await assert.rejects(client.getResource("forwardingRules.get", FR), {
      name: "ComputeError",
      message: `compute forwardingRules.get ${FR}: HTTP 404: The resource 'projects/p/regions/us-central1' was not found`,
    });
  });

  it("delete: one request ID for every retry, then waits until the operation is DONE", async () => {
    const { client, requests } = scripted([
      { status: 503, body: { error: { code: 503, message: "backend error" } } },
      op("PENDING"),
      op("RUNNING"),
      op("DONE"),
    ]);
    assert.equal(await client.deleteResource("forwardingRules.delete", FR), "deleted");
    assert.equal(requests.length, 4);
    const ids = requests.slice(0, 2).map((request) => request.split(" requestId=")[1]);
    assert.equal(ids[0], ids[1]);
    assert.notEqual(ids[0], "MALFORMED");
    assert.deepEqual(
      requests.map((request) => request.split(" requestId=")[0]),
      [
        `DELETE /compute/v1/${FR}`,
        `DELETE /compute/v1/${FR}`,
        "POST /compute/v1/projects/p/regions/us-central1/operations/operation-1/wait",
        "POST /compute/v1/projects/p/regions/us-central1/operations/operation-1/wait",
      ],
    );
  });

  it("delete of what is gone: absent", async () => {
    const { client } = scripted([
      {
        status: 404,
        body: { error: { code: 404, message: `The resource '${FR}' was not found`, errors: [{ reason: "notFound" }] } },
      },
    ]);
    assert.equal(await client.deleteResource("forwardingRules.delete", FR), "absent");
  });

  it("GCE's in-use refusal, synchronous or in the operation: a ComputeError that says so, not retried", async () => {
    const { client, requests } = scripted([
      {
        status: 400,
        body: {
          error: { code: 400, message: inUse, errors: [{ reason: "resourceInUseByAnotherResource", message: inUse }] },
        },
      },
      op("DONE", {
        httpErrorStatusCode: 400,
        error: { errors: [{ code: "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE", message: inUse }] },
      }),
    ]);
    for (let i = 0; i < 2; i++) {
      await assert.rejects(client.deleteResource("forwardingRules.delete", FR), (error: unknown) => {
        assert.ok(error instanceof ComputeError);
        assert.equal(error.isInUse, true);
        assert.equal(error.message, `compute forwardingRules.delete ${FR}: HTTP 400: ${inUse}`);
        return true;
      });
    }
    assert.equal(requests.length, 2);
  });
});

describe("leaks/gce against the emulator", function () {
  let gce: GceEmulator;
  let client: ComputeClient;
  const regional = { project: "dccm-test", region: "us-central1" };

  before(async () => {
    gce = await startGceEmulator();
    client = new ComputeClient({ endpoint: gce.computeEndpoint });
  });
  after(async () => gce?.stop());

  it("lists every collection dccm uses, in the region, its zones and globally, with names and descriptions", async () => {
    gce.state.create("gcp:compute/regionHealthCheck:RegionHealthCheck", {
      ...regional,
      name: "hc",
      description: "d-hc",
      tcpHealthCheck: { port: 80 },
    });
    gce.state.create("gcp:compute/httpHealthCheck:HttpHealthCheck", { project: "dccm-test", name: "legacy" });
    gce.state.create("gcp:compute/instanceGroup:InstanceGroup", {
      project: "dccm-test",
      zone: "us-central1-b",
      name: "k8s-ig--c1",
      description: "d-ig",
    });
    gce.state.create("gcp:compute/address:Address", { ...regional, name: "a1", description: "d-a1" });
    gce.state.create("gcp:compute/forwardingRule:ForwardingRule", {
      ...regional,
      name: "a1",
      ipAddress: "a1",
      portRange: "80",
      description: "d-fr",
    });
    gce.state.create("gcp:compute/firewall:Firewall", {
      project: "dccm-test",
      name: "k8s-fw-a1",
      network: "default",
      allows: [{ protocol: "tcp" }],
      sourceRanges: ["0.0.0.0/0"],
    });
    // Not a region of ours: not listed.
    gce.state.create("gcp:compute/address:Address", { project: "dccm-test", region: "europe-west1", name: "far" });
    const observed = await listObserved(client, "dccm-test", "us-central1");
    assert.deepEqual(
      observed.map((r) => `${r.kind}/${r.scope}/${r.name} ${JSON.stringify(r.description)}`),
      [
        'forwardingRules/us-central1/a1 "d-fr"',
        'healthChecks/us-central1/hc "d-hc"',
        'httpHealthChecks/global/legacy ""',
        'addresses/us-central1/a1 "d-a1"',
        'instanceGroups/us-central1-b/k8s-ig--c1 "d-ig"',
        'firewalls/global/k8s-fw-a1 ""',
      ],
    );
  });

  it("deletes users first; what is in use is refused with GCE's message; what is gone is absent", async () => {
    gce.state.create("gcp:compute/targetPool:TargetPool", { ...regional, name: "tp", healthChecks: "legacy" });
    const check = { kind: "httpHealthChecks" as const, scope: "global", name: "legacy", description: "" };
    const pool = { kind: "targetPools" as const, scope: "us-central1", name: "tp", description: "" };
    await assert.rejects(deleteObserved(client, "dccm-test", check), {
      message:
        "compute httpHealthChecks.delete projects/dccm-test/global/httpHealthChecks/legacy: HTTP 400: " +
        "The http_health_check resource 'projects/dccm-test/global/httpHealthChecks/legacy' is already being used by 'projects/dccm-test/regions/us-central1/targetPools/tp'",
    });
    assert.equal(await deleteObserved(client, "dccm-test", pool), "deleted");
    assert.equal(await deleteObserved(client, "dccm-test", check), "deleted");
    assert.equal(await deleteObserved(client, "dccm-test", check), "absent");
    assert.equal(await exists(client, "dccm-test", check), false);
    // An address its forwarding rule uses is released, as on GCE: the rule keeps the IP, now ephemeral.
    const address = { kind: "addresses" as const, scope: "us-central1", name: "a1", description: "" };
    assert.equal(await deleteObserved(client, "dccm-test", address), "deleted");
    assert.equal(
      await exists(client, "dccm-test", { kind: "forwardingRules", scope: "us-central1", name: "a1", description: "" }),
      true,
    );
    assert.equal(
      await exists(client, "dccm-test", { kind: "firewalls", scope: "global", name: "k8s-fw-a1", description: "" }),
      true,
    );
    assert.deepEqual(
      Object.entries(gce.calls()).filter(([call]) => call.startsWith("DELETE")),
      [
        ["DELETE /compute/v1/projects/{project}/global/httpHealthChecks/{name}", 3],
        ["DELETE /compute/v1/projects/{project}/regions/{region}/addresses/{name}", 1],
        ["DELETE /compute/v1/projects/{project}/regions/{region}/targetPools/{name}", 1],
      ],
    );
  });
});
