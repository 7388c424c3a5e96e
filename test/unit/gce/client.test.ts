// The Compute client against a small scripted HTTP server on 127.0.0.1: URL shapes, parsing,
// pagination, the typed 404, retries with backoff for 429/5xx/timeouts, and error messages that
// name the call and the instance; then the collection calls (list, get, delete with its Operation)
// with a scripted fetch.

import { describeError } from "../../../runtime/errors";
import * as assert from "node:assert/strict";
import * as http from "node:http";
import type { AddressInfo } from "node:net";

import { Registry } from "prom-client";

import { ComputeClient, ComputeError, isLoopbackEndpoint } from "../../../gce";

interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Never answer (to test the per-attempt timeout). */
  hang?: boolean;
}

class ScriptedServer {
  readonly requests: { path: string; query: URLSearchParams; headers: http.IncomingHttpHeaders }[] = [];
  private readonly server: http.Server;
  private routes: ((path: string, query: URLSearchParams) => Reply | undefined)[] = [];
  endpoint = "";

  constructor() {
    this.server = http.createServer((req, res) => {
      const url = new URL(req.url ?? "/", "http://x");
      this.requests.push({ path: url.pathname, query: url.searchParams, headers: req.headers });
      let reply: Reply | undefined;
      for (const r of this.routes) {
        reply = r(url.pathname, url.searchParams);
        if (reply !== undefined) {
          break;
        }
      }
      reply ??= { status: 500, body: { error: { code: 500, message: `unscripted ${url.pathname}` } } };
      if (reply.hang === true) {
        return;
      }
      res.writeHead(reply.status, { "content-type": "application/json", ...(reply.headers ?? {}) });
      res.end(reply.body === undefined ? "" : JSON.stringify(reply.body));
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    const port = (this.server.address() as AddressInfo).port;
    this.endpoint = `http://127.0.0.1:${port}/compute/v1/`;
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /** Routes are tried newest first. */
  on(route: (path: string, query: URLSearchParams) => Reply | undefined): void {
    this.routes.unshift(route);
  }

  reset(): void {
    this.routes = [];
    this.requests.length = 0;
  }
}

function googleNotFound(resource: string): Reply {
  const message = `The resource '${resource}' was not found`;
  return {
    status: 404,
    body: { error: { code: 404, message, errors: [{ domain: "global", reason: "notFound", message }] } },
  };
}

function rawInstance(project: string, zone: string, name: string, ip = "10.0.0.2"): Record<string, unknown> {
  const base = "https://www.googleapis.com/compute/v1";
  return {
    kind: "compute#instance",
    id: "1234567890",
    name,
    status: "RUNNING",
    zone: `${base}/projects/${project}/zones/${zone}`,
    machineType: `${base}/projects/${project}/zones/${zone}/machineTypes/n2-standard-8`,
    selfLink: `${base}/projects/${project}/zones/${zone}/instances/${name}`,
    networkInterfaces: [
      {
        name: "nic0",
        networkIP: ip,
        stackType: "IPV4_ONLY",
        accessConfigs: [{ type: "ONE_TO_ONE_NAT", natIP: "35.0.0.2" }],
      },
    ],
  };
}

describe("gce/ ComputeClient", () => {
  const srv = new ScriptedServer();
  const sleeps: number[] = [];
  let registry: Registry;

  before(() => srv.start());
  after(() => srv.stop());
  beforeEach(() => {
    srv.reset();
    sleeps.length = 0;
    registry = new Registry();
  });

  function client(extra: Partial<ConstructorParameters<typeof ComputeClient>[0]> = {}): ComputeClient {
    return new ComputeClient({
      endpoint: srv.endpoint,
      registry,
      // Record the backoff instead of waiting it out.
      sleep: async (ms) => {
        sleeps.push(ms);
      },
      random: () => 0.5,
      ...extra,
    });
  }

  async function callCount(call: string, code: string): Promise<number> {
    const m = await registry.getSingleMetric("dccm_compute_calls_total")?.get();
    return m?.values.find((v) => v.labels["call"] === call && v.labels["code"] === code)?.value ?? 0;
  }

  it("needs no credentials for a loopback endpoint", () => {
    assert.equal(isLoopbackEndpoint("http://127.0.0.1:8080/compute/v1/"), true);
    assert.equal(isLoopbackEndpoint("http://localhost:1/compute/v1/"), true);
    assert.equal(isLoopbackEndpoint("https://compute.googleapis.com/compute/v1/"), false);
    assert.equal(isLoopbackEndpoint("http://10.0.0.1/compute/v1/"), false);
  });

  it("gets an instance and keeps only the fields we use", async () => {
    srv.on((p) =>
      p === "/compute/v1/projects/p/zones/us-central1-a/instances/n1"
        ? { status: 200, body: rawInstance("p", "us-central1-a", "n1") }
        : undefined,
    );
    const res = await client().getInstance("p", "us-central1-a", "n1");
    assert.deepEqual(res, {
      kind: "found",
      instance: {
        name: "n1",
        project: "p",
        zone: "us-central1-a",
        machineType: "n2-standard-8",
        status: "RUNNING",
        id: "1234567890",
        networkInterfaces: [
          {
            name: "nic0",
            networkIP: "10.0.0.2",
            stackType: "IPV4_ONLY",
            accessConfigs: [{ natIP: "35.0.0.2" }],
            ipv6AccessConfigs: [],
          },
        ],
      },
    });
    assert.equal(srv.requests[0]?.headers["authorization"], undefined);
    assert.equal(await callCount("instances.get", "200"), 1);
  });

  it("returns notFound (not an error) for Google's 404 naming the instance, without retrying", async () => {
    srv.on(() => googleNotFound("projects/p/zones/us-central1-a/instances/gone"));
    const res = await client().getInstance("p", "us-central1-a", "gone");
    assert.deepEqual(res, { kind: "notFound", project: "p", zone: "us-central1-a", name: "gone" });
    assert.equal(srv.requests.length, 1);
  });

  it("a 404 naming the zone (not the instance) is an error, never notFound", async () => {
    srv.on(() => googleNotFound("projects/p/zones/mars-central1-a"));
    await assert.rejects(client().getInstance("p", "mars-central1-a", "n1"), (err: unknown) => {
      assert.ok(err instanceof ComputeError);
      assert.equal(err.status, 404);
      assert.match(err.message, /instances\.get projects\/p\/zones\/mars-central1-a\/instances\/n1/);
      return true;
    });
  });

  it("retries 503 and 429 with exponential backoff, then succeeds", async () => {
    let n = 0;
    srv.on(() => {
      n++;
      if (n === 1) {
        return { status: 503, body: { error: { code: 503, message: "backend unavailable" } } };
      }
      if (n === 2) {
        return {
          status: 429,
          body: { error: { code: 429, message: "rate", errors: [{ reason: "rateLimitExceeded" }] } },
        };
      }
      if (n === 3) {
        return { status: 500, body: {} };
      }
      return { status: 200, body: rawInstance("p", "us-central1-a", "n1") };
    });
    const res = await client({ retry: { attempts: 5, baseDelayMs: 100, maxDelayMs: 10_000 } }).getInstance(
      "p",
      "us-central1-a",
      "n1",
    );
    assert.equal(res.kind, "found");
    assert.equal(n, 4);
    // Full jitter with random()=0.5: half of 100, 200, 400.
    assert.deepEqual(sleeps, [50, 100, 200]);
    assert.equal(await callCount("instances.get", "503"), 1);
    assert.equal(await callCount("instances.get", "429"), 1);
    assert.equal(await callCount("instances.get", "500"), 1);
    assert.equal(await callCount("instances.get", "200"), 1);
  });

  it("retries GCE's 403 rateLimitExceeded (a spent per-minute rate quota) like a 429; any other 403 is final", async () => {
    let n = 0;
    const rateLimited = {
      error: {
        code: 403,
        message:
          "Quota exceeded for quota metric 'Read requests' and limit 'Read requests per minute' of service 'compute.googleapis.com' for consumer 'project_number:1'.",
        errors: [{ reason: "rateLimitExceeded" }],
      },
    };
    srv.on(() =>
      ++n === 1 ? { status: 403, body: rateLimited } : { status: 200, body: rawInstance("p", "us-central1-a", "n1") },
    );
    const res = await client({ retry: { attempts: 5, baseDelayMs: 100, maxDelayMs: 10_000 } }).getInstance(
      "p",
      "us-central1-a",
      "n1",
    );
    assert.deepEqual([res.kind, n, sleeps], ["found", 2, [50]]);
    n = 0;
    srv.on(() => {
      n++;
      return {
        status: 403,
        body: {
          error: {
            code: 403,
            message: "Required 'compute.instances.get' permission",
            errors: [{ reason: "forbidden" }],
          },
        },
      };
    });
    await assert.rejects(
      client({ retry: { attempts: 5 } }).getInstance("p", "us-central1-a", "n1"),
      (err: unknown) => err instanceof ComputeError && err.status === 403,
    );
    assert.equal(n, 1);
  });

  it("honours Retry-After (capped by maxDelayMs)", async () => {
    let n = 0;
    srv.on(() =>
      ++n === 1
        ? { status: 429, headers: { "retry-after": "3" }, body: {} }
        : { status: 200, body: rawInstance("p", "z-a", "n1") },
    );
    await client({ retry: { maxDelayMs: 2000 } }).getInstance("p", "z-a", "n1");
    assert.deepEqual(sleeps, [2000]);
  });

  it("gives up after the configured attempts with an error naming call, instance and status", async () => {
    srv.on(() => ({ status: 502, body: { error: { code: 502, message: "bad gateway" } } }));
    await assert.rejects(client({ retry: { attempts: 3 } }).getInstance("p", "us-central1-b", "n9"), (err: unknown) => {
      assert.ok(err instanceof ComputeError);
      assert.equal(err.status, 502);
      assert.equal(err.call, "instances.get");
      assert.equal(err.resource, "projects/p/zones/us-central1-b/instances/n9");
      assert.equal(err.attempts, 3);
      assert.match(
        err.message,
        /compute instances\.get projects\/p\/zones\/us-central1-b\/instances\/n9: HTTP 502: bad gateway \(after 3 attempts\)/,
      );
      return true;
    });
    assert.equal(srv.requests.length, 3);
  });

  it("does not retry a permission error", async () => {
    srv.on(() => ({
      status: 403,
      body: {
        error: { code: 403, message: "Required 'compute.instances.get' permission", errors: [{ reason: "forbidden" }] },
      },
    }));
    await assert.rejects(client().getInstance("p", "us-central1-a", "n1"), (err: unknown) => {
      assert.ok(err instanceof ComputeError);
      assert.equal(err.isPermissionDenied, true);
      assert.equal(err.reason, "forbidden");
      return true;
    });
    assert.equal(srv.requests.length, 1);
  });

  it("times out a hanging attempt and retries it", async () => {
    let n = 0;
    srv.on(() => (++n === 1 ? { status: 200, hang: true } : { status: 200, body: rawInstance("p", "z-a", "n1") }));
    const res = await client({ timeoutMs: 200 }).getInstance("p", "z-a", "n1");
    assert.equal(res.kind, "found");
    assert.equal(await callCount("instances.get", "timeout"), 1);
  });

  it("reports a timeout that persists as a ComputeError without status", async () => {
    srv.on(() => ({ status: 200, hang: true }));
    await assert.rejects(
      client({ timeoutMs: 100, retry: { attempts: 2 } }).getInstance("p", "z-a", "n1"),
      (err: unknown) => {
        assert.ok(err instanceof ComputeError);
        assert.equal(err.status, undefined);
        assert.equal(err.isTimeout, true);
        assert.match(err.message, /instances\.get projects\/p\/zones\/z-a\/instances\/n1: no response: timed out/);
        return true;
      },
    );
  });

  it("retries connection errors", async () => {
    const dead = new ComputeClient({
      endpoint: "http://127.0.0.1:9/compute/v1/",
      sleep: async () => undefined,
      retry: { attempts: 2 },
    });
    await assert.rejects(dead.listInstances("p", "z-a"), (err: unknown) => {
      assert.ok(err instanceof ComputeError);
      assert.equal(err.reason, "network");
      assert.equal(err.attempts, 2);
      return true;
    });
  });

  it("stops at once when the caller aborts", async () => {
    srv.on(() => ({ status: 503, body: {} }));
    const ac = new AbortController();
    const c = new ComputeClient({
      endpoint: srv.endpoint,
      sleep: async () => {
        ac.abort(new Error("stopping"));
      },
    });
    await assert.rejects(c.getInstance("p", "z", "n", { signal: ac.signal }), /stopping/);
    assert.equal(srv.requests.length, 1);
  });

  it("pages through instances.list", async () => {
    srv.on((p, q) => {
      if (p !== "/compute/v1/projects/p/zones/z-a/instances") {
        return undefined;
      }
      return q.get("pageToken") === "t2"
        ? { status: 200, body: { items: [rawInstance("p", "z-a", "n3")] } }
        : {
            status: 200,
            body: { items: [rawInstance("p", "z-a", "n1"), rawInstance("p", "z-a", "n2")], nextPageToken: "t2" },
          };
    });
    const list = await client().listInstances("p", "z-a");
    assert.deepEqual(
      list.map((i) => i.name),
      ["n1", "n2", "n3"],
    );
    assert.equal(srv.requests[0]?.query.get("maxResults"), "500");
  });

  it("aggregated list: flattens zones, skips warning scopes, passes the filter, pages", async () => {
    srv.on((p, q) => {
      if (p !== "/compute/v1/projects/p/aggregated/instances") {
        return undefined;
      }
      if (q.get("pageToken") === "next") {
        return {
          status: 200,
          body: { items: { "zones/us-central1-c": { instances: [rawInstance("p", "us-central1-c", "c1")] } } },
        };
      }
      return {
        status: 200,
        body: {
          items: {
            "zones/us-central1-a": { instances: [rawInstance("p", "us-central1-a", "a1")] },
            "zones/us-central1-b": { warning: { code: "NO_RESULTS_ON_PAGE" } },
            "zones/europe-west1-b": { instances: [rawInstance("p", "europe-west1-b", "e1")] },
          },
          nextPageToken: "next",
        },
      };
    });
    const list = await client().aggregatedListInstances("p", 'name = "a1"');
    assert.deepEqual(
      list.map((i) => `${i.zone}/${i.name}`),
      ["us-central1-a/a1", "europe-west1-b/e1", "us-central1-c/c1"],
    );
    assert.equal(srv.requests[0]?.query.get("filter"), 'name = "a1"');
    assert.equal(await callCount("instances.aggregatedList", "200"), 2);
  });

  it("gets a region's zones", async () => {
    srv.on((p) =>
      p === "/compute/v1/projects/p/regions/us-central1"
        ? {
            status: 200,
            body: {
              name: "us-central1",
              zones: [
                "https://x/compute/v1/projects/p/zones/us-central1-a",
                "https://x/compute/v1/projects/p/zones/us-central1-f",
              ],
            },
          }
        : undefined,
    );
    assert.deepEqual(await client().getRegion("p", "us-central1"), {
      name: "us-central1",
      zones: ["us-central1-a", "us-central1-f"],
    });
  });

  it("sends the headers from the auth provider", async () => {
    srv.on(() => ({ status: 200, body: { items: [] } }));
    await client({ auth: async () => ({ authorization: "Bearer t0k" }) }).listInstances("p", "z");
    assert.equal(srv.requests[0]?.headers["authorization"], "Bearer t0k");
  });

  it("an error from the auth provider is a ComputeError naming the call (retried: ADC can be transient)", async () => {
    const c = client({
      retry: { attempts: 2 },
      auth: async () => {
        throw new Error("no ADC");
      },
    });
    await assert.rejects(c.getInstance("p", "z", "n"), (err: unknown) => {
      assert.ok(err instanceof ComputeError);
      assert.match(err.message, /instances\.get projects\/p\/zones\/z\/instances\/n: no response: no ADC/);
      return true;
    });
    assert.equal(srv.requests.length, 0);
  });

  it("no credentials configured at all: one attempt, ADC's text once, no retry count (nothing transient to wait for)", async () => {
    const adc =
      "Could not load the default credentials. Browse to https://cloud.google.com/docs/authentication/getting-started for more information.";
    let asked = 0;
    const c = client({
      retry: { attempts: 5 },
      auth: async () => {
        asked++;
        throw new Error(adc);
      },
    });
    const failure = await c.getInstance("p", "z", "n").then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(failure instanceof ComputeError);
    assert.deepEqual(
      [asked, failure.message, describeError(failure)],
      [
        1,
        `compute instances.get projects/p/zones/z/instances/n: no response: ${adc}`,
        `compute instances.get projects/p/zones/z/instances/n: no response: ${adc}`,
      ],
    );
  });

  it("an auth error that already quotes its cause (as the ADC wrapper does) says the cause once", async () => {
    const adc =
      "Could not load the default credentials. Browse to https://cloud.google.com/docs/authentication/getting-started for more information.";
    const wrapped = `no Google credentials for the Compute API (Application Default Credentials / metadata server): ${adc}`;
    const c = client({
      retry: { attempts: 5 },
      auth: async () => {
        throw new Error(wrapped, { cause: new Error(adc) });
      },
    });
    const failure = await c.getInstance("p", "z", "n").then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(failure instanceof ComputeError);
    assert.deepEqual(
      [failure.message, describeError(failure)],
      [
        `compute instances.get projects/p/zones/z/instances/n: no response: ${wrapped}`,
        `compute instances.get projects/p/zones/z/instances/n: no response: ${wrapped}`,
      ],
    );
  });
});

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

describe("gce/client ComputeClient: collection calls", () => {
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
