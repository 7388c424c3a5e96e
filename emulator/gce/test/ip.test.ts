// The GCE emulator's rules (`npm run test:emulator`), one row each: what real GCE (and the
// provider @pulumi/gcp bridges) accepts, refuses with which message, replaces or updates in place.
// The source of each rule is cited next to it in emulator/gce/ (kinds.ts, validation.ts, rules/,
// networks.ts, instances.ts); a change that loosens a rule fails its row here.
// This file: IPv6 and IP literals at create, IPv6 allocation, and whose an IP is.
import * as assert from "node:assert/strict";

import type { JsonObject } from "../json";
import type { NetworkSpec } from "../networks";
import {
  PROJECT,
  REGION,
  V1,
  T,
  regional,
  GLOBAL_HC,
  passthrough,
  internalRule,
  world,
  type CreateRow,
  gceError,
  itCreates,
} from "./rulesFixtures";

const IP_CREATE_ROWS: CreateRow[] = [
  // ---- IPv6 (kinds.ts addresses / forwardingRules / firewalls; networks.ts dualStackSubnet) ----
  {
    rule: "an EXTERNAL IPv6 address for a Network Load Balancer from a dual-stack subnet with external IPv6: accepted",
    type: T.address,
    inputs: {
      ...regional,
      name: "v6",
      addressType: "EXTERNAL",
      ipVersion: "IPV6",
      ipv6EndpointType: "NETLB",
      subnetwork: "v6-ext",
    },
    expect: "accepted",
  },
  {
    rule: "an INTERNAL IPv6 address from a dual-stack subnet with internal IPv6: accepted",
    type: T.address,
    inputs: {
      ...regional,
      name: "v6",
      addressType: "INTERNAL",
      ipVersion: "IPV6",
      subnetwork: "v6-int",
      purpose: "SHARED_LOADBALANCER_VIP",
    },
    expect: "accepted",
  },
  {
    rule: "an EXTERNAL IPv6 address names its endpoint type (VM or NETLB)",
    type: T.address,
    inputs: { ...regional, name: "v6", addressType: "EXTERNAL", ipVersion: "IPV6", subnetwork: "v6-ext" },
    expect: [
      400,
      "Invalid value for field 'resource.ipv6EndpointType': ''. An EXTERNAL IPv6 address must specify its endpoint type, VM or NETLB.",
    ],
  },
  {
    rule: "an IPv6 address comes from a subnetwork",
    type: T.address,
    inputs: { ...regional, name: "v6", addressType: "EXTERNAL", ipVersion: "IPV6", ipv6EndpointType: "NETLB" },
    expect: [400, "Invalid value for field 'resource.subnetwork': ''. An IPv6 address must specify a subnetwork."],
  },
  {
    rule: "an IPv6 address from an IPv4-only subnet is refused",
    type: T.address,
    inputs: {
      ...regional,
      name: "v6",
      addressType: "EXTERNAL",
      ipVersion: "IPV6",
      ipv6EndpointType: "NETLB",
      subnetwork: "k8s-subnet",
    },
    expect: [
      400,
      `Invalid value for field 'resource.subnetwork': '${V1}/regions/${REGION}/subnetworks/k8s-subnet'. Subnetwork 'k8s-subnet' has no IPv6 range (stackType IPV4_ONLY).`,
    ],
  },
  {
    rule: "an EXTERNAL IPv6 address from a subnet with internal IPv6 is refused",
    type: T.address,
    inputs: {
      ...regional,
      name: "v6",
      addressType: "EXTERNAL",
      ipVersion: "IPV6",
      ipv6EndpointType: "NETLB",
      subnetwork: "v6-int",
    },
    expect: [
      400,
      `Invalid value for field 'resource.subnetwork': '${V1}/regions/${REGION}/subnetworks/v6-int'. An EXTERNAL IPv6 address needs a subnetwork with ipv6AccessType EXTERNAL; 'v6-int' has INTERNAL.`,
    ],
  },
  {
    rule: "an IPv6 address literal outside the subnet's IPv6 range is refused",
    type: T.address,
    inputs: {
      ...regional,
      name: "v6",
      addressType: "INTERNAL",
      ipVersion: "IPV6",
      subnetwork: "v6-int",
      address: "fd20:0:0:2::",
    },
    expect: [
      400,
      "Invalid value for field 'resource.address': 'fd20:0:0:2::'. The specified IP address is not within the subnetwork's IPv6 range fd20:0:0:1::/64.",
    ],
  },
  {
    rule: "an endpoint type on an INTERNAL address is refused",
    type: T.address,
    inputs: {
      ...regional,
      name: "v6",
      addressType: "INTERNAL",
      ipVersion: "IPV6",
      ipv6EndpointType: "NETLB",
      subnetwork: "v6-int",
    },
    expect: [
      400,
      "Invalid value for field 'resource.ipv6EndpointType': 'NETLB'. An endpoint type can only be specified for an EXTERNAL IPv6 address.",
    ],
  },
  {
    rule: "an external IPv6 forwarding rule on a backend service, ephemeral IP from its dual-stack subnet: accepted",
    setup: [[T.backendService, passthrough({ loadBalancingScheme: "EXTERNAL" })]],
    type: T.forwardingRule,
    inputs: {
      ...regional,
      name: "fr6",
      loadBalancingScheme: "EXTERNAL",
      ipVersion: "IPV6",
      ports: ["80"],
      subnetwork: "v6-ext",
      backendService: `regions/${REGION}/backendServices/bs`,
    },
    expect: "accepted",
  },
  {
    rule: "an internal IPv6 forwarding rule on its reserved internal IPv6 address: accepted",
    setup: [
      [T.backendService, passthrough({ network: "dual-net" })],
      [
        T.address,
        {
          ...regional,
          name: "v6",
          addressType: "INTERNAL",
          ipVersion: "IPV6",
          subnetwork: "v6-int",
          purpose: "SHARED_LOADBALANCER_VIP",
        },
      ],
    ],
    type: T.forwardingRule,
    inputs: internalRule({
      name: "fr6",
      ipVersion: "IPV6",
      network: "dual-net",
      subnetwork: "v6-int",
      ipAddress: `regions/${REGION}/addresses/v6`,
      backendService: `regions/${REGION}/backendServices/bs`,
    }),
    expect: "accepted",
  },
  {
    rule: "an IPv6 forwarding rule cannot point at a target pool (target pools are IPv4-only)",
    setup: [[T.targetPool, { ...regional, name: "tp", healthChecks: "legacy" }]],
    type: T.forwardingRule,
    inputs: {
      ...regional,
      name: "fr6",
      ipVersion: "IPV6",
      portRange: "80-80",
      subnetwork: "v6-ext",
      target: `regions/${REGION}/targetPools/tp`,
    },
    expect: [
      400,
      "Invalid value for field 'resource.target': an IPv6 forwarding rule cannot point at a target pool: target pool-based load balancers support IPv4 only.",
    ],
  },
  {
    rule: "an IPv6 forwarding rule names its subnetwork (GCE's message, terraform-provider-google#18407)",
    setup: [[T.backendService, passthrough({ loadBalancingScheme: "EXTERNAL" })]],
    type: T.forwardingRule,
    inputs: {
      ...regional,
      name: "fr6",
      loadBalancingScheme: "EXTERNAL",
      ipVersion: "IPV6",
      ports: ["80"],
      backendService: `regions/${REGION}/backendServices/bs`,
    },
    expect: [
      400,
      "Invalid value for field 'resource.subnetwork': ''. Subnetwork or Ip Collection must be specified for IPv6 forwarding rules.",
    ],
  },
  {
    rule: "an IPv6 forwarding rule with an IPv4 address is refused",
    setup: [[T.backendService, passthrough({ loadBalancingScheme: "EXTERNAL" })]],
    type: T.forwardingRule,
    inputs: {
      ...regional,
      name: "fr6",
      loadBalancingScheme: "EXTERNAL",
      ipVersion: "IPV6",
      ports: ["80"],
      subnetwork: "v6-ext",
      ipAddress: "10.150.0.9",
      backendService: `regions/${REGION}/backendServices/bs`,
    },
    expect: [
      400,
      "Invalid value for field 'resource.IPAddress': '10.150.0.9'. An IPv6 forwarding rule needs an IPv6 address.",
    ],
  },
  {
    rule: "a firewall with IPv6 source ranges only: accepted",
    type: T.firewall,
    inputs: {
      project: PROJECT,
      name: "fw6",
      network: "k8s-net",
      sourceRanges: ["::/0"],
      allows: [{ protocol: "tcp", ports: ["80"] }],
    },
    expect: "accepted",
  },
  {
    rule: "a firewall cannot mix IPv4 and IPv6 source ranges",
    type: T.firewall,
    inputs: {
      project: PROJECT,
      name: "fw46",
      network: "k8s-net",
      sourceRanges: ["0.0.0.0/0", "::/0"],
      allows: [{ protocol: "tcp", ports: ["80"] }],
    },
    expect: [
      400,
      "Invalid value for field 'resource.sourceRanges': a firewall rule can contain either IPv4 or IPv6 ranges, but not both.",
    ],
  },
  {
    rule: "a firewall cannot mix IPv4 and IPv6 destination ranges",
    type: T.firewall,
    inputs: {
      project: PROJECT,
      name: "fw46",
      network: "k8s-net",
      sourceRanges: ["::/0"],
      destinationRanges: ["203.0.113.7", "2001:db8::7"],
      allows: [{ protocol: "tcp", ports: ["80"] }],
    },
    expect: [
      400,
      "Invalid value for field 'resource.destinationRanges': a firewall rule can contain either IPv4 or IPv6 ranges, but not both.",
    ],
  },
  // ---- IP literals of an address insert (rules/addresses.ts, requireReservableIp) ----
  {
    rule: "an INTERNAL address literal another address holds: 409 IP_IN_USE_BY_ANOTHER_RESOURCE",
    setup: [
      [
        T.address,
        { ...regional, name: "first", addressType: "INTERNAL", subnetwork: "k8s-subnet", address: "10.130.0.9" },
      ],
    ],
    type: T.address,
    inputs: { ...regional, name: "second", addressType: "INTERNAL", subnetwork: "k8s-subnet", address: "10.130.0.9" },
    expect: [409, "IP '10.130.0.9' is already being used by another resource."],
  },
  {
    rule: "an INTERNAL address literal an instance uses: 409 IP_IN_USE_BY_ANOTHER_RESOURCE",
    type: T.address,
    inputs: { ...regional, name: "a", addressType: "INTERNAL", subnetwork: "k8s-subnet", address: "10.130.0.2" },
    expect: [409, "IP '10.130.0.2' is already being used by another resource."],
  },
  {
    rule: "an INTERNAL address may name an unused IP of its subnetwork",
    type: T.address,
    inputs: { ...regional, name: "a", addressType: "INTERNAL", subnetwork: "k8s-subnet", address: "10.130.0.77" },
    expect: "accepted",
  },
  {
    rule: "an EXTERNAL address literal another address holds (any region): 400",
    setup: [[T.address, { project: PROJECT, region: "europe-west1", name: "far", address: "203.0.113.77" }]],
    type: T.address,
    inputs: { ...regional, name: "a", address: "203.0.113.77" },
    expect: [
      400,
      "Invalid value for field 'resource.address': '203.0.113.77'. IP '203.0.113.77' is already being used by another resource.",
    ],
  },
  {
    rule: "an EXTERNAL address literal a forwarding rule of another region holds is not the project's to reserve here",
    setup: [
      [T.address, { project: PROJECT, region: "europe-west1", name: "far", address: "203.0.113.77" }],
      [
        T.forwardingRule,
        { project: PROJECT, region: "europe-west1", name: "far", portRange: "80", ipAddress: "203.0.113.77" },
      ],
    ],
    type: T.address,
    inputs: { project: PROJECT, region: "europe-west1", name: "far-2", address: "203.0.113.77" },
    expect: [
      400,
      "Invalid value for field 'resource.address': '203.0.113.77'. IP '203.0.113.77' is already being used by another resource.",
    ],
  },
  {
    rule: "an EXTERNAL ephemeral IP of another tier is not promoted: refused",
    setup: [[T.forwardingRule, { ...regional, name: "fr", portRange: "80", networkTier: "STANDARD" }]],
    type: T.address,
    inputs: { ...regional, name: "a", address: "203.0.113.1" },
    expect: [
      400,
      "Invalid value for field 'resource.address': '203.0.113.1'. The IP address is not available to this project: it is neither free nor the ephemeral IP of a forwarding rule of this project and region with network tier PREMIUM.",
    ],
  },
  {
    rule: "an EXTERNAL ephemeral IP of a forwarding rule of another region is not promoted: refused",
    setup: [[T.forwardingRule, { project: PROJECT, region: "europe-west1", name: "far", portRange: "80" }]],
    type: T.address,
    inputs: { ...regional, name: "a", address: "203.0.113.1" },
    expect: [
      400,
      "Invalid value for field 'resource.address': '203.0.113.1'. The IP address is not available to this project: it is neither free nor the ephemeral IP of a forwarding rule of this project and region with network tier PREMIUM.",
    ],
  },
];

