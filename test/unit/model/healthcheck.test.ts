// Health checks (docs/guides/services.md#health-checks): the config's checker ranges and node probe,
// and a Service's own check tuned by its annotations, each rule and error exact.
import * as assert from "node:assert/strict";
import * as fc from "fast-check";

import { ConfigError, parseConfig, type RawConfig } from "../../../model/config";
import { desiredState } from "../../../model/desired";
import { readHealthCheckTuning } from "../../../model/healthcheck";
import type { Config, DesiredState, Rejection, ServiceInfo } from "../../../model/types";
import {
  CLUSTER_DESCRIPTION,
  CONFIG,
  describedBy,
  externalServiceDesired,
  gceNode,
  healthCheckFirewall,
  HC_RANGES,
  httpHealthCheck,
  lbService,
  NODE_HC_FIREWALL,
  SHARED_HC,
  TO_ADDRESS,
} from "../../support/builders";

const BASE: RawConfig = {
  project: "dccm-test",
  region: "us-central1",
  network: "k8s-net",
  nodeTags: ["k8s-node"],
  clusterName: "prod",
  clusterId: "c0ffee1234",
};

const INTERVAL = "dccm.io/health-check-interval";
const TIMEOUT = "dccm.io/health-check-timeout";
const HEALTHY = "dccm.io/health-check-healthy-threshold";
const UNHEALTHY = "dccm.io/health-check-unhealthy-threshold";
const PORT = "dccm.io/health-check-port";
const PATH = "dccm.io/health-check-path";

const UID = "0f1e2d3c-4b5a-4978-8695-a4b3c2d1e0f9";
const LB = "a0f1e2d3c4b5a49788695a4b3c2d1e0f";
const KEY = "default/svc";
const NODES = [gceNode("n-a", "00000000-0000-4000-8000-000000000001", "us-central1-a", [])];
const V6_RANGES = ["2600:1901:8001::/48", "2600:2d00:1:b029::/64"];

function svc(over: Partial<ServiceInfo> = {}): ServiceInfo {
  return lbService("default", "svc", UID, { ...over });
}

function run(services: ServiceInfo[], config: Partial<Config> = {}): DesiredState {
  return desiredState({ nodes: NODES, services }, { ...CONFIG, ...config });
}

