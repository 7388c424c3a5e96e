// IP address management: the IPv4/IPv6 arithmetic GCE's address rules need, the pools ephemeral and
// static IPs come from (Google's external pool, the internal pool of a subnet), and the IPs
// allocation must skip (held by a resource, or released to Google).

import * as net from "node:net";

import { GceError } from "./errors";
import { isJsonObject } from "./json";
import { isCidr } from "./validation";
import { keyString, type ResourceKey, type StoredResource } from "./store";

/** The eight 16-bit groups of an IPv6 address, `::` expanded (callers pass what net.isIP calls IPv6). */
function ipv6Groups(ip: string): number[] {
  const [head = "", tail] = ip.split("::");
  const part = (text: string): number[] => (text === "" ? [] : text.split(":").map((group) => parseInt(group, 16)));
  const first = part(head);
  const last = tail === undefined ? [] : part(tail);
  return [...first, ...Array<number>(8 - first.length - last.length).fill(0), ...last];
}

/** RFC 5952 text of an IPv6 address, as GCE returns it: Node's URL parser writes that form. */
export function canonicalIPv6(ip: string): string {
  return new URL(`http://[${ip}]`).hostname.slice(1, -1);
}

/** Whether an IPv6 address lies in an IPv6 range `base/bits`. */
export function inRange6(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split("/");
  if (net.isIP(ip) !== 6 || base === undefined || net.isIP(base) !== 6) {
    return false;
  }
  const value = (groups: number[]): bigint => groups.reduce((acc, group) => (acc << 16n) | BigInt(group), 0n);
  const shift = BigInt(128 - Number(bits));
  return value(ipv6Groups(ip)) >> shift === value(ipv6Groups(base)) >> shift;
}

/**
 * A /96 of a subnet's /64 not in use: an IPv6 address reserved for (or an ephemeral one of) a
 * forwarding rule is a /96 range, named by its first address (addresses reference, prefixLength:
 * "the prefix length of the IPv6 range"; a NetLB address is a /96).
 */
export function allocateIPv6(
  subnet: { readonly name: string; readonly ipv6CidrRange: string | undefined },
  inUse: ReadonlySet<string>,
): string {
  const base = ipv6Groups((subnet.ipv6CidrRange ?? "::/64").split("/")[0] ?? "::").slice(0, 4);
  for (let n = 1; n < 0x10000; n++) {
    const ip = canonicalIPv6([...base, 0, n, 0, 0].map((group) => group.toString(16)).join(":"));
    if (!inUse.has(ip)) {
      return ip;
    }
  }
  throw new GceError(400, `IP space of subnetwork ${subnet.name} is exhausted`, "ipSpaceExhausted");
}

function ipToInt(ip: string): number {
  return ip.split(".").reduce((acc, part) => acc * 256 + Number(part), 0);
}

function intToIp(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join(".");
}

/** The usable addresses of a subnet range: GCE reserves the first two and the last two. */
export function usableRange(cidr: string): readonly [string, string] {
  const [base, bits] = cidr.split("/");
  const size = 2 ** (32 - Number(bits));
  const start = Math.floor(ipToInt(base ?? "0.0.0.0") / size) * size;
  return [intToIp(start + 2), intToIp(start + size - 3)];
}

export function inRange(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split("/");
  if (net.isIP(ip) !== 4 || base === undefined) {
    return false;
  }
  const size = 2 ** (32 - Number(bits));
  return Math.floor(ipToInt(ip) / size) === Math.floor(ipToInt(base) / size);
}

export function cidrsOverlap(a: string, b: string): boolean {
  return inRange(a.split("/")[0] ?? "", b) || inRange(b.split("/")[0] ?? "", a);
}

export function isCidr4(cidr: string): boolean {
  return isCidr(cidr) && cidr.includes("/") && net.isIP(cidr.split("/")[0] ?? "") === 4;
}

