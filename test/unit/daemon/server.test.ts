// The probe/metrics listener: GET and HEAD on /healthz, /readyz, /metrics, /status; 405 for other methods there; 404 elsewhere.
import * as assert from "node:assert/strict";
import * as http from "node:http";
import * as prom from "prom-client";
import { startProbeServer, type ProbeServer } from "../../../daemon/server";
import type { StatusDocument } from "../../../controllers/status";

interface Answer {
  status: number;
  allow: string | undefined;
  contentType: string | undefined;
  body: string;
}

function request(port: number, method: string, urlPath: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, method, path: urlPath }, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => (body += chunk));
      response.on("end", () =>
        resolve({
          status: response.statusCode ?? 0,
          allow: response.headers.allow,
          contentType: response.headers["content-type"],
          body,
        }),
      );
    });
    req.on("error", reject);
    req.end();
  });
}

describe("daemon/server: probe and metrics listener", () => {
  let server: ProbeServer;
  let ready = false;
  const registry = new prom.Registry();
  new prom.Gauge({ name: "dccm_test_gauge", help: "a gauge for the test", registers: [registry] }).set(7);
  const status: StatusDocument = {
    leader: true,
    synced: false,
    stacks: [
      {
        stack: "cluster",
        kind: "cluster",
        service: null,
        lastUp: { at: "2026-11-23T18:00:00.000Z", operation: "up", result: "ok", durationMs: 2100 },
        ingress: null,
        lastDriftCorrection: null,
        lastError: null,
      },
    ],
  };
  const STATUS_BODY =
    '{"leader":true,"synced":false,"stacks":[{"stack":"cluster","kind":"cluster","service":null,' +
    '"lastUp":{"at":"2026-11-23T18:00:00.000Z","operation":"up","result":"ok","durationMs":2100},"ingress":null,"lastDriftCorrection":null,"lastError":null}]}\n';

  before(async () => {
    server = await startProbeServer(
      "127.0.0.1",
      0,
      registry,
      () => ready,
      () => status,
    );
  });
  after(async () => {
    await server.close();
  });

  const TEXT = "text/plain";
  const cases: [string, string, Answer][] = [
    ["GET", "/healthz", { status: 200, allow: undefined, contentType: TEXT, body: "ok\n" }],
    ["HEAD", "/healthz", { status: 200, allow: undefined, contentType: TEXT, body: "" }],
    ["GET", "/healthz?verbose", { status: 200, allow: undefined, contentType: TEXT, body: "ok\n" }],
    ["GET", "/readyz", { status: 503, allow: undefined, contentType: TEXT, body: "not ready\n" }],
    ["HEAD", "/readyz", { status: 503, allow: undefined, contentType: TEXT, body: "" }],
    ["POST", "/healthz", { status: 405, allow: "GET, HEAD", contentType: TEXT, body: "method not allowed\n" }],
    ["PUT", "/readyz", { status: 405, allow: "GET, HEAD", contentType: TEXT, body: "method not allowed\n" }],
    ["DELETE", "/metrics", { status: 405, allow: "GET, HEAD", contentType: TEXT, body: "method not allowed\n" }],
    ["OPTIONS", "/metrics", { status: 405, allow: "GET, HEAD", contentType: TEXT, body: "method not allowed\n" }],
    ["PATCH", "/healthz", { status: 405, allow: "GET, HEAD", contentType: TEXT, body: "method not allowed\n" }],
    ["GET", "/status", { status: 200, allow: undefined, contentType: "application/json", body: STATUS_BODY }],
    [
      "GET",
      "/status?stack=cluster",
      { status: 200, allow: undefined, contentType: "application/json", body: STATUS_BODY },
    ],
    ["HEAD", "/status", { status: 200, allow: undefined, contentType: "application/json", body: "" }],
    ["PUT", "/status", { status: 405, allow: "GET, HEAD", contentType: TEXT, body: "method not allowed\n" }],
    ["POST", "/status", { status: 405, allow: "GET, HEAD", contentType: TEXT, body: "method not allowed\n" }],
    ["DELETE", "/status", { status: 405, allow: "GET, HEAD", contentType: TEXT, body: "method not allowed\n" }],
    ["GET", "/status/", { status: 404, allow: undefined, contentType: TEXT, body: "not found\n" }],
    ["GET", "/", { status: 404, allow: undefined, contentType: TEXT, body: "not found\n" }],
    ["GET", "/healthz/", { status: 404, allow: undefined, contentType: TEXT, body: "not found\n" }],
    ["GET", "/debug/pprof", { status: 404, allow: undefined, contentType: TEXT, body: "not found\n" }],
    ["POST", "/anything", { status: 404, allow: undefined, contentType: TEXT, body: "not found\n" }],
    ["HEAD", "/nothing", { status: 404, allow: undefined, contentType: TEXT, body: "" }],
  ];
  for (const [method, urlPath, expected] of cases) {
    it(`${method} ${urlPath} → ${expected.status}`, async () => {
      assert.deepStrictEqual(await request(server.address.port, method, urlPath), expected);
    });
  }

  it("GET /readyz → 200 ok once ready", async () => {
    ready = true;
    try {
      assert.deepStrictEqual(await request(server.address.port, "GET", "/readyz"), {
        status: 200,
        allow: undefined,
        contentType: TEXT,
        body: "ok\n",
      });
    } finally {
      ready = false;
    }
  });

  it("GET /metrics → 200 with the registry's exposition", async () => {
    assert.deepStrictEqual(await request(server.address.port, "GET", "/metrics"), {
      status: 200,
      allow: undefined,
      contentType: registry.contentType,
      body: "# HELP dccm_test_gauge a gauge for the test\n# TYPE dccm_test_gauge gauge\ndccm_test_gauge 7\n",
    });
  });

  it("HEAD /metrics → 200 with the exposition's content type and no body", async () => {
    assert.deepStrictEqual(await request(server.address.port, "HEAD", "/metrics"), {
      status: 200,
      allow: undefined,
      contentType: registry.contentType,
      body: "",
    });
  });
});
