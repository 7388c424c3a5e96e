// Tests of the GCE emulator (emulator/gce; `npm run test:emulator`): GCE's rules on its one
// model (names, conflicts, resources in use, immutable fields, IP allocation), the Compute REST
// face, fault injection, the provider operations, and the provider plugin as a real process over
// gRPC.

import * as assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import * as path from "node:path";
import * as readline from "node:readline";

import * as grpc from "@grpc/grpc-js";
import * as plugproto from "@pulumi/pulumi/proto/plugin_pb";
import * as provrpc from "@pulumi/pulumi/proto/provider_grpc_pb";
import * as provproto from "@pulumi/pulumi/proto/provider_pb";
import { Empty } from "google-protobuf/google/protobuf/empty_pb";
import { Struct } from "google-protobuf/google/protobuf/struct_pb";

import { type GceEmulator, GceError, type GceKind, pluginBinDir, ProviderApi, startGceEmulator } from "../index";
import { type Json, type JsonObject, SECRET_SIG, SIG_KEY, toJson, toJsonObject, UNKNOWN } from "../json";

const PROJECT = "dccm-test";
const REGION = "us-central1";
const NOW = "2024-01-02T03:04:05.000Z";
const ADDRESS = "gcp:compute/address:Address";
const FORWARDING_RULE = "gcp:compute/forwardingRule:ForwardingRule";
const BACKEND_SERVICE = "gcp:compute/regionBackendService:RegionBackendService";
const HEALTH_CHECK = "gcp:compute/regionHealthCheck:RegionHealthCheck";
const HTTP_HEALTH_CHECK = "gcp:compute/httpHealthCheck:HttpHealthCheck";
const TARGET_POOL = "gcp:compute/targetPool:TargetPool";
const INSTANCE_GROUP = "gcp:compute/instanceGroup:InstanceGroup";
const FIREWALL = "gcp:compute/firewall:Firewall";
const ROUTE = "gcp:compute/route:Route";
/** fingerprint of `{}` (the labelFingerprint of a resource without labels) */
const EMPTY_LABELS_FINGERPRINT = "RBNvo1WzZ4o=";
const NAME_REASON = (name: string): string =>
  `Invalid value for field 'resource.name': '${name}'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'`;

const regional = { project: PROJECT, region: REGION };

/** Runs `fn`, expecting a GceError; returns it. */
function gceError(fn: () => unknown): GceError {
  try {
    fn();
  } catch (e) {
    if (e instanceof GceError) {
      return e;
    }
    throw new Error("expected a GceError", { cause: e });
  }
  throw new Error("expected a GceError, nothing was thrown");
}

