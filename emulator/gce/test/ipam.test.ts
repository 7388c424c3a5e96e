// IP address management (ipam.ts): the arithmetic GCE's address rules use, the pools, and the IPs
// allocation skips.
import * as assert from "node:assert/strict";

import { GceError } from "../errors";
import { allocateIPv6, canonicalIPv6, cidrsOverlap, inRange, inRange6, Ipam, IpPool, usableRange } from "../ipam";
import type { StoredResource } from "../store";

describe("GCE emulator IPAM (ipam.ts)", () => {
  it("IPv4 and IPv6 ranges: usable range (GCE keeps the first two and last two), membership, overlap", () => {
    assert.deepEqual(usableRange("10.128.0.0/20"), ["10.128.0.2", "10.128.15.253"]);
    assert.deepEqual(
      [inRange("10.128.15.255", "10.128.0.0/20"), inRange("10.128.16.0", "10.128.0.0/20"), inRange("fd20::1", "::/0")],
      [true, false, false],
    );
    assert.deepEqual(
      [cidrsOverlap("10.0.0.0/8", "10.1.0.0/16"), cidrsOverlap("10.0.0.0/16", "10.1.0.0/16")],
      [true, false],
    );
    assert.deepEqual(
      [inRange6("fd20:0:0:1::5", "fd20:0:0:1::/64"), inRange6("fd20:0:0:2::5", "fd20:0:0:1::/64")],
      [true, false],
    );
    assert.equal(canonicalIPv6("FD20:0:0:1:0:9:0:0"), "fd20::1:0:9:0:0");
  });

  it("allocateIPv6 hands out the first /96 of the subnet's /64 not in use", () => {
    const subnet = { name: "v6", ipv6CidrRange: "2600:1900:4000:7f3::/64" };
    assert.equal(allocateIPv6(subnet, new Set()), "2600:1900:4000:7f3:0:1::");
    assert.equal(allocateIPv6(subnet, new Set(["2600:1900:4000:7f3:0:1::"])), "2600:1900:4000:7f3:0:2::");
  });

  it("a pool counts up through its ranges, skips IPs in use, wraps around, and says when it is exhausted", () => {
    const pool = new IpPool("tiny", [
      ["192.0.2.1", "192.0.2.2"],
      ["198.51.100.7", "198.51.100.7"],
    ]);
    assert.deepEqual(
      [pool.allocate(new Set()), pool.allocate(new Set(["192.0.2.2"])), pool.allocate(new Set())],
      ["192.0.2.1", "198.51.100.7", "192.0.2.1"],
    );
    const full = new Set(["192.0.2.1", "192.0.2.2", "198.51.100.7"]);
    assert.throws(
      () => pool.allocate(full),
      (e: unknown) =>
        e instanceof GceError &&
        e.status === 400 &&
        e.reason === "ipSpaceExhausted" &&
        e.message === "IP space of the tiny pool is exhausted",
    );
    pool.reset();
    assert.equal(pool.allocate(new Set()), "192.0.2.1");
  });

  it("the IPs in use: addresses, rule IPs, instance interfaces and released ones, except the one named", () => {
    const ipam = new Ipam();
    ipam.release("203.0.113.9");
    const resources: StoredResource[] = [
      { kind: "addresses", project: "p", scope: "r", name: "a", properties: { address: "203.0.113.1" } },
      { kind: "forwardingRules", project: "p", scope: "r", name: "f", properties: { ipAddress: "10.0.0.5" } },
      {
        kind: "instances",
        project: "p",
        scope: "r-a",
        name: "vm",
        properties: { networkInterfaces: [{ networkIP: "10.0.0.2", accessConfigs: [{ natIP: "192.0.2.3" }] }] },
      },
    ];
    assert.deepEqual([...ipam.inUse(resources)].sort(), [
      "10.0.0.2",
      "10.0.0.5",
      "192.0.2.3",
      "203.0.113.1",
      "203.0.113.9",
    ]);
    assert.deepEqual([...ipam.inUse(resources, { kind: "addresses", project: "p", scope: "r", name: "a" })].sort(), [
      "10.0.0.2",
      "10.0.0.5",
      "192.0.2.3",
      "203.0.113.9",
    ]);
    assert.equal(ipam.external.allocate(ipam.inUse(resources)), "203.0.113.2");
    ipam.reset();
    assert.deepEqual([...ipam.inUse([])], []);
    assert.equal(ipam.external.allocate(new Set()), "203.0.113.1");
  });
});