/** Counts up through its ranges, skipping addresses in use; wraps around once exhausted. */
export class IpPool {
  private readonly ranges: ReadonlyArray<readonly [number, number]>;
  private readonly size: number;
  private cursor = 0;

  constructor(
    readonly label: string,
    ranges: ReadonlyArray<readonly [string, string]>,
  ) {
    this.ranges = ranges.map(([a, b]) => [ipToInt(a), ipToInt(b)] as const);
    this.size = this.ranges.reduce((acc, [a, b]) => acc + b - a + 1, 0);
  }

  private at(index: number): string {
    let i = index;
    for (const [a, b] of this.ranges) {
      const n = b - a + 1;
      if (i < n) {
        return intToIp(a + i);
      }
      i -= n;
    }
    throw new Error(`IpPool ${this.label}: index ${index} out of range`);
  }

  allocate(inUse: ReadonlySet<string>): string {
    for (let step = 0; step < this.size; step++) {
      const index = (this.cursor + step) % this.size;
      const ip = this.at(index);
      if (!inUse.has(ip)) {
        this.cursor = index + 1;
        return ip;
      }
    }
    throw new GceError(400, `IP space of the ${this.label} pool is exhausted`, "ipSpaceExhausted");
  }

  reset(): void {
    this.cursor = 0;
  }
}

/** The pools IPv4 addresses come from and the ephemeral IPs given back to Google. */
export class Ipam {
  // Addresses never routed on the internet: the three documentation ranges (RFC 5737) first, then
  // 198.18.0.0/20 of the benchmarking range (RFC 2544, RFC 6890 "Benchmarking"): 4,856 external
  // IPs, enough for bench:scale's 2,000 Services and their nodes (released ephemeral IPs are never
  // handed out again). GCE's own pool has no such end within a project's quotas (STATIC_ADDRESSES,
  // IN_USE_ADDRESSES: limits.ts); with 762 the 2,000-Service bench failed at the 763rd address.
  readonly external = new IpPool("EXTERNAL", [
    ["203.0.113.1", "203.0.113.254"],
    ["198.51.100.1", "198.51.100.254"],
    ["192.0.2.1", "192.0.2.254"],
    ["198.18.0.1", "198.18.15.254"],
  ]);
  /** The internal pool of an address whose network has no subnet in its region. */
  readonly internal = new IpPool("INTERNAL", [["10.128.0.2", "10.128.15.254"]]);
  /**
   * Ephemeral IPs released by deleted forwarding rules. GCE returns a released ephemeral IP to
   * Google's pool ("Ephemeral IP addresses ... are released when the resource is deleted":
   * cloud.google.com/vpc/docs/ip-addresses#ephemeraladdress), where other customers may get it; a
   * new ephemeral rule practically never gets it back, so this emulator never allocates it again.
   */
  private readonly released = new Set<string>();

  release(ip: string): void {
    this.released.add(ip);
  }

  /** IPs allocation must skip: those held by any resource (but `except`), and released ephemeral ones. */
  inUse(resources: readonly StoredResource[], except?: ResourceKey): Set<string> {
    const used = new Set<string>(this.released);
    for (const r of resources) {
      if (except !== undefined && keyString(r) === keyString(except)) {
        continue;
      }
      const p = r.properties;
      for (const v of [p.address, p.ipAddress]) {
        if (typeof v === "string") {
          used.add(v);
        }
      }
      if (Array.isArray(p.networkInterfaces)) {
        for (const nic of p.networkInterfaces) {
          if (!isJsonObject(nic)) {
            continue;
          }
          if (typeof nic.networkIP === "string") {
            used.add(nic.networkIP);
          }
          if (Array.isArray(nic.accessConfigs)) {
            for (const ac of nic.accessConfigs) {
              if (isJsonObject(ac) && typeof ac.natIP === "string") {
                used.add(ac.natIP);
              }
            }
          }
        }
      }
    }
    return used;
  }

  reset(): void {
    this.external.reset();
    this.internal.reset();
    this.released.clear();
  }
}