describe("GCE emulator rules (one row per rule)", () => {
  describe("create: accepted or refused with GCE's message", () => itCreates(IP_CREATE_ROWS));

  describe("IPv6 allocation: /96 ranges of the dual-stack subnet's /64, named by their first address", () => {
    it("reserved and ephemeral IPv6 IPs come one after the other from the subnet, never twice", () => {
      const state = world();
      state.create(T.backendService, passthrough({ loadBalancingScheme: "EXTERNAL" }));
      const reserved = state.create(T.address, {
        ...regional,
        name: "v6",
        addressType: "EXTERNAL",
        ipVersion: "IPV6",
        ipv6EndpointType: "NETLB",
        subnetwork: "v6-ext",
      });
      const onAddress = state.create(T.forwardingRule, {
        ...regional,
        name: "fr6",
        ipVersion: "IPV6",
        ports: ["80"],
        subnetwork: "v6-ext",
        ipAddress: `regions/${REGION}/addresses/v6`,
        backendService: `regions/${REGION}/backendServices/bs`,
      });
      const ephemeral = state.create(T.forwardingRule, {
        ...regional,
        name: "fr6b",
        ipVersion: "IPV6",
        ports: ["80"],
        subnetwork: "v6-ext",
        backendService: `regions/${REGION}/backendServices/bs`,
      });
      const internal = state.create(T.address, {
        ...regional,
        name: "v6i",
        addressType: "INTERNAL",
        ipVersion: "IPV6",
        subnetwork: "v6-int",
        address: "FD20:0:0:1:0:9:0:0",
      });
      assert.deepEqual(
        [
          reserved.properties.address,
          onAddress.properties.ipAddress,
          ephemeral.properties.ipAddress,
          internal.properties.address,
        ],
        ["2600:1900:4000:7f3:0:1::", "2600:1900:4000:7f3:0:1::", "2600:1900:4000:7f3:0:2::", "fd20::1:0:9:0:0"],
      );
    });
    it("a subnetwork seeded half dual-stack is a test error", () => {
      const state = world();
      assert.throws(
        () =>
          state.putNetwork({
            name: "bad",
            autoCreateSubnetworks: false,
            subnetworks: [{ name: "half", ipCidrRange: "10.170.0.0/20", stackType: "IPV4_IPV6" }],
          }),
        {
          message:
            "putNetwork: subnetwork half: a dual-stack subnet (stackType IPV4_IPV6) needs an ipv6AccessType and an IPv6 /64 ipv6CidrRange, and only it has them",
        },
      );
    });
  });
});

