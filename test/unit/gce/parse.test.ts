// Table tests of the Compute client's pure parsing (gce/parse.ts): response bodies →
// typed values, Google's error bodies, the 404 that names the resource, Retry-After, Operations.

import * as assert from "node:assert/strict";

import { ComputeError, type Instance } from "../../../gce";
import {
  lastSegment,
  listItems,
  namesResource,
  nextPageToken,
  operationFailure,
  operationPath,
  operationStatus,
  parseAggregatedInstances,
  parseGoogleError,
  parseInstance,
  parseInstanceList,
  parseRegion,
  parseRetryAfter,
  parseQuotaExceeded,
} from "../../../gce/parse";

const BASE = "https://www.googleapis.com/compute/v1";
const ORIGIN = { call: "instances.get", resource: "projects/p/zones/us-central1-a/instances/n1" } as const;

describe("gce//parse", () => {
  describe("parseInstance", () => {
    const cases: {
      name: string;
      raw: unknown;
      fallback: { project: string; zone: string | undefined };
      want: Instance;
    }[] = [
      {
        name: "full body: project and zone from the URLs, ids as strings, only the fields we use",
        raw: {
          kind: "compute#instance",
          id: 1234567890,
          name: "n1",
          status: "RUNNING",
          zone: `${BASE}/projects/other/zones/us-central1-b`,
          machineType: `${BASE}/projects/other/zones/us-central1-b/machineTypes/n2-standard-8`,
          selfLink: `${BASE}/projects/other/zones/us-central1-b/instances/n1`,
          networkInterfaces: [
            {
              name: "nic0",
              networkIP: "10.0.0.2",
              ipv6Address: "fd20::2",
              stackType: "IPV4_IPV6",
              subnetwork: `${BASE}/projects/other/regions/us-central1/subnetworks/k8s-subnet-2`,
              accessConfigs: [{ type: "ONE_TO_ONE_NAT", natIP: "35.0.0.2" }, { type: "ONE_TO_ONE_NAT" }],
              ipv6AccessConfigs: [{ externalIpv6: "2600::2" }],
              aliasIpRanges: [
                { ipCidrRange: "10.4.1.0/24", subnetworkRangeName: "pods" },
                { ipCidrRange: "10.0.0.64/28" },
                { ipCidrRange: "" },
                "junk",
              ],
            },
            { networkIP: "", accessConfigs: "junk", aliasIpRanges: "junk" },
          ],
        },
        fallback: { project: "p", zone: "us-central1-a" },
        want: {
          name: "n1",
          project: "other",
          zone: "us-central1-b",
          machineType: "n2-standard-8",
          networkInterfaces: [
            {
              name: "nic0",
              networkIP: "10.0.0.2",
              ipv6Address: "fd20::2",
              stackType: "IPV4_IPV6",
              subnetwork: "k8s-subnet-2",
              accessConfigs: [{ natIP: "35.0.0.2" }, {}],
              ipv6AccessConfigs: [{ externalIpv6: "2600::2" }],
              aliasIpRanges: [
                { ipCidrRange: "10.4.1.0/24", subnetworkRangeName: "pods" },
                { ipCidrRange: "10.0.0.64/28" },
              ],
            },
            { accessConfigs: [], ipv6AccessConfigs: [] },
          ],
          status: "RUNNING",
          id: "1234567890",
        },
      },
      {
        name: "bare body: project and zone from where it was asked, no machine type",
        raw: { name: "n1" },
        fallback: { project: "p", zone: "us-central1-a" },
        want: { name: "n1", project: "p", zone: "us-central1-a", machineType: "", networkInterfaces: [] },
      },
      {
        name: "zone from the selfLink when the zone field is missing",
        raw: { name: "n1", selfLink: `${BASE}/projects/q/zones/europe-west4-c/instances/n1` },
        fallback: { project: "p", zone: undefined },
        want: { name: "n1", project: "q", zone: "europe-west4-c", machineType: "", networkInterfaces: [] },
      },
    ];
    for (const c of cases) {
      it(c.name, () => assert.deepEqual(parseInstance(c.raw, c.fallback, ORIGIN), c.want));
    }

    const bad: { name: string; raw: unknown; message: string }[] = [
      {
        name: "no name",
        raw: { zone: "z" },
        message: "compute instances.get projects/p/zones/us-central1-a/instances/n1: HTTP 200: instance without a name",
      },
      {
        name: "not an object",
        raw: ["n1"],
        message: "compute instances.get projects/p/zones/us-central1-a/instances/n1: HTTP 200: instance without a name",
      },
      {
        name: "no zone anywhere",
        raw: { name: "n1" },
        message:
          "compute instances.get projects/p/zones/us-central1-a/instances/n1: HTTP 200: instance n1 without a zone",
      },
    ];
    for (const c of bad) {
      it(`${c.name} → ComputeError badResponse`, () => {
        assert.throws(
          () => parseInstance(c.raw, { project: "p", zone: undefined }, ORIGIN),
          (err: unknown) => {
            assert.ok(err instanceof ComputeError);
            assert.equal(err.message, c.message);
            assert.equal(err.reason, "badResponse");
            assert.equal(err.status, 200);
            return true;
          },
        );
      });
    }
  });

  it("parseInstanceList: every item, in the asked zone", () => {
    const got = parseInstanceList(
      { items: [{ name: "a" }, { name: "b" }], nextPageToken: "t" },
      "p",
      "us-central1-a",
      ORIGIN,
    );
    assert.deepEqual(
      got.map((i) => `${i.project}/${i.zone}/${i.name}`),
      ["p/us-central1-a/a", "p/us-central1-a/b"],
    );
    assert.deepEqual(parseInstanceList({}, "p", "us-central1-a", ORIGIN), []);
  });

  it("parseAggregatedInstances: zone scopes flattened, warning-only scopes skipped", () => {
    const body = {
      items: {
        "zones/us-central1-a": { instances: [{ name: "a" }] },
        "zones/us-central1-b": { warning: { code: "NO_RESULTS_ON_PAGE" } },
        "zones/us-central1-c": {
          instances: [{ name: "c1" }, { name: "c2", zone: `${BASE}/projects/p/zones/us-central1-f` }],
        },
      },
    };
    assert.deepEqual(
      parseAggregatedInstances(body, "p", ORIGIN).map((i) => `${i.zone}/${i.name}`),
      ["us-central1-a/a", "us-central1-c/c1", "us-central1-f/c2"],
    );
    assert.deepEqual(parseAggregatedInstances({ items: "junk" }, "p", ORIGIN), []);
  });

  describe("parseRegion", () => {
    const cases: { name: string; body: unknown; want: { name: string; zones: string[] } }[] = [
      {
        name: "zone URLs → names",
        body: {
          name: "us-central1",
          zones: [`${BASE}/projects/p/zones/us-central1-a`, `${BASE}/projects/p/zones/us-central1-b/`, 7],
        },
        want: { name: "us-central1", zones: ["us-central1-a", "us-central1-b"] },
      },
      { name: "no name, no zones → the asked name, none", body: {}, want: { name: "asked", zones: [] } },
    ];
    for (const c of cases) {
      it(c.name, () => assert.deepEqual(parseRegion(c.body, "asked"), c.want));
    }
  });

  describe("parseGoogleError", () => {
    const cases: [string, { message?: string; reason?: string }][] = [
      [
        JSON.stringify({
          error: { code: 403, message: "denied", errors: [{ reason: "forbidden", message: "denied" }] },
        }),
        { message: "denied", reason: "forbidden" },
      ],
      [
        JSON.stringify({ error: { code: 429, message: "slow down", status: "RESOURCE_EXHAUSTED" } }),
        { message: "slow down", reason: "RESOURCE_EXHAUSTED" },
      ],
      [JSON.stringify({ error: "flat" }), {}],
      ["<html>bad gateway</html>", {}],
      ["", {}],
    ];
    for (const [text, want] of cases) {
      it(`${JSON.stringify(text).slice(0, 60)} → ${JSON.stringify(want)}`, () =>
        assert.deepEqual(parseGoogleError(text), want));
    }
  });

  describe("namesResource", () => {
    const r = "projects/p/zones/us-central1-a/instances/n1";
    const cases: [string | undefined, boolean][] = [
      [`The resource '${r}' was not found`, true],
      [`The resource '${BASE}/${r}' was not found`, true],
      ["The resource 'projects/p/zones/us-central1-z' was not found", false],
      ["Unknown zone.", true],
      [undefined, true],
    ];
    for (const [message, want] of cases) {
      it(`${String(message)} → ${want}`, () => assert.equal(namesResource(r, message), want));
    }
  });

  describe("parseQuotaExceeded", () => {
    const rows: Array<[string, ReturnType<typeof parseQuotaExceeded>]> = [
      [
        "Error creating Address: googleapi: Error 403: Quota 'STATIC_ADDRESSES' exceeded. Limit: 8.0 in region us-central1., quotaExceeded",
        { quota: "STATIC_ADDRESSES", limit: 8, region: "us-central1" },
      ],
      ["Quota 'ROUTES' exceeded.  Limit: 250.0 globally.", { quota: "ROUTES", limit: 250 }],
      [
        "Quota 'INTERNAL_ADDRESSES' exceeded. Limit: 0.0 in region europe-west1.",
        { quota: "INTERNAL_ADDRESSES", limit: 0, region: "europe-west1" },
      ],
      [
        "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service 'compute.googleapis.com' for consumer 'project_number:1'.",
        undefined,
      ],
      ["googleapi: Error 403: Required 'compute.addresses.create' permission, forbidden", undefined],
      ["", undefined],
    ];
    for (const [text, want] of rows) {
      it(`${JSON.stringify(text.slice(0, 60))} → ${JSON.stringify(want)}`, () =>
        assert.deepEqual(parseQuotaExceeded(text), want));
    }
  });

  describe("parseRetryAfter", () => {
    const now = Date.parse("2025-01-01T00:00:00Z");
    const cases: [string | null, number | undefined][] = [
      [null, undefined],
      ["3", 3000],
      ["0", 0],
      ["1.5", 1500],
      // Not a count of seconds; V8's Date.parse reads it as a year long past: no wait.
      ["-1", 0],
      ["Wed, 01 Jan 2025 00:00:07 GMT", 7000],
      ["Tue, 31 Dec 2024 23:59:00 GMT", 0],
      ["soon", undefined],
    ];
    for (const [header, want] of cases) {
      it(`${String(header)} → ${String(want)}`, () => assert.equal(parseRetryAfter(header, now), want));
    }
  });

  describe("Operations", () => {
    const cases: { name: string; op: unknown; path: ReturnType<typeof operationPath> }[] = [
      {
        name: "regional",
        op: { selfLink: `${BASE}/projects/p/regions/us-central1/operations/op-1` },
        path: { path: "projects/p/regions/us-central1/operations/op-1", call: "regionOperations.wait" },
      },
      {
        name: "zonal",
        op: { selfLink: `${BASE}/projects/p/zones/us-central1-a/operations/op-2` },
        path: { path: "projects/p/zones/us-central1-a/operations/op-2", call: "zoneOperations.wait" },
      },
      {
        name: "global",
        op: { selfLink: `${BASE}/projects/p/global/operations/op-3` },
        path: { path: "projects/p/global/operations/op-3", call: "globalOperations.wait" },
      },
      { name: "no selfLink", op: { status: "RUNNING" }, path: undefined },
      { name: "not an operation link", op: { selfLink: `${BASE}/projects/p/global/firewalls/f` }, path: undefined },
    ];
    for (const c of cases) {
      it(`operationPath: ${c.name}`, () => assert.deepEqual(operationPath(c.op), c.path));
    }

    it("operationFailure: the first error with its HTTP status; none without errors", () => {
      const op = {
        status: "DONE",
        httpErrorStatusCode: 400,
        error: { errors: [{ code: "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE", message: "in use by x" }, { code: "OTHER" }] },
      };
      assert.deepEqual(operationFailure(op), {
        status: 400,
        reason: "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE",
        message: "in use by x",
      });
      assert.deepEqual(operationFailure({ status: "DONE", error: { errors: [{}] } }), {
        status: undefined,
        reason: "operationFailed",
        message: "the operation failed",
      });
      assert.equal(operationFailure({ status: "DONE" }), undefined);
      assert.equal(operationStatus({ status: "DONE" }), "DONE");
      assert.equal(operationStatus("DONE"), undefined);
    });
  });

  it("list pages: items and the next token (an empty token ends the list)", () => {
    assert.deepEqual(listItems({ items: [1, { a: 2 }] }), [1, { a: 2 }]);
    assert.deepEqual(listItems({ items: {} }), []);
    assert.equal(nextPageToken({ nextPageToken: "abc" }), "abc");
    assert.equal(nextPageToken({ nextPageToken: "" }), undefined);
    assert.equal(nextPageToken({}), undefined);
  });

  it("lastSegment", () => {
    assert.equal(lastSegment(`${BASE}/projects/p/zones/us-central1-a`), "us-central1-a");
    assert.equal(lastSegment("a/b/"), "b");
    assert.equal(lastSegment("plain"), "plain");
  });
});