async function getJson(url: string, init?: RequestInit): Promise<{ status: number; body: Json }> {
  const res = await fetch(url, init);
  return { status: res.status, body: toJson(JSON.parse(await res.text()), url) };
}

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

  /** An address, a health check, a backend service and a forwarding rule, like one internal LB. */
  function createLoadBalancer(name: string): void {
    gce.state.create(ADDRESS, { ...regional, name, addressType: "INTERNAL" });
    gce.state.create(HEALTH_CHECK, { ...regional, name, httpHealthCheck: { port: 10256, requestPath: "/healthz" } });
    gce.state.create(BACKEND_SERVICE, {
      ...regional,
      name,
      healthChecks: `regions/${REGION}/healthChecks/${name}`,
      loadBalancingScheme: "INTERNAL",
      protocol: "TCP",
    });
    gce.state.create(FORWARDING_RULE, {
      ...regional,
      name,
      ipAddress: `projects/${PROJECT}/regions/${REGION}/addresses/${name}`,
      backendService: `regions/${REGION}/backendServices/${name}`,
      loadBalancingScheme: "INTERNAL",
      ports: ["80"],
    });
  }

  describe("state", function () {
    it("computes GCE's outputs for an address", function () {
      const r = gce.state.create(ADDRESS, { ...regional, name: "lb-1", description: "d" });
      assert.deepEqual(r, {
        kind: "addresses",
        project: PROJECT,
        scope: REGION,
        name: "lb-1",
        properties: {
          name: "lb-1",
          project: PROJECT,
          region: REGION,
          description: "d",
          address: "203.0.113.1",
          addressType: "EXTERNAL",
          networkTier: "PREMIUM",
          labelFingerprint: EMPTY_LABELS_FINGERPRINT,
          id: "1000000000000000001",
          creationTimestamp: NOW,
          selfLink: link(`regions/${REGION}/addresses/lb-1`),
          fingerprint: "b0Ybe5X2WUU=",
        },
      });
    });

    it("accepts only names matching ^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$, naming the field", function () {
      for (const good of ["a", "a1", "k8s-fw-a1b2", `a${"b".repeat(62)}`]) {
        assert.equal(
          gce.state.create(FIREWALL, {
            project: PROJECT,
            name: good,
            network: "default",
            allows: [{ protocol: "tcp" }],
            sourceRanges: ["0.0.0.0/0"],
          }).name,
          good,
        );
      }
      for (const bad of ["", "1a", "A", "a_b", "a-", `a${"b".repeat(63)}`, "-a"]) {
        const e = gceError(() => gce.state.create(ADDRESS, { ...regional, name: bad }));
        assert.equal(e.status, 400);
        assert.equal(e.reason, "invalid");
        assert.equal(e.message, NAME_REASON(bad));
      }
    });

    it("refuses to create an existing name: 409 alreadyExists", function () {
      gce.state.create(ADDRESS, { ...regional, name: "lb-1" });
      const e = gceError(() => gce.state.create(ADDRESS, { ...regional, name: "lb-1" }));
      assert.deepEqual(
        [e.status, e.reason, e.message],
        [409, "alreadyExists", `The resource 'projects/${PROJECT}/regions/${REGION}/addresses/lb-1' already exists`],
      );
      // Same name, other region: a different resource.
      assert.equal(
        gce.state.create(ADDRESS, { ...regional, region: "europe-west1", name: "lb-1" }).scope,
        "europe-west1",
      );
    });

    it("normalizes references and resolves a forwarding rule's address to its IP", function () {
      createLoadBalancer("lb-1");
      const fr = gce.state.get({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "lb-1" });
      assert.equal(fr.properties.ipAddress, "10.128.0.2");
      assert.equal(fr.properties.backendService, link(`regions/${REGION}/backendServices/lb-1`));
      const bs = gce.state.get({ kind: "backendServices", project: PROJECT, scope: REGION, name: "lb-1" });
      assert.equal(bs.properties.healthChecks, link(`regions/${REGION}/healthChecks/lb-1`));
      gce.putInstance("node-1", { zone: "us-central1-b" });
      const route = gce.state.create(ROUTE, {
        project: PROJECT,
        name: "c1-node-1",
        network: "default",
        destRange: "10.4.1.0/24",
        nextHopInstance: "node-1",
        nextHopInstanceZone: "us-central1-b",
      });
      assert.equal(route.properties.nextHopInstance, link("zones/us-central1-b/instances/node-1"));
      assert.equal(route.properties.network, link("global/networks/default"));
    });

    it("enforces the forwarding-rule port rules: per product, and no overlap on one IP and protocol", function () {
      gce.state.create(ADDRESS, { ...regional, name: "lb-1" });
      gce.state.create(TARGET_POOL, { ...regional, name: "tp" });
      const tcp = gce.state.create(FORWARDING_RULE, {
        ...regional,
        name: "lb-1",
        ipAddress: "lb-1",
        portRange: "80-80",
        target: "tp",
      });
      const udp = gce.state.create(FORWARDING_RULE, {
        ...regional,
        name: "lb-1-udp",
        ipAddress: "lb-1",
        ipProtocol: "UDP",
        portRange: "80-80",
        target: "tp",
      });
      assert.deepEqual([tcp.properties.ipAddress, udp.properties.ipAddress], ["203.0.113.1", "203.0.113.1"]);
      const clash = gceError(() =>
        gce.state.create(FORWARDING_RULE, {
          ...regional,
          name: "lb-1-tcp",
          ipAddress: "203.0.113.1",
          portRange: "79-81",
          target: "tp",
        }),
      );
      assert.deepEqual(
        [clash.status, clash.message],
        [
          400,
          `Invalid value for field 'resource.IPAddress': '203.0.113.1'. Specified IP address is in-use and would result in a conflict: forwarding rule 'projects/${PROJECT}/regions/${REGION}/forwardingRules/lb-1' already uses TCP on overlapping ports.`,
        ],
      );
      assert.equal(
        gce.state.create(FORWARDING_RULE, {
          ...regional,
          name: "lb-1-443",
          ipAddress: "lb-1",
          portRange: "443",
          target: "tp",
        }).name,
        "lb-1-443",
      );
      const ports = gceError(() =>
        gce.state.create(FORWARDING_RULE, { ...regional, name: "p", ports: ["80"], target: "tp" }),
      );
      assert.equal(
        ports.message,
        "Invalid value for field 'resource.ports': ports can only be set on forwarding rules with a backend service (internal or backend service-based external passthrough); a target-pool rule takes portRange",
      );
      const range = gceError(() =>
        gce.state.create(FORWARDING_RULE, { ...regional, name: "r", loadBalancingScheme: "INTERNAL", portRange: "80" }),
      );
      assert.equal(
        range.message,
        "Invalid value for field 'resource.portRange': portRange cannot be set on an INTERNAL forwarding rule; use ports or allPorts",
      );
    });

    it("refuses references to resources that do not exist: 404", function () {
      const e = gceError(() =>
        gce.state.create(BACKEND_SERVICE, {
          ...regional,
          name: "bs",
          protocol: "TCP",
          healthChecks: `regions/${REGION}/healthChecks/missing`,
        }),
      );
      assert.deepEqual(
        [e.status, e.reason, e.message],
        [404, "notFound", `The resource 'projects/${PROJECT}/regions/${REGION}/healthChecks/missing' was not found`],
      );
    });

    it("refuses to delete a resource in use, naming the user: 400 resourceInUseByAnotherResource", function () {
      createLoadBalancer("lb-1");
      gce.putInstance("node-1", { zone: "us-central1-a" });
      gce.state.create(INSTANCE_GROUP, {
        project: PROJECT,
        zone: "us-central1-a",
        name: "k8s-ig--c1",
        instances: ["us-central1-a/node-1"],
      });
      gce.state.create(BACKEND_SERVICE, {
        ...regional,
        name: "lb-2",
        protocol: "TCP",
        healthChecks: `regions/${REGION}/healthChecks/lb-1`,
        backends: [{ group: "zones/us-central1-a/instanceGroups/k8s-ig--c1", balancingMode: "CONNECTION" }],
      });
      gce.state.create(HTTP_HEALTH_CHECK, { project: PROJECT, name: "k8s-c1-node" });
      gce.state.create(TARGET_POOL, {
        ...regional,
        name: "tp",
        healthChecks: "k8s-c1-node",
        instances: ["us-central1-a/node-1"],
      });
      gce.state.create(FORWARDING_RULE, { ...regional, name: "tp", target: "tp" });

      const p = `projects/${PROJECT}/regions/${REGION}`;
      const cases: ReadonlyArray<readonly [GceKind, string, string]> = [
        [
          "backendServices",
          REGION,
          `The backend_service resource '${p}/backendServices/lb-1' is already being used by '${p}/forwardingRules/lb-1'`,
        ],
        [
          "healthChecks",
          REGION,
          `The health_check resource '${p}/healthChecks/lb-1' is already being used by '${p}/backendServices/lb-1'`,
        ],
        [
          "instanceGroups",
          "us-central1-a",
          `The instance_group resource 'projects/${PROJECT}/zones/us-central1-a/instanceGroups/k8s-ig--c1' is already being used by '${p}/backendServices/lb-2'`,
        ],
        [
          "httpHealthChecks",
          "global",
          `The http_health_check resource 'projects/${PROJECT}/global/httpHealthChecks/k8s-c1-node' is already being used by '${p}/targetPools/tp'`,
        ],
        [
          "targetPools",
          REGION,
          `The target_pool resource '${p}/targetPools/tp' is already being used by '${p}/forwardingRules/tp'`,
        ],
      ];
      for (const [kind, scope, message] of cases) {
        const name =
          kind === "instanceGroups"
            ? "k8s-ig--c1"
            : kind === "httpHealthChecks"
              ? "k8s-c1-node"
              : kind === "targetPools"
                ? "tp"
                : "lb-1";
        const key = { kind, project: PROJECT, scope, name };
        const e = gceError(() => gce.state.delete(key));
        assert.deepEqual([e.status, e.reason, e.message], [400, "resourceInUseByAnotherResource", message]);
      }

      // In dependency order, everything goes.
      for (const [kind, scope, name] of [
        ["forwardingRules", REGION, "lb-1"],
        ["forwardingRules", REGION, "tp"],
        ["targetPools", REGION, "tp"],
        ["httpHealthChecks", "global", "k8s-c1-node"],
        ["backendServices", REGION, "lb-1"],
        ["backendServices", REGION, "lb-2"],
        ["healthChecks", REGION, "lb-1"],
        ["instanceGroups", "us-central1-a", "k8s-ig--c1"],
        ["addresses", REGION, "lb-1"],
      ] as const) {
        gce.state.delete({ kind, project: PROJECT, scope, name });
      }
      assert.deepEqual(
        gce.listResources().map((r) => `${r.kind}/${r.name}`),
        ["instances/node-1"],
      );
    });

    it("deletes out of band whatever uses it", function () {
      createLoadBalancer("lb-1");
      gce.deleteOutOfBand("addresses", "lb-1");
      gce.deleteOutOfBand(BACKEND_SERVICE, "lb-1");
      assert.deepEqual(
        gce.listResources().map((r) => `${r.kind}/${r.name}`),
        ["forwardingRules/lb-1", "healthChecks/lb-1"],
      );
    });

    it("allocates EXTERNAL addresses from 203.0.113.0/24 then 198.51.100.0/24, INTERNAL from 10.128.0.0/20, counting up", function () {
      const ips: Json[] = [];
      for (let i = 0; i < 255; i++) {
        ips.push(gce.state.create(ADDRESS, { ...regional, name: `x-${i}` }).properties.address ?? null);
      }
      assert.equal(ips[0], "203.0.113.1");
      assert.equal(ips[253], "203.0.113.254");
      assert.equal(ips[254], "198.51.100.1");
      assert.equal(
        gce.state.create(ADDRESS, { ...regional, name: "i-0", addressType: "INTERNAL" }).properties.address,
        "10.128.0.2",
      );
      assert.equal(
        gce.state.create(ADDRESS, { ...regional, name: "i-1", addressType: "INTERNAL" }).properties.address,
        "10.128.0.3",
      );
      // A released IP is not handed out again right away: the pool counts up.
      gce.state.delete({ kind: "addresses", project: PROJECT, scope: REGION, name: "i-0" });
      assert.equal(
        gce.state.create(ADDRESS, { ...regional, name: "i-2", addressType: "INTERNAL" }).properties.address,
        "10.128.0.4",
      );
      // A given address is kept; ephemeral forwarding-rule IPs come from the same pools.
      assert.equal(
        gce.state.create(ADDRESS, { ...regional, name: "s", address: "10.0.0.7" }).properties.address,
        "10.0.0.7",
      );
      assert.equal(gce.state.create(FORWARDING_RULE, { ...regional, name: "e" }).properties.ipAddress, "198.51.100.2");
      assert.equal(
        gce.state.create(FORWARDING_RULE, { ...regional, name: "i", loadBalancingScheme: "INTERNAL", allPorts: true })
          .properties.ipAddress,
        "10.128.0.5",
      );
      // An internal rule may name an unreserved IP of its subnetwork (ephemeral with a chosen IP).
      assert.equal(
        gce.state.create(FORWARDING_RULE, {
          ...regional,
          name: "l",
          loadBalancingScheme: "INTERNAL",
          allPorts: true,
          ipAddress: "10.128.0.99",
        }).properties.ipAddress,
        "10.128.0.99",
      );
    });

    it("refuses to update an immutable field: 400", function () {
      createLoadBalancer("lb-1");
      const key = { kind: "forwardingRules" as const, project: PROJECT, scope: REGION, name: "lb-1" };
      const inputs = {
        ...regional,
        name: "lb-1",
        backendService: "lb-1",
        ipAddress: "lb-1",
        loadBalancingScheme: "INTERNAL",
      };
      const e = gceError(() => gce.state.update(key, { ...inputs, ports: ["8080"] }));
      assert.deepEqual(
        [e.status, e.message],
        [
          400,
          `Invalid value for field 'resource.ports': ["8080"]. Field 'ports' of 'projects/${PROJECT}/regions/${REGION}/forwardingRules/lb-1' cannot be changed.`,
        ],
      );
      const updated = gce.state.update(key, { ...inputs, ports: ["80"], labels: { team: "a" } });
      assert.deepEqual(updated.properties.labels, { team: "a" });
      assert.equal(updated.properties.id, "1000000000000000004");
    });
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
      createLoadBalancer("lb-0");
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
      createLoadBalancer("lb-0");
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
        networkInterfaces: [{ name: "nic0", network: link("global/networks/default"), networkIP, accessConfigs: [] }],
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
      createLoadBalancer("lb-1");
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

  describe("provider plugin process (gRPC)", function () {
    let child: ChildProcess | undefined;
    let client: provrpc.ResourceProviderClient | undefined;

    afterEach(async function () {
      client?.close();
      const c = child;
      if (c !== undefined && c.exitCode === null && c.signalCode === null) {
        const exited = new Promise<void>((resolve) => c.once("exit", () => resolve()));
        c.kill("SIGTERM");
        await exited;
      }
    });

    /** Starts the shim as the engine would and connects to the port it prints. */
    async function startPlugin(): Promise<provrpc.ResourceProviderClient> {
      const c = spawn(path.join(pluginBinDir(), "pulumi-resource-gcp"), ["127.0.0.1:1"], {
        env: { ...process.env, ...gce.env },
        stdio: ["ignore", "pipe", "pipe"],
      });
      child = c;
      const stderr: string[] = [];
      c.stderr.on("data", (d: Buffer) => stderr.push(d.toString()));
      const port = await new Promise<string>((resolve, reject) => {
        const lines = readline.createInterface({ input: c.stdout });
        lines.once("line", (line) => resolve(line.trim()));
        c.once("exit", (code) =>
          reject(new Error(`plugin exited with ${String(code)} before printing its port: ${stderr.join("")}`)),
        );
      });
      assert.match(port, /^\d+$/);
      client = new provrpc.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
      return client;
    }

    function unary<Req, Res>(
      fn: (req: Req, cb: (err: grpc.ServiceError | null, res: Res) => void) => grpc.ClientUnaryCall,
      req: Req,
    ): Promise<Res> {
      return new Promise((resolve, reject) => {
        fn(req, (err, res) => (err !== null ? reject(err) : resolve(res)));
      });
    }

    function detailedDiff(d: provproto.DiffResponse): Array<[string, provproto.PropertyDiff.Kind]> {
      const out: Array<[string, provproto.PropertyDiff.Kind]> = [];
      d.getDetaileddiffMap().forEach((v, k) => out.push([k, v.getKind()]));
      return out.sort(([a], [b]) => a.localeCompare(b));
    }

    const urn = `urn:pulumi:e2e::p::${ADDRESS}::addr`;
    const secret = (v: Json): JsonObject => ({ [SIG_KEY]: SECRET_SIG, value: v });

    it("serves check, create, read, diff and delete against the emulator", async function () {
      this.timeout(30_000);
      const c = await startPlugin();
      const info = await unary<Empty, plugproto.PluginInfo>((r, cb) => c.getPluginInfo(r, cb), new Empty());
      assert.equal(info.getVersion(), "9.37.0");
      const configured = await unary<provproto.ConfigureRequest, provproto.ConfigureResponse>(
        (r, cb) => c.configure(r, cb),
        new provproto.ConfigureRequest().setArgs(
          Struct.fromJavaScript({ project: PROJECT, region: REGION, version: "9.37.0" }),
        ),
      );
      assert.deepEqual(
        [configured.getAcceptsecrets(), configured.getSupportspreview(), configured.getAcceptresources()],
        [true, true, false],
      );

      const check = (news: JsonObject): Promise<provproto.CheckResponse> =>
        unary<provproto.CheckRequest, provproto.CheckResponse>(
          (r, cb) => c.check(r, cb),
          new provproto.CheckRequest()
            .setUrn(urn)
            .setType(ADDRESS)
            .setOlds(Struct.fromJavaScript({}))
            .setNews(Struct.fromJavaScript(news)),
        );
      const bad = await check({ name: "Bad_Name" });
      assert.deepEqual(
        bad.getFailuresList().map((f) => [f.getProperty(), f.getReason()]),
        [["name", NAME_REASON("Bad_Name")]],
      );
      const checked = await check({ name: "lb-1", description: secret("for default/svc") });
      assert.deepEqual(checked.getFailuresList(), []);
      const inputs = checked.getInputs();
      assert.deepEqual(inputs?.toJavaScript(), {
        name: "lb-1",
        description: secret("for default/svc"),
        project: PROJECT,
        region: REGION,
      });

      const created = await unary<provproto.CreateRequest, provproto.CreateResponse>(
        (r, cb) => c.create(r, cb),
        new provproto.CreateRequest().setUrn(urn).setType(ADDRESS).setProperties(inputs),
      );
      const id = `projects/${PROJECT}/regions/${REGION}/addresses/lb-1`;
      assert.equal(created.getId(), id);
      const outputs = created.getProperties()?.toJavaScript();
      assert.deepEqual(outputs, {
        name: "lb-1",
        project: PROJECT,
        region: REGION,
        description: secret("for default/svc"),
        address: "203.0.113.1",
        addressType: "EXTERNAL",
        networkTier: "PREMIUM",
        labelFingerprint: EMPTY_LABELS_FINGERPRINT,
        creationTimestamp: NOW,
        selfLink: link(`regions/${REGION}/addresses/lb-1`),
        fingerprint: "anKGecSRv8A=",
      });

      const read = await unary<provproto.ReadRequest, provproto.ReadResponse>(
        (r, cb) => c.read(r, cb),
        new provproto.ReadRequest()
          .setId(id)
          .setUrn(urn)
          .setType(ADDRESS)
          .setProperties(created.getProperties())
          .setInputs(inputs),
      );
      assert.equal(read.getId(), id);
      assert.deepEqual(read.getProperties()?.toJavaScript(), outputs);
      assert.deepEqual(read.getInputs()?.toJavaScript(), inputs?.toJavaScript());

      const diff = await unary<provproto.DiffRequest, provproto.DiffResponse>(
        (r, cb) => c.diff(r, cb),
        new provproto.DiffRequest()
          .setId(id)
          .setUrn(urn)
          .setType(ADDRESS)
          .setOlds(created.getProperties())
          .setOldInputs(inputs)
          .setNews(
            Struct.fromJavaScript({
              ...toJsonObject(inputs?.toJavaScript()),
              description: "changed",
              labels: { a: "b" },
            }),
          ),
      );
      assert.deepEqual(
        {
          changes: diff.getChanges(),
          diffs: diff.getDiffsList(),
          replaces: diff.getReplacesList(),
          deleteBeforeReplace: diff.getDeletebeforereplace(),
          detailed: detailedDiff(diff),
        },
        {
          changes: provproto.DiffResponse.DiffChanges.DIFF_SOME,
          diffs: ["description", "labels"],
          replaces: ["description"],
          deleteBeforeReplace: true,
          detailed: [
            ["description", provproto.PropertyDiff.Kind.UPDATE_REPLACE],
            ["labels", provproto.PropertyDiff.Kind.UPDATE],
          ],
        },
      );

      const conflict = await unary<provproto.CreateRequest, provproto.CreateResponse>(
        (r, cb) => c.create(r, cb),
        new provproto.CreateRequest().setUrn(urn).setType(ADDRESS).setProperties(inputs),
      ).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(conflict instanceof Error && "details" in conflict);
      assert.equal(
        conflict.details,
        `Error creating Address: googleapi: Error 409: The resource '${id}' already exists, alreadyExists`,
      );

      await unary<provproto.DeleteRequest, Empty>(
        (r, cb) => c.delete(r, cb),
        new provproto.DeleteRequest().setId(id).setUrn(urn).setType(ADDRESS).setProperties(created.getProperties()),
      );
      assert.deepEqual(gce.listResources(), []);
      const gone = await unary<provproto.ReadRequest, provproto.ReadResponse>(
        (r, cb) => c.read(r, cb),
        new provproto.ReadRequest()
          .setId(id)
          .setUrn(urn)
          .setType(ADDRESS)
          .setProperties(created.getProperties())
          .setInputs(inputs),
      );
      assert.equal(gone.getId(), "");
      assert.deepEqual(gce.calls(), {
        "POST /emulator/provider/check": 2,
        "POST /emulator/provider/create": 2,
        "POST /emulator/provider/delete": 1,
        "POST /emulator/provider/diff": 1,
        "POST /emulator/provider/read": 2,
      });
    });
  });

  describe("provider plugin process: GCE's 403s", function () {
    let child: ChildProcess | undefined;
    let client: provrpc.ResourceProviderClient | undefined;
    afterEach(async function () {
      client?.close();
      const c = child;
      if (c !== undefined && c.exitCode === null && c.signalCode === null) {
        const exited = new Promise<void>((resolve) => c.once("exit", () => resolve()));
        c.kill("SIGTERM");
        await exited;
      }
    });

    it("retries a per-minute rate quota refusal as the provider does (is403QuotaExceededPerMinuteError); a project quota refusal is final", async function () {
      this.timeout(30_000);
      const c = spawn(path.join(pluginBinDir(), "pulumi-resource-gcp"), ["127.0.0.1:1"], {
        env: { ...process.env, ...gce.env },
        stdio: ["ignore", "pipe", "ignore"],
      });
      child = c;
      const port = await new Promise<string>((resolve) =>
        readline.createInterface({ input: c.stdout }).once("line", (line) => resolve(line.trim())),
      );
      const rpc = new provrpc.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
      client = rpc;
      const create = (name: string): Promise<unknown> =>
        new Promise((resolve) => {
          rpc.create(
            new provproto.CreateRequest()
              .setUrn(`urn:pulumi:e2e::p::${ADDRESS}::${name}`)
              .setType(ADDRESS)
              .setProperties(Struct.fromJavaScript({ name, project: PROJECT, region: REGION })),
            (err, res) => resolve(err ?? res.getId()),
          );
        });
      const perMinute =
        "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service 'compute.googleapis.com' for consumer 'project_number:123456789012'.";
      gce.injectFault({
        kind: "addresses",
        name: "limited",
        operation: "create",
        status: 403,
        reason: "rateLimitExceeded",
        message: perMinute,
        count: 2,
      });
      assert.equal(await create("limited"), `projects/${PROJECT}/regions/${REGION}/addresses/limited`);
      assert.equal(gce.calls()["POST /emulator/provider/create"], 3);
      gce.resetCalls();
      gce.injectFault({
        kind: "addresses",
        name: "capped",
        operation: "create",
        status: 403,
        reason: "quotaExceeded",
        message: "Quota 'STATIC_ADDRESSES' exceeded. Limit: 1.0 in region us-central1.",
      });
      const refused = await create("capped");
      assert.ok(refused instanceof Error && "details" in refused);
      assert.equal(
        refused.details,
        "Error creating Address: googleapi: Error 403: Quota 'STATIC_ADDRESSES' exceeded. Limit: 1.0 in region us-central1., quotaExceeded",
      );
      assert.equal(gce.calls()["POST /emulator/provider/create"], 1);
    });
  });

  describe("standalone", function () {
    it("main.js prints { endpoint, computeEndpoint, env } and serves until SIGTERM", async function () {
      this.timeout(30_000);
      const c = spawn(
        process.execPath,
        [path.join(__dirname, "..", "main.js"), "--project", "p1", "--zones", "europe-west1-b"],
        {
          stdio: ["ignore", "pipe", "inherit"],
        },
      );
      const exited = new Promise<number | null>((resolve) => c.once("exit", (code) => resolve(code)));
      const line = await new Promise<string>((resolve, reject) => {
        readline.createInterface({ input: c.stdout }).once("line", resolve);
        c.once("exit", (code) => reject(new Error(`main.js exited with ${String(code)}`)));
      });
      const printed = toJsonObject(JSON.parse(line));
      assert.deepEqual(Object.keys(printed), ["endpoint", "computeEndpoint", "env"]);
      const endpoint = String(printed.endpoint);
      assert.match(endpoint, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal(printed.computeEndpoint, `${endpoint}/compute/v1/`);
      const env = toJsonObject(printed.env);
      assert.equal(env.DCCM_GCE_EMULATOR_URL, endpoint);
      assert.equal(String(env.PATH).split(path.delimiter)[0], pluginBinDir());
      const zone = await getJson(`${endpoint}/compute/v1/projects/p1/zones/europe-west1-b`);
      assert.equal(zone.status, 200);
      c.kill("SIGTERM");
      assert.equal(await exited, 0);
    });
  });
});
