// The emulator's Compute REST face (http.ts, computeRoutes.ts, rest.ts): reads, lists, paging, errors.

import * as assert from "node:assert/strict";

import { type GceEmulator, startGceEmulator } from "../index";
import type { JsonObject } from "../json";
import { PROJECT, REGION, NOW, FIREWALL, getJson, createLoadBalancer } from "./emulatorFixtures";

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

  describe("Compute REST face", function () {
    function instanceJson(name: string, zone: string, networkIP: string): JsonObject {
      return {
        kind: "compute#instance",
        id: "",
        creationTimestamp: NOW,
        name,
        zone: link(`zones/${zone}`),
        machineType: link(`zones/${zone}/machineTypes/e2-standard-2`),
        status: "RUNNING",
        networkInterfaces: [
          {
            name: "nic0",
            network: link("global/networks/default"),
            subnetwork: link("regions/us-central1/subnetworks/default"),
            networkIP,
            accessConfigs: [],
          },
        ],
        tags: { fingerprint: "T1PNoYwrqgw=" },
        selfLink: link(`zones/${zone}/instances/${name}`),
      };
    }

    it("GET instance: the instance, or Google's 404 body", async function () {
      gce.putInstance("node-1", {
        zone: "us-central1-b",
        machineType: "n2-standard-4",
        status: "STAGING",
        networkInterfaces: [
          { networkIP: "10.128.0.21", ipv6Address: "fd20::21", accessConfigs: [{ natIP: "34.68.10.21" }] },
        ],
        tags: ["node", "k8s"],
      });
      const found = await getJson(`${gce.computeEndpoint}projects/${PROJECT}/zones/us-central1-b/instances/node-1`);
      assert.deepEqual(found, {
        status: 200,
        body: {
          kind: "compute#instance",
          id: "1000000000000000001",
          creationTimestamp: NOW,
          name: "node-1",
          zone: link("zones/us-central1-b"),
          machineType: link("zones/us-central1-b/machineTypes/n2-standard-4"),
          status: "STAGING",
          networkInterfaces: [
            {
              name: "nic0",
              network: link("global/networks/default"),
              subnetwork: link("regions/us-central1/subnetworks/default"),
              networkIP: "10.128.0.21",
              ipv6Address: "fd20::21",
              accessConfigs: [
                { kind: "compute#accessConfig", type: "ONE_TO_ONE_NAT", name: "External NAT", natIP: "34.68.10.21" },
              ],
            },
          ],
          tags: { fingerprint: "5WFJXpose4I=", items: ["node", "k8s"] },
          selfLink: link("zones/us-central1-b/instances/node-1"),
        },
      });
      assert.deepEqual(await getJson(`${gce.computeEndpoint}projects/p/zones/z/instances/n`), {
        status: 404,
        body: {
          error: {
            code: 404,
            message: "The resource 'projects/p/zones/z/instances/n' was not found",
            errors: [{ reason: "notFound" }],
          },
        },
      });
    });

    it("lists a zone's instances and the aggregated list with maxResults/pageToken paging", async function () {
      for (const [name, zone] of [
        ["n3", "us-central1-a"],
        ["n1", "us-central1-a"],
        ["n2", "us-central1-a"],
        ["m1", "us-central1-b"],
      ] as const) {
        gce.putInstance(name, { zone });
      }
      const ids = new Map(gce.listResources().map((r) => [r.name, r.properties.id ?? null]));
      const inst = (name: string, zone: string, ip: string): JsonObject => ({
        ...instanceJson(name, zone, ip),
        id: ids.get(name) ?? null,
      });
      const base = `${gce.computeEndpoint}projects/${PROJECT}`;

      const first = await getJson(`${base}/zones/us-central1-a/instances?maxResults=2`);
      assert.equal(first.status, 200);
      assert.ok(typeof first.body === "object" && first.body !== null && !Array.isArray(first.body));
      const token = first.body.nextPageToken;
      assert.equal(typeof token, "string");
      assert.deepEqual(first.body, {
        kind: "compute#instanceList",
        id: `projects/${PROJECT}/zones/us-central1-a/instances`,
        items: [inst("n1", "us-central1-a", "10.128.0.3"), inst("n2", "us-central1-a", "10.128.0.4")],
        selfLink: link("zones/us-central1-a/instances"),
        nextPageToken: token ?? null,
      });
      const second = await getJson(`${base}/zones/us-central1-a/instances?maxResults=2&pageToken=${String(token)}`);
      assert.deepEqual(second.body, {
        kind: "compute#instanceList",
        id: `projects/${PROJECT}/zones/us-central1-a/instances`,
        items: [inst("n3", "us-central1-a", "10.128.0.2")],
        selfLink: link("zones/us-central1-a/instances"),
      });

      const warning = (scope: string): JsonObject => ({
        warning: {
          code: "NO_RESULTS_ON_PAGE",
          message: `There are no results for scope '${scope}' on this page.`,
          data: [{ key: "scope", value: scope }],
        },
      });
      const agg1 = await getJson(`${base}/aggregated/instances?maxResults=3`);
      assert.ok(typeof agg1.body === "object" && agg1.body !== null && !Array.isArray(agg1.body));
      const aggToken = agg1.body.nextPageToken;
      assert.equal(typeof aggToken, "string");
      assert.deepEqual(agg1.body, {
        kind: "compute#instanceAggregatedList",
        id: `projects/${PROJECT}/aggregated/instances`,
        items: {
          "zones/us-central1-a": {
            instances: [
              inst("n1", "us-central1-a", "10.128.0.3"),
              inst("n2", "us-central1-a", "10.128.0.4"),
              inst("n3", "us-central1-a", "10.128.0.2"),
            ],
          },
          "zones/us-central1-b": warning("zones/us-central1-b"),
          "zones/us-central1-c": warning("zones/us-central1-c"),
        },
        selfLink: link("aggregated/instances"),
        nextPageToken: aggToken ?? null,
      });
      const agg2 = await getJson(`${base}/aggregated/instances?maxResults=3&pageToken=${String(aggToken)}`);
      assert.deepEqual(agg2.body, {
        kind: "compute#instanceAggregatedList",
        id: `projects/${PROJECT}/aggregated/instances`,
        items: {
          "zones/us-central1-a": warning("zones/us-central1-a"),
          "zones/us-central1-b": { instances: [inst("m1", "us-central1-b", "10.128.0.5")] },
          "zones/us-central1-c": warning("zones/us-central1-c"),
        },
        selfLink: link("aggregated/instances"),
      });
      const filtered = await getJson(`${base}/aggregated/instances?filter=${encodeURIComponent('name = "m1"')}`);
      assert.ok(typeof filtered.body === "object" && filtered.body !== null && !Array.isArray(filtered.body));
      assert.deepEqual(filtered.body.items, {
        "zones/us-central1-a": warning("zones/us-central1-a"),
        "zones/us-central1-b": { instances: [inst("m1", "us-central1-b", "10.128.0.5")] },
        "zones/us-central1-c": warning("zones/us-central1-c"),
      });

      assert.deepEqual(gce.calls(), {
        "GET /compute/v1/projects/{project}/aggregated/instances": 3,
        "GET /compute/v1/projects/{project}/zones/{zone}/instances": 2,
      });
    });

    it("GET region and zone", async function () {
      assert.deepEqual(await getJson(`${gce.computeEndpoint}projects/${PROJECT}/regions/${REGION}`), {
        status: 200,
        body: {
          kind: "compute#region",
          name: REGION,
          description: REGION,
          status: "UP",
          zones: [link("zones/us-central1-a"), link("zones/us-central1-b"), link("zones/us-central1-c")],
          quotas: [
            { metric: "STATIC_ADDRESSES", limit: 1_000_000, usage: 0 },
            { metric: "INTERNAL_ADDRESSES", limit: 1_000_000, usage: 0 },
          ],
          selfLink: link(`regions/${REGION}`),
        },
      });
      assert.deepEqual(await getJson(`${gce.computeEndpoint}projects/${PROJECT}/zones/us-central1-c`), {
        status: 200,
        body: {
          kind: "compute#zone",
          name: "us-central1-c",
          description: "us-central1-c",
          status: "UP",
          region: link(`regions/${REGION}`),
          selfLink: link("zones/us-central1-c"),
        },
      });
      assert.equal((await getJson(`${gce.computeEndpoint}projects/${PROJECT}/regions/mars-north1`)).status, 404);
    });

    it("serves the managed collections at their REST paths, with REST field names", async function () {
      createLoadBalancer(gce, "lb-1");
      gce.state.create(FIREWALL, {
        project: PROJECT,
        name: "fw",
        network: "default",
        allows: [{ protocol: "tcp", ports: ["80"] }],
        sourceRanges: ["0.0.0.0/0"],
      });
      const fr = await getJson(`${gce.computeEndpoint}projects/${PROJECT}/regions/${REGION}/forwardingRules/lb-1`);
      assert.equal(fr.status, 200);
      assert.ok(typeof fr.body === "object" && fr.body !== null && !Array.isArray(fr.body));
      assert.equal(fr.body.kind, "compute#forwardingRule");
      assert.equal(fr.body.IPAddress, "10.128.0.2");
      assert.equal(fr.body.IPProtocol, "TCP");
      assert.equal(fr.body.region, link(`regions/${REGION}`));
      const fw = await getJson(`${gce.computeEndpoint}projects/${PROJECT}/global/firewalls/fw`);
      assert.ok(typeof fw.body === "object" && fw.body !== null && !Array.isArray(fw.body));
      assert.deepEqual(fw.body.allowed, [{ IPProtocol: "tcp", ports: ["80"] }]);
      assert.equal(fw.body.priority, 1000);
      gce.state.create(FIREWALL, {
        project: PROJECT,
        name: "deny",
        network: "default",
        denies: [{ protocol: "all" }],
        sourceRanges: ["0.0.0.0/0"],
        destinationRanges: ["203.0.113.7"],
      });
      const deny = await getJson(`${gce.computeEndpoint}projects/${PROJECT}/global/firewalls/deny`);
      assert.ok(typeof deny.body === "object" && deny.body !== null && !Array.isArray(deny.body));
      assert.deepEqual(
        [deny.body.denied, deny.body.destinationRanges, deny.body.priority, "denies" in deny.body],
        [[{ IPProtocol: "all" }], ["203.0.113.7"], 1000, false],
      );
      const bsList = await getJson(`${gce.computeEndpoint}projects/${PROJECT}/regions/${REGION}/backendServices`);
      assert.ok(typeof bsList.body === "object" && bsList.body !== null && !Array.isArray(bsList.body));
      assert.equal(bsList.body.kind, "compute#backendServiceList");
      assert.deepEqual(
        Array.isArray(bsList.body.items)
          ? bsList.body.items.map((i) =>
              typeof i === "object" && i !== null && !Array.isArray(i) ? (i.healthChecks ?? null) : null,
            )
          : [],
        [[link(`regions/${REGION}/healthChecks/lb-1`)]],
      );
      assert.equal((await getJson(`${gce.computeEndpoint}projects/${PROJECT}/global/routes/nope`)).status, 404);
    });

    it("test endpoints: list, PATCH and DELETE out of band, PUT instances", async function () {
      const put = await getJson(`${gce.endpoint}/emulator/instances/${PROJECT}/us-central1-a/node-9`, {
        method: "PUT",
        body: JSON.stringify({ networkInterfaces: [{ networkIP: "10.128.0.9" }] }),
      });
      assert.equal(put.status, 200);
      gce.state.create(FIREWALL, {
        project: PROJECT,
        name: "fw",
        network: "default",
        allows: [{ protocol: "tcp" }],
        sourceRanges: ["0.0.0.0/0"],
      });
      const patched = await getJson(`${gce.endpoint}/emulator/resources/firewalls/${PROJECT}/global/fw`, {
        method: "PATCH",
        body: JSON.stringify({ priority: 10, description: null }),
      });
      assert.equal(patched.status, 200);
      const listed = await getJson(`${gce.endpoint}/emulator/resources`);
      assert.ok(Array.isArray(listed.body));
      assert.deepEqual(
        listed.body.map((r) =>
          typeof r === "object" && r !== null && !Array.isArray(r)
            ? [r.kind ?? null, r.project ?? null, r.scope ?? null, r.name ?? null]
            : null,
        ),
        [
          ["firewalls", PROJECT, "global", "fw"],
          ["instances", PROJECT, "us-central1-a", "node-9"],
        ],
      );
      assert.equal(gce.listResources()[0]?.properties.priority, 10);
      assert.equal(
        (await getJson(`${gce.endpoint}/emulator/resources/firewalls/${PROJECT}/global/fw`, { method: "DELETE" }))
          .status,
        200,
      );
      assert.equal(
        (await getJson(`${gce.endpoint}/emulator/instances/${PROJECT}/us-central1-a/node-9`, { method: "DELETE" }))
          .status,
        200,
      );
      assert.deepEqual(gce.listResources(), []);
      assert.deepEqual(gce.calls(), {});
    });
  });
});
