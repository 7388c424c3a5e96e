// The Pulumi provider operations over the emulator's state (provider-api.ts): check, diff, create, read, update, delete.

import * as assert from "node:assert/strict";

import { type GceEmulator, ProviderApi, startGceEmulator } from "../index";
import { type JsonObject, UNKNOWN } from "../json";
import {
  PROJECT,
  REGION,
  NOW,
  ADDRESS,
  FORWARDING_RULE,
  BACKEND_SERVICE,
  HEALTH_CHECK,
  TARGET_POOL,
  INSTANCE_GROUP,
  FIREWALL,
  ROUTE,
  NAME_REASON,
  regional,
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

  describe("provider operations", function () {
    let api: ProviderApi;
    beforeEach(() => {
      api = new ProviderApi(gce.state);
    });

    /** Creates through the provider API; returns [inputs, outputs, id]. */
    function create(type: string, inputs: JsonObject): [JsonObject, JsonObject, string] {
      const checked = api.check({ type, urn: `urn:pulumi:s::p::${type}::r`, olds: {}, news: inputs });
      assert.deepEqual(checked.failures, []);
      const res = api.create({ type, inputs: checked.inputs });
      return [checked.inputs, res.outputs, res.id];
    }

    function diff(
      type: string,
      created: [JsonObject, JsonObject, string],
      news: JsonObject,
    ): ReturnType<ProviderApi["diff"]> {
      const [inputs, outputs, id] = created;
      return api.diff({ type, id, olds: outputs, oldInputs: inputs, news: { ...inputs, ...news } });
    }

    it("check fills project and region, autonames, and reports failures by property", function () {
      assert.deepEqual(
        api.check({
          type: ADDRESS,
          urn: "urn:pulumi:s::p::gcp:compute/address:Address::addr",
          olds: {},
          news: { name: "a" },
        }),
        {
          inputs: { name: "a", project: PROJECT, region: REGION },
          failures: [],
        },
      );
      const auto = api.check({
        type: ADDRESS,
        urn: "urn:pulumi:s::p::gcp:compute/address:Address::addr",
        olds: {},
        news: {},
      });
      assert.match(String(auto.inputs.name), /^addr-[0-9a-f]{7}$/);
      assert.deepEqual(
        api.check({
          type: FIREWALL,
          urn: "urn:pulumi:s::p::gcp:compute/firewall:Firewall::fw",
          olds: {},
          news: {
            name: "Bad_Name",
            network: "default",
            allows: [{ protocol: "tcp" }],
            sourceRanges: ["0.0.0.0/0", "10.0.0.0/33"],
            prio: 1,
          },
        }).failures,
        [
          { property: "prio", reason: "prio is not a property of Firewall" },
          { property: "name", reason: NAME_REASON("Bad_Name") },
          {
            property: "sourceRanges",
            reason: "invalid value for sourceRanges[1] (must be a valid CIDR range or IP address), got 10.0.0.0/33",
          },
        ],
      );
      // Unknown values (preview) are not validated.
      assert.deepEqual(
        api.check({
          type: FIREWALL,
          urn: "urn:x::fw",
          olds: {},
          news: { name: UNKNOWN, network: UNKNOWN, allows: UNKNOWN, sourceRanges: [UNKNOWN] },
        }).failures,
        [],
      );
    });

    it("diff: no change when references are spelled differently", function () {
      createLoadBalancer(gce, "lb-0");
      gce.state.create(ADDRESS, { ...regional, name: "lb-1", addressType: "INTERNAL" });
      const fr = create(FORWARDING_RULE, {
        ...regional,
        name: "lb-1",
        ipAddress: "lb-1",
        loadBalancingScheme: "INTERNAL",
        ports: ["81"],
        backendService: link(`regions/${REGION}/backendServices/lb-0`),
      });
      assert.deepEqual(
        diff(FORWARDING_RULE, fr, {
          ipAddress: "10.128.0.3",
          loadBalancingScheme: "INTERNAL",
          ports: ["81"],
          backendService: `https://www.googleapis.com/compute/v1/projects/${PROJECT}/regions/${REGION}/backendServices/lb-0`,
        }),
        { changes: false, diffs: [], replaces: [], deleteBeforeReplace: false },
      );
      const fw = create(FIREWALL, {
        project: PROJECT,
        name: "fw",
        network: "default",
        allows: [{ protocol: "tcp", ports: ["80", "443"] }],
        sourceRanges: ["10.0.0.0/8", "0.0.0.0/0"],
      });
      assert.deepEqual(
        diff(FIREWALL, fw, {
          network: `projects/${PROJECT}/global/networks/default`,
          allows: [{ protocol: "TCP", ports: ["443", "80"] }],
          sourceRanges: ["0.0.0.0/0", "10.0.0.0/8"],
          priority: 1000,
        }),
        { changes: false, diffs: [], replaces: [], deleteBeforeReplace: false },
      );
    });

    it("diff: immutable fields replace (delete first when the name stays), mutable ones update", function () {
      gce.putInstance("node-1", { zone: "us-central1-a" });
      gce.putInstance("node-2", { zone: "us-central1-a" });
      createLoadBalancer(gce, "lb-0");
      const tp = create(TARGET_POOL, { ...regional, name: "tp", instances: ["us-central1-a/node-1"] });
      const fr = create(FORWARDING_RULE, { ...regional, name: "fr", target: "tp", portRange: "80" });
      const ig = create(INSTANCE_GROUP, { project: PROJECT, zone: "us-central1-a", name: "ig", instances: ["node-1"] });
      const hc = create(HEALTH_CHECK, { ...regional, name: "hc", httpHealthCheck: { port: 10256 } });
      const bs = create(BACKEND_SERVICE, {
        ...regional,
        name: "bs",
        loadBalancingScheme: "EXTERNAL",
        protocol: "TCP",
        healthChecks: `regions/${REGION}/healthChecks/hc`,
      });
      const fw = create(FIREWALL, {
        project: PROJECT,
        name: "fw",
        network: "default",
        allows: [{ protocol: "tcp" }],
        sourceRanges: ["0.0.0.0/0"],
      });
      const rt = create(ROUTE, {
        project: PROJECT,
        name: "rt",
        network: "default",
        destRange: "10.4.0.0/24",
        nextHopInstance: "node-1",
        nextHopInstanceZone: "us-central1-a",
      });
      assert.deepEqual(diff(ROUTE, rt, { nextHopInstance: link("zones/us-central1-a/instances/node-1") }), {
        changes: false,
        diffs: [],
        replaces: [],
        deleteBeforeReplace: false,
      });
      const ad = create(ADDRESS, { ...regional, name: "ad" });

      const replace = (field: string): ReturnType<ProviderApi["diff"]> => ({
        changes: true,
        diffs: [field],
        replaces: [field],
        deleteBeforeReplace: true,
      });
      const update = (field: string): ReturnType<ProviderApi["diff"]> => ({
        changes: true,
        diffs: [field],
        replaces: [],
        deleteBeforeReplace: false,
      });

      assert.deepEqual(diff(FORWARDING_RULE, fr, { portRange: "8080" }), replace("portRange"));
      assert.deepEqual(
        diff(FORWARDING_RULE, fr, { target: link(`regions/${REGION}/targetPools/other`) }),
        update("target"),
      );
      assert.deepEqual(diff(FORWARDING_RULE, fr, { labels: { a: "b" } }), update("labels"));
      assert.deepEqual(diff(FORWARDING_RULE, fr, { name: "fr-2" }), {
        changes: true,
        diffs: ["name"],
        replaces: ["name"],
        deleteBeforeReplace: false,
      });
      assert.deepEqual(diff(FORWARDING_RULE, fr, { portRange: UNKNOWN }), replace("portRange"));
      assert.deepEqual(
        diff(TARGET_POOL, tp, { instances: ["us-central1-a/node-1", "us-central1-a/node-2"] }),
        update("instances"),
      );
      assert.deepEqual(diff(TARGET_POOL, tp, { sessionAffinity: "CLIENT_IP" }), replace("sessionAffinity"));
      assert.deepEqual(diff(INSTANCE_GROUP, ig, { instances: ["node-1", "node-2"] }), update("instances"));
      assert.deepEqual(diff(INSTANCE_GROUP, ig, { network: "other" }), replace("network"));
      assert.deepEqual(diff(HEALTH_CHECK, hc, { checkIntervalSec: 8 }), update("checkIntervalSec"));
      assert.deepEqual(diff(HEALTH_CHECK, hc, { httpHealthCheck: { port: 10257 } }), update("httpHealthCheck"));
      // A change of type is an update in the provider (resource_compute_region_health_check.go: no ForceNew).
      assert.deepEqual(diff(HEALTH_CHECK, hc, { httpHealthCheck: null, tcpHealthCheck: { port: 10256 } }), {
        changes: true,
        diffs: ["httpHealthCheck", "tcpHealthCheck"],
        replaces: [],
        deleteBeforeReplace: false,
      });
      assert.deepEqual(diff(BACKEND_SERVICE, bs, { loadBalancingScheme: "INTERNAL" }), replace("loadBalancingScheme"));
      assert.deepEqual(diff(BACKEND_SERVICE, bs, { sessionAffinity: "CLIENT_IP" }), update("sessionAffinity"));
      assert.deepEqual(diff(FIREWALL, fw, { sourceRanges: ["10.0.0.0/8"] }), update("sourceRanges"));
      assert.deepEqual(diff(FIREWALL, fw, { network: "other" }), update("network"));
      assert.deepEqual(diff(FIREWALL, fw, { direction: "EGRESS" }), replace("direction"));
      assert.deepEqual(diff(ROUTE, rt, { priority: 900 }), replace("priority"));
      assert.deepEqual(diff(ADDRESS, ad, { labels: { a: "b" } }), update("labels"));
      assert.deepEqual(diff(ADDRESS, ad, { description: "x" }), replace("description"));
      assert.deepEqual(diff(ADDRESS, ad, { region: "europe-west1" }), {
        changes: true,
        diffs: ["region"],
        replaces: ["region"],
        deleteBeforeReplace: false,
      });
    });

    it("diff reports drift made out of band; read returns the live state, or no id once it is gone", function () {
      const fw = create(FIREWALL, {
        project: PROJECT,
        name: "fw",
        network: "default",
        allows: [{ protocol: "tcp" }],
        sourceRanges: ["0.0.0.0/0"],
      });
      gce.patchOutOfBand("firewalls", "fw", { sourceRanges: ["10.0.0.0/8"], description: "console edit" });
      const read = api.read({ type: FIREWALL, id: fw[2], state: fw[1], inputs: fw[0] });
      assert.equal(read.id, `projects/${PROJECT}/global/firewalls/fw`);
      assert.deepEqual(read.inputs, { ...fw[0], sourceRanges: ["10.0.0.0/8"] });
      assert.deepEqual(read.outputs.sourceRanges, ["10.0.0.0/8"]);
      assert.deepEqual(
        api.diff({ type: FIREWALL, id: fw[2], olds: read.outputs, oldInputs: read.inputs, news: fw[0] }),
        {
          changes: true,
          diffs: ["description", "sourceRanges"],
          replaces: [],
          deleteBeforeReplace: false,
        },
      );
      gce.deleteOutOfBand("firewalls", "fw");
      assert.deepEqual(api.read({ type: FIREWALL, id: fw[2], state: fw[1], inputs: fw[0] }), {
        id: null,
        outputs: {},
        inputs: {},
      });
      // Deleting what is already gone succeeds, like the real provider.
      api.delete({ type: FIREWALL, id: fw[2] });
    });
  });
});