function configProblems(raw: Record<string, unknown>): string[] {
  try {
    parseConfig({ ...BASE, ...raw });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

function rejectedWith(service: ServiceInfo, want: [string, string][]): void {
  const state = run([service]);
  assert.deepStrictEqual(state.services, []);
  assert.deepStrictEqual(
    state.rejected,
    want.map(([field, message]): Rejection => ({
      service: KEY,
      field,
      message: `Service ${KEY}: ${field}: ${message}`,
    })),
  );
}

describe("model: health checks (docs/guides/services.md#health-checks)", () => {
  describe("config keys", () => {
    const cases: [string, Record<string, unknown>, Partial<Config>][] = [
      ["unset: none in the config (Google's ranges, 10256 /healthz)", {}, {}],
      [
        "IPv4 ranges, as a list, canonical and sorted",
        { healthCheckSourceRanges: ["35.191.0.0/16", "10.0.0.1/8"] },
        { healthCheckSourceRanges: ["10.0.0.0/8", "35.191.0.0/16"] },
      ],
      [
        "IPv4 ranges, comma-separated",
        { healthCheckSourceRanges: "35.191.0.0/16, 130.211.0.0/22" },
        { healthCheckSourceRanges: ["130.211.0.0/22", "35.191.0.0/16"] },
      ],
      [
        "Google's IPv4 ranges written out: the default, no key",
        { healthCheckSourceRanges: [...HC_RANGES].reverse() },
        {},
      ],
      [
        "IPv6 ranges",
        { healthCheckSourceRangesIPv6: "2600:1901:8001::/48" },
        { healthCheckSourceRangesIPv6: ["2600:1901:8001::/48"] },
      ],
      ["Google's IPv6 ranges written out: no key", { healthCheckSourceRangesIPv6: V6_RANGES }, {}],
      ["probe port, a number", { nodeHealthCheckPort: 9879 }, { nodeHealthCheckPort: 9879 }],
      ["probe port, the text of a flag", { nodeHealthCheckPort: " 9879 " }, { nodeHealthCheckPort: 9879 }],
      ["probe port 10256: the default, no key", { nodeHealthCheckPort: 10256 }, {}],
      ["probe path", { nodeHealthCheckPath: "/readyz" }, { nodeHealthCheckPath: "/readyz" }],
      ["probe path /healthz: the default, no key", { nodeHealthCheckPath: "/healthz" }, {}],
    ];
    for (const [title, raw, want] of cases)
      it(title, () => {
        const config = parseConfig({ ...BASE, ...raw });
        assert.deepStrictEqual(
          {
            healthCheckSourceRanges: config.healthCheckSourceRanges,
            healthCheckSourceRangesIPv6: config.healthCheckSourceRangesIPv6,
            nodeHealthCheckPort: config.nodeHealthCheckPort,
            nodeHealthCheckPath: config.nodeHealthCheckPath,
          },
          {
            healthCheckSourceRanges: want.healthCheckSourceRanges,
            healthCheckSourceRangesIPv6: want.healthCheckSourceRangesIPv6,
            nodeHealthCheckPort: want.nodeHealthCheckPort,
            nodeHealthCheckPath: want.nodeHealthCheckPath,
          },
        );
        for (const key of Object.keys(raw))
          assert.equal(key in config, key in want, `${key} present in the config only when not the default`);
      });

    const errors: [string, Record<string, unknown>, string[]][] = [
      [
        "an IPv6 range among the IPv4 ones",
        { healthCheckSourceRanges: ["35.191.0.0/16", "2600:1901:8001::/48"] },
        ['healthCheckSourceRanges: "2600:1901:8001::/48" is not an IPv4 CIDR'],
      ],
      [
        "not a CIDR",
        { healthCheckSourceRanges: "35.191.0.0" },
        ['healthCheckSourceRanges: "35.191.0.0" is not a CIDR (expected a.b.c.d/n)'],
      ],
      [
        "an IPv4 range among the IPv6 ones",
        { healthCheckSourceRangesIPv6: ["35.191.0.0/16"] },
        ['healthCheckSourceRangesIPv6: "35.191.0.0/16" is not an IPv6 CIDR'],
      ],
      [
        "an empty list",
        { healthCheckSourceRanges: " , " },
        ["healthCheckSourceRanges: at least one IPv4 CIDR (unset: Google's health-checker ranges)"],
      ],
      [
        "probe port 0",
        { nodeHealthCheckPort: 0 },
        ["nodeHealthCheckPort: expected a port number from 1 to 65535, got 0"],
      ],
      [
        "probe port 65536",
        { nodeHealthCheckPort: "65536" },
        ['nodeHealthCheckPort: expected a port number from 1 to 65535, got "65536"'],
      ],
      [
        "probe path relative",
        { nodeHealthCheckPath: "healthz" },
        ['nodeHealthCheckPath: "healthz" must start with "/"'],
      ],
      [
        "probe path with a space",
        { nodeHealthCheckPath: "/a b" },
        ['nodeHealthCheckPath: "/a b" must be printable ASCII without spaces'],
      ],
      [
        "probe path too long",
        { nodeHealthCheckPath: `/${"a".repeat(1024)}` },
        ["nodeHealthCheckPath: must be at most 1024 characters (got 1025)"],
      ],
      ["probe path not text", { nodeHealthCheckPath: 7 }, ["nodeHealthCheckPath: expected a string, got 7"]],
    ];
    for (const [title, raw, want] of errors)
      it(`refused: ${title}`, () => assert.deepStrictEqual(configProblems(raw), want));
  });

  describe("the cluster's shared check and its firewall", () => {
    it("default config: 10256 /healthz from Google's ranges, as before", () => {
      const { cluster } = run([]);
      assert.deepStrictEqual(cluster.nodeHealthCheck, SHARED_HC);
      assert.deepStrictEqual(cluster.nodeHealthCheckFirewall, NODE_HC_FIREWALL);
    });

    it("a probe port, path and ranges from the config", () => {
      const { cluster, services } = run([svc()], {
        nodeHealthCheckPort: 9879,
        nodeHealthCheckPath: "/readyz",
        healthCheckSourceRanges: ["10.0.0.0/8"],
      });
      const check = { ...SHARED_HC, port: 9879, requestPath: "/readyz" };
      assert.deepStrictEqual(cluster.nodeHealthCheck, check);
      assert.deepStrictEqual(cluster.nodeHealthCheckFirewall, {
        ...NODE_HC_FIREWALL,
        sourceRanges: ["10.0.0.0/8"],
        allows: [{ protocol: "tcp", ports: ["9879"] }],
      });
      assert.deepStrictEqual(services[0].healthCheck, { kind: "shared", spec: check });
    });

    it("an IPv6 Service's health-check firewall opens the probe port from the configured IPv6 ranges", () => {
      const { services } = run([svc({ ipFamilies: ["IPv6"], ipFamilyPolicy: "SingleStack" })], {
        nodeHealthCheckPort: 9879,
        healthCheckSourceRangesIPv6: ["2600:1901:8001::/48"],
      });
      const firewall = services[0].ipv6?.healthCheckFirewall;
      assert.deepStrictEqual(firewall?.sourceRanges, ["2600:1901:8001::/48"]);
      assert.deepStrictEqual(firewall?.allows, [{ protocol: "tcp", ports: ["9879"] }]);
    });
  });

  describe("a Service's own check", () => {
    const description = describedBy(KEY);

    it("ETP=Cluster, no annotation: the shared check, no health-check firewall of its own", () => {
      assert.deepStrictEqual(run([svc()]).services, [
        externalServiceDesired("default", "svc", UID, LB, [80], { backendZones: ["us-central1-a"] }),
      ]);
    });

    it("ETP=Cluster with timings: its own check on the node probe, declared timings, its own firewall", () => {
      const service = svc({ annotations: { [INTERVAL]: "30", [TIMEOUT]: "10", [HEALTHY]: "2", [UNHEALTHY]: "5" } });
      const check = {
        ...httpHealthCheck(LB, 10256, description),
        checkIntervalSec: 30,
        timeoutSec: 10,
        healthyThreshold: 2,
        unhealthyThreshold: 5,
        timingsDeclared: true as const,
      };
      assert.deepStrictEqual(run([service]).services, [
        externalServiceDesired("default", "svc", UID, LB, [80], {
          backendZones: ["us-central1-a"],
          healthCheck: { kind: "dedicated", spec: check },
          healthCheckFirewall: healthCheckFirewall(`k8s-${LB}-http-hc`, 10256, description, TO_ADDRESS),
        }),
      ]);
    });

    it("ETP=Cluster with a port and path: its own check there, default timings not declared", () => {
      const service = svc({ annotations: { [PORT]: "9876", [PATH]: "/ready" } });
      const state = run([service], { nodeHealthCheckPort: 9879 });
      assert.deepStrictEqual(state.services[0].healthCheck, {
        kind: "dedicated",
        spec: { ...httpHealthCheck(LB, 9876, description), requestPath: "/ready" },
      });
      assert.deepStrictEqual(
        state.services[0].healthCheckFirewall,
        healthCheckFirewall(`k8s-${LB}-http-hc`, 9876, description, TO_ADDRESS),
      );
    });

    it("ETP=Cluster, only a timing: the configured node probe's port and path", () => {
      const state = run([svc({ annotations: { [UNHEALTHY]: "6" } })], {
        nodeHealthCheckPort: 9879,
        nodeHealthCheckPath: "/readyz",
      });
      assert.deepStrictEqual(state.services[0].healthCheck.spec, {
        ...httpHealthCheck(LB, 9879, description),
        requestPath: "/readyz",
        unhealthyThreshold: 6,
        timingsDeclared: true,
      });
    });

    it("ETP=Local with timings: its healthCheckNodePort, /healthz, the timings", () => {
      const service = svc({
        externalTrafficPolicy: "Local",
        healthCheckNodePort: 31000,
        annotations: { [INTERVAL]: "20", [TIMEOUT]: "20" },
      });
      assert.deepStrictEqual(run([service], { nodeHealthCheckPath: "/readyz" }).services[0].healthCheck, {
        kind: "dedicated",
        spec: {
          ...httpHealthCheck(LB, 31000, description),
          checkIntervalSec: 20,
          timeoutSec: 20,
          timingsDeclared: true,
        },
      });
    });

    it("ETP=Local without annotations: as before (no timingsDeclared)", () => {
      const service = svc({ externalTrafficPolicy: "Local", healthCheckNodePort: 31000 });
      assert.deepStrictEqual(run([service]).services[0].healthCheck, {
        kind: "dedicated",
        spec: httpHealthCheck(LB, 31000, description),
      });
    });

    const refusals: [string, Record<string, string>, Partial<ServiceInfo>, [string, string][]][] = [
      [
        "interval 0",
        { [INTERVAL]: "0" },
        {},
        [[`metadata.annotations[${INTERVAL}]`, '"0" is not a whole number from 1 to 300']],
      ],
      [
        "interval 301",
        { [INTERVAL]: "301" },
        {},
        [[`metadata.annotations[${INTERVAL}]`, '"301" is not a whole number from 1 to 300']],
      ],
      [
        "interval 5s",
        { [INTERVAL]: "5s" },
        {},
        [[`metadata.annotations[${INTERVAL}]`, '"5s" is not a whole number from 1 to 300']],
      ],
      [
        "timeout above the given interval",
        { [INTERVAL]: "5", [TIMEOUT]: "6" },
        {},
        [
          [
            `metadata.annotations[${TIMEOUT}]`,
            `6s is longer than the check interval of 5s (metadata.annotations[${INTERVAL}]); GCE refuses a timeout above the interval`,
          ],
        ],
      ],
      [
        "timeout above the default interval of 8",
        { [TIMEOUT]: "9" },
        {},
        [
          [
            `metadata.annotations[${TIMEOUT}]`,
            `9s is longer than the check interval of 8s (metadata.annotations[${INTERVAL}]); GCE refuses a timeout above the interval`,
          ],
        ],
      ],
      [
        "healthy threshold 11",
        { [HEALTHY]: "11" },
        {},
        [[`metadata.annotations[${HEALTHY}]`, '"11" is not a whole number from 1 to 10']],
      ],
      [
        "unhealthy threshold -1",
        { [UNHEALTHY]: "-1" },
        {},
        [[`metadata.annotations[${UNHEALTHY}]`, '"-1" is not a whole number from 1 to 10']],
      ],
      ["port 0", { [PORT]: "0" }, {}, [[`metadata.annotations[${PORT}]`, '"0" is not a port number (1-65535)']]],
      ["path relative", { [PATH]: "ready" }, {}, [[`metadata.annotations[${PATH}]`, '"ready" must start with "/"']]],
      [
        "port and path on ETP=Local",
        { [PORT]: "9876", [PATH]: "/ready" },
        { externalTrafficPolicy: "Local", healthCheckNodePort: 31000 },
        [
          [
            `metadata.annotations[${PATH}]`,
            "an externalTrafficPolicy Local Service is checked on its spec.healthCheckNodePort; set it on a Cluster one",
          ],
          [
            `metadata.annotations[${PORT}]`,
            "an externalTrafficPolicy Local Service is checked on its spec.healthCheckNodePort; set it on a Cluster one",
          ],
        ],
      ],
    ];
    for (const [title, annotations, over, want] of refusals)
      it(`refused: ${title}`, () => rejectedWith(svc({ annotations, ...over }), want));

    it("property: timings within GCE's ranges, timeout ≤ interval, are accepted as written", () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 300 }),
          fc.integer({ min: 1, max: 300 }),
          fc.integer({ min: 1, max: 10 }),
          fc.integer({ min: 1, max: 10 }),
          (interval, timeout, healthy, unhealthy) => {
            const annotations: Record<string, string> = {
              [INTERVAL]: String(interval),
              [TIMEOUT]: String(timeout),
              [HEALTHY]: String(healthy),
              [UNHEALTHY]: String(unhealthy),
            };
            const problems: string[] = [];
            const tuning = readHealthCheckTuning((key) => annotations[key], false, {
              add: (field, message) => problems.push(`${field}: ${message}`),
            });
            if (timeout <= interval) {
              assert.deepStrictEqual(problems, []);
              assert.deepStrictEqual(tuning.timings, {
                checkIntervalSec: interval,
                timeoutSec: timeout,
                healthyThreshold: healthy,
                unhealthyThreshold: unhealthy,
              });
            } else assert.equal(problems.length, 1);
          },
        ),
      );
    });

    it("property: a threshold outside 1-10 is refused, naming its annotation", () => {
      fc.assert(
        fc.property(
          fc.oneof(fc.integer({ min: 11, max: 999_999 }), fc.constant(0)),
          fc.constantFrom(HEALTHY, UNHEALTHY),
          (value, key) => {
            const fields: string[] = [];
            readHealthCheckTuning((k) => (k === key ? String(value) : undefined), false, {
              add: (field) => fields.push(field),
            });
            assert.deepStrictEqual(fields, [`metadata.annotations[${key}]`]);
          },
        ),
      );
    });
  });

  it("the cluster description is the shared check's", () => assert.equal(SHARED_HC.description, CLUSTER_DESCRIPTION));
});