/**
 * Whose an IP is: promotion of an ephemeral IP to a static address, a reserved IP that outlives
 * its rules, and ephemeral IPs that go back to Google's pool when their rule is deleted (sources
 * beside requireReservableIp in rules/addresses.ts, afterRemove in rules/forwardingRules.ts and
 * `released` in ipam.ts).
 */
describe("GCE emulator rules: IP ownership (one row per rule)", () => {
  const tiny: NetworkSpec = {
    name: "tiny-net",
    autoCreateSubnetworks: false,
    subnetworks: [{ name: "tiny", ipCidrRange: "10.150.0.0/29" }],
  };
  const tinyRule = (name: string): JsonObject => internalRule({ name, network: "tiny-net", subnetwork: "tiny" });
  const ROWS: ReadonlyArray<{ rule: string; run: () => void }> = [
    {
      rule: "an EXTERNAL address naming the ephemeral IP of a rule of its project, region and tier promotes it: the rule keeps the IP, now static",
      run: () => {
        const state = world();
        const ip = state.create(T.forwardingRule, { ...regional, name: "fr", portRange: "80" }).properties.ipAddress;
        assert.equal(ip, "203.0.113.1");
        const address = state.create(T.address, { ...regional, name: "kept", address: "203.0.113.1" });
        assert.deepEqual(
          [address.properties.address, address.properties.addressType, address.properties.networkTier],
          ["203.0.113.1", "EXTERNAL", "PREMIUM"],
        );
        assert.equal(
          state.get({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "fr" }).properties.ipAddress,
          "203.0.113.1",
        );
      },
    },
    {
      rule: "deleting an address a forwarding rule uses releases the reservation: the rule keeps the IP as ephemeral, which can be promoted again",
      run: () => {
        const state = world();
        const ip = state.create(T.address, { ...regional, name: "lb" }).properties.address;
        state.create(T.forwardingRule, {
          ...regional,
          name: "fr",
          portRange: "80",
          ipAddress: `regions/${REGION}/addresses/lb`,
        });
        state.delete({ kind: "addresses", project: PROJECT, scope: REGION, name: "lb" });
        assert.equal(state.find({ kind: "addresses", project: PROJECT, scope: REGION, name: "lb" }), undefined);
        assert.equal(
          state.get({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "fr" }).properties.ipAddress,
          ip,
        );
        // Ephemeral now: reserving it again by naming it is a promotion, the rule unchanged.
        assert.equal(state.create(T.address, { ...regional, name: "lb", address: String(ip) }).properties.address, ip);
        assert.equal(
          state.get({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "fr" }).properties.ipAddress,
          ip,
        );
      },
    },
    {
      rule: "deleting an INTERNAL address a forwarding rule uses: the rule keeps the IP as ephemeral",
      run: () => {
        const state = world();
        const ip = state.create(T.address, {
          ...regional,
          name: "ilb",
          addressType: "INTERNAL",
          subnetwork: "k8s-subnet",
        }).properties.address;
        state.create(T.forwardingRule, internalRule({ ipAddress: `regions/${REGION}/addresses/ilb` }));
        state.delete({ kind: "addresses", project: PROJECT, scope: REGION, name: "ilb" });
        assert.equal(
          state.get({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "fr" }).properties.ipAddress,
          ip,
        );
      },
    },
    {
      rule: "an address released under its rule, then the rule deleted: the IP goes back to Google's pool and cannot be reserved by naming it",
      run: () => {
        const state = world();
        state.create(T.address, { ...regional, name: "lb" });
        state.create(T.forwardingRule, {
          ...regional,
          name: "fr",
          portRange: "80",
          ipAddress: `regions/${REGION}/addresses/lb`,
        });
        state.delete({ kind: "addresses", project: PROJECT, scope: REGION, name: "lb" });
        state.delete({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "fr" });
        const e = gceError(() => state.create(T.address, { ...regional, name: "lb", address: "203.0.113.1" }));
        assert.deepEqual(
          [e.status, e.message],
          [
            400,
            "Invalid value for field 'resource.address': '203.0.113.1'. The IP address is not available to this project: it is neither free nor the ephemeral IP of a forwarding rule of this project and region with network tier PREMIUM.",
          ],
        );
      },
    },
    {
      rule: "an INTERNAL address naming the ephemeral IP of a rule in its subnetwork promotes it",
      run: () => {
        const state = world();
        const ip = state.create(T.forwardingRule, internalRule()).properties.ipAddress;
        assert.equal(ip, "10.130.0.4");
        const address = state.create(T.address, {
          ...regional,
          name: "kept",
          addressType: "INTERNAL",
          subnetwork: "k8s-subnet",
          address: "10.130.0.4",
        });
        assert.equal(address.properties.address, "10.130.0.4");
        assert.equal(
          state.get({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "fr" }).properties.ipAddress,
          "10.130.0.4",
        );
      },
    },
    {
      rule: "a reserved address keeps its IP when its rule is deleted: the next rule on it has the same IP",
      run: () => {
        const state = world();
        const ip = state.create(T.address, { ...regional, name: "lb" }).properties.address;
        state.create(T.forwardingRule, {
          ...regional,
          name: "fr",
          portRange: "80",
          ipAddress: `regions/${REGION}/addresses/lb`,
        });
        state.delete({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "fr" });
        assert.equal(
          state.get({ kind: "addresses", project: PROJECT, scope: REGION, name: "lb" }).properties.address,
          ip,
        );
        assert.equal(
          state.create(T.forwardingRule, {
            ...regional,
            name: "fr",
            portRange: "80",
            ipAddress: `regions/${REGION}/addresses/lb`,
          }).properties.ipAddress,
          ip,
        );
      },
    },
    {
      rule: "an ephemeral INTERNAL IP released by a deleted rule is never allocated again; the subnet runs out first",
      run: () => {
        const state = world();
        state.putNetwork(tiny);
        // 10.150.0.0/29: usable 10.150.0.2 to 10.150.0.5.
        assert.equal(state.create(T.forwardingRule, tinyRule("a")).properties.ipAddress, "10.150.0.2");
        state.delete({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "a" });
        assert.deepEqual(
          ["b", "c", "d"].map((n) => state.create(T.forwardingRule, tinyRule(n)).properties.ipAddress),
          ["10.150.0.3", "10.150.0.4", "10.150.0.5"],
        );
        const e = gceError(() => state.create(T.forwardingRule, tinyRule("e")));
        assert.deepEqual([e.status, e.message], [400, "IP space of the subnetwork tiny pool is exhausted"]);
        // Naming a free internal IP of the subnetwork is allowed (reserve-static-internal-ip-address).
        assert.equal(
          state.create(T.address, {
            ...regional,
            name: "named",
            addressType: "INTERNAL",
            subnetwork: "tiny",
            address: "10.150.0.2",
          }).properties.address,
          "10.150.0.2",
        );
      },
    },
    {
      rule: "an ephemeral EXTERNAL IP released by a deleted rule is never allocated again, nor reservable by naming it",
      run: () => {
        const state = world();
        assert.equal(
          state.create(T.forwardingRule, { ...regional, name: "fr", portRange: "80" }).properties.ipAddress,
          "203.0.113.1",
        );
        state.deleteOutOfBand({ kind: "forwardingRules", project: PROJECT, scope: REGION, name: "fr" });
        // The pool holds 4,856 IPs (the three RFC 5737 ranges, then 198.18.0.0/20 of RFC 2544's): 4,855 more allocations use every other one, then it is exhausted.
        const ips = Array.from(
          { length: 4855 },
          (_, i) => state.create(T.address, { ...regional, name: `a-${i}` }).properties.address,
        );
        assert.equal(ips.includes("203.0.113.1"), false);
        assert.deepEqual(
          [new Set(ips).size, ips[0], ips[761], ips[4854]],
          [4855, "203.0.113.2", "198.18.0.1", "198.18.15.254"],
        );
        const e = gceError(() => state.create(T.address, { ...regional, name: "one-more" }));
        assert.deepEqual([e.status, e.message], [400, "IP space of the EXTERNAL pool is exhausted"]);
        const named = gceError(() => state.create(T.address, { ...regional, name: "named", address: "203.0.113.1" }));
        assert.deepEqual(
          [named.status, named.message],
          [
            400,
            "Invalid value for field 'resource.address': '203.0.113.1'. The IP address is not available to this project: it is neither free nor the ephemeral IP of a forwarding rule of this project and region with network tier PREMIUM.",
          ],
        );
      },
    },
    {
      rule: "a global health check a backend service uses cannot be deleted: 400 resourceInUseByAnotherResource",
      run: () => {
        const state = world();
        state.create(T.backendService, passthrough({ healthChecks: GLOBAL_HC }));
        const e = gceError(() =>
          state.delete({ kind: "globalHealthChecks", project: PROJECT, scope: "global", name: "ghc" }),
        );
        assert.deepEqual(
          [e.status, e.reason, e.message],
          [
            400,
            "resourceInUseByAnotherResource",
            `The health_check resource 'projects/${PROJECT}/global/healthChecks/ghc' is already being used by 'projects/${PROJECT}/regions/${REGION}/backendServices/bs'`,
          ],
        );
        state.delete({ kind: "backendServices", project: PROJECT, scope: REGION, name: "bs" });
        state.delete({ kind: "globalHealthChecks", project: PROJECT, scope: "global", name: "ghc" });
      },
    },
  ];
  for (const row of ROWS) it(row.rule, row.run);
});
