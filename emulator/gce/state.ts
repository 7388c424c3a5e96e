// The GCE emulator's one in-memory model: the Compute resources dccm manages (keyed by kind,
// project, scope and name), seeded instances, IP allocation, GCE's rules (names, conflicts,
// references that must exist, resources in use that cannot be deleted, immutable fields) and
// fault injection. The HTTP face (http.ts) and the Pulumi provider face (provider-api.ts,
// provider.ts) both work on this state.

import { createHash } from "node:crypto";
import * as net from "node:net";

import { canonical, clone, containsUnknown, deepEqual, isJsonObject, type Json, type JsonObject } from "./json";
import {
  defaultFor,
  forwardingRulePorts,
  type GceKind,
  healthCheckType,
  invalidNameMessage,
  isCidr,
  kindOf,
  kindOfPath,
  NAME_RE,
  normalizeRef,
  parseResourcePath,
  type RefContext,
  type RefTarget,
  resourcePath,
  scopePath,
  specOf,
  validateInputs,
} from "./kinds";

export interface ResourceKey {
  readonly kind: GceKind;
  readonly project: string;
  /** region name for regional kinds, zone name for zonal kinds, "global" otherwise */
  readonly scope: string;
  readonly name: string;
}

export interface StoredResource extends ResourceKey {
  /** Pulumi-named properties for managed kinds; Compute REST fields for instances. */
  readonly properties: JsonObject;
}

const REASONS: Readonly<Record<number, string>> = {
  400: "invalid",
  401: "required",
  403: "forbidden",
  404: "notFound",
  409: "alreadyExists",
  412: "conditionNotMet",
  429: "rateLimitExceeded",
  500: "backendError",
  503: "backendError",
};

/** An error as the Compute API reports it: HTTP status, reason, message. */
export class GceError extends Error {
  readonly status: number;
  readonly reason: string;

  constructor(status: number, message: string, reason?: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "GceError";
    this.status = status;
    this.reason = reason ?? REASONS[status] ?? "backendError";
  }

  /** The JSON body Google returns: `{"error":{"code","message","errors":[{"reason"}]}}`. */
  toBody(): JsonObject {
    return {
      error: {
        code: this.status,
        message: this.message,
        errors: [{ reason: this.reason }],
      },
    };
  }
}

export function notFound(path: string): GceError {
  return new GceError(404, `The resource '${path}' was not found`, "notFound");
}

export type FaultOperation = "create" | "update" | "delete" | "read" | "get";

/** One change of a resource, through any face (provider, REST, out of band, seeding). */
export interface HistoryEntry {
  /** When it happened, in ms since the epoch (the emulator's clock). */
  readonly at: number;
  readonly kind: GceKind;
  readonly scope: string;
  readonly name: string;
  readonly op: "create" | "update" | "delete";
}

/** Where an out-of-band insert lands: project and region/zone (default: the emulator's). */
export interface OutOfBandWhere {
  readonly project?: string;
  readonly scope?: string;
}

/** A check before a create (GceState.setCreateGuard): the key, its inputs, everything stored. */
export type CreateGuard = (key: ResourceKey, properties: JsonObject, existing: readonly StoredResource[]) => void;

export interface FaultSpec {
  /** A GceKind ("forwardingRules") or a Pulumi type token ("gcp:compute/forwardingRule:ForwardingRule"). */
  readonly kind: string;
  /** Only operations on this resource name; any name when absent. */
  readonly name?: string;
  readonly operation: FaultOperation;
  readonly status: number;
  readonly message: string;
  /** Defaults from the status (400 invalid, 404 notFound, 409 alreadyExists, 429 rateLimitExceeded, 5xx backendError). */
  readonly reason?: string;
  /** How many matching operations fail. Default 1. */
  readonly count?: number;
}

interface ActiveFault {
  readonly kind: GceKind;
  readonly name: string | undefined;
  readonly operation: FaultOperation;
  readonly status: number;
  readonly message: string;
  readonly reason: string | undefined;
  remaining: number;
}

export interface NetworkInterfaceSpec {
  readonly networkIP?: string;
  readonly ipv6Address?: string;
  readonly network?: string;
  /** One entry per external IP; an entry without natIP gets an ephemeral one. */
  readonly accessConfigs?: ReadonlyArray<{ readonly natIP?: string }>;
  /**
   * Alias IP ranges (VPC-native pods): an explicit IPv4 CIDR (or one address, a /32) from the
   * interface's subnet, its primary range or the secondary range `subnetworkRangeName`.
   */
  readonly aliasIpRanges?: ReadonlyArray<{ readonly ipCidrRange: string; readonly subnetworkRangeName?: string }>;
}

/**
 * Compute v1 Instance.status values (instances resource reference). A stopped VM is TERMINATED
 * (after STOPPING), a suspended one SUSPENDED (after SUSPENDING); starting goes through
 * PROVISIONING/STAGING to RUNNING (compute/docs/instances/instance-life-cycle).
 */
export const INSTANCE_STATUSES: readonly string[] = [
  "PROVISIONING",
  "STAGING",
  "RUNNING",
  "STOPPING",
  "STOPPED",
  "SUSPENDING",
  "SUSPENDED",
  "REPAIRING",
  "TERMINATED",
  "DEPROVISIONING",
];

export interface InstanceSpec {
  /** Short name ("e2-standard-2") or URL. Default e2-standard-2. */
  readonly machineType?: string;
  /** Default RUNNING. */
  readonly status?: string;
  /** Default: one interface with an allocated internal IP and no external IP. */
  readonly networkInterfaces?: readonly NetworkInterfaceSpec[];
  readonly tags?: readonly string[];
  readonly labels?: Readonly<Record<string, string>>;
}

export interface GceStateOptions {
  /** `http://127.0.0.1:PORT`: self links are `${endpoint}/compute/v1/projects/...`. */
  readonly endpoint: string;
  readonly project: string;
  readonly region: string;
  readonly zones: readonly string[];
  /** Clock for creationTimestamp. Default: the real clock. */
  readonly now?: () => Date;
  /**
   * VPC networks of the default project. Default: the `default` auto-mode network a new project
   * has, with its subnetwork `default` (10.128.0.0/20) in the region.
   */
  readonly networks?: readonly NetworkSpec[];
  /** The network of seeded instances whose interfaces name none. Default `default`. */
  readonly instanceNetwork?: string;
  /**
   * TEST ONLY: instances one unmanaged instance group may hold. Default
   * INSTANCE_GROUP_MAX_INSTANCES, GCE's documented limit; lowered only to prove at small scale
   * what a zone beyond the limit does.
   */
  readonly instanceGroupMaxInstances?: number;
}

/**
 * VM instances in one instance group: 1,000 (Compute Engine: "A managed instance group can have up
 * to 1000 VM instances per group", compute/docs/reference/rest/v1/instanceGroupManagers/insert; the
 * same 1,000 as the stock CCM's maxInstancesPerInstanceGroup, gce_loadbalancer_internal.go; dccm's
 * model/limits.ts cites the same sources).
 */
export const INSTANCE_GROUP_MAX_INSTANCES = 1000;

export interface SubnetworkSpec {
  readonly name: string;
  /** Default: the emulator's region. */
  readonly region?: string;
  /** The primary IPv4 range, `10.128.0.0/20`. */
  readonly ipCidrRange: string;
  /**
   * IPV4_IPV6: a dual-stack subnet (subnetworks resource reference, stackType), whose IPv6 range is
   * external or internal by `ipv6AccessType` and is `ipv6CidrRange` (a /64: GCE picks it, a test
   * names it). Default IPV4_ONLY: no IPv6 address or forwarding rule comes from it.
   */
  readonly stackType?: "IPV4_ONLY" | "IPV4_IPV6";
  readonly ipv6AccessType?: "EXTERNAL" | "INTERNAL";
  /** The subnet's IPv6 /64 (dual-stack only): external `2600:1900:4000:7f3::/64`, internal `fd20:0:0:1::/64`. */
  readonly ipv6CidrRange?: string;
  /** Secondary IPv4 ranges (subnetworks resource reference, secondaryIpRanges[]): alias IP ranges come from them. */
  readonly secondaryIpRanges?: ReadonlyArray<{ readonly rangeName: string; readonly ipCidrRange: string }>;
}

export interface NetworkSpec {
  readonly name: string;
  /** Default: the emulator's project. */
  readonly project?: string;
  /**
   * Auto mode: GCE creates one subnetwork named like the network per region (the emulator: in its
   * region, 10.128.0.0/20). Custom mode: only the listed subnetworks exist, and internal addresses
   * and forwarding rules must name one.
   */
  readonly autoCreateSubnetworks: boolean;
  readonly subnetworks?: readonly SubnetworkSpec[];
}

interface StoredNetwork {
  readonly project: string;
  readonly name: string;
  readonly autoCreateSubnetworks: boolean;
}

interface StoredSubnetwork {
  readonly project: string;
  readonly region: string;
  readonly name: string;
  /** Self link of its network. */
  readonly network: string;
  readonly ipCidrRange: string;
  readonly ipv6CidrRange: string | undefined;
  readonly ipv6AccessType: "EXTERNAL" | "INTERNAL" | undefined;
  readonly secondaryIpRanges: ReadonlyArray<{ readonly rangeName: string; readonly ipCidrRange: string }>;
  readonly pool: IpPool;
}

/** The eight 16-bit groups of an IPv6 address, `::` expanded (callers pass what net.isIP calls IPv6). */
function ipv6Groups(ip: string): number[] {
  const [head = "", tail] = ip.split("::");
  const part = (text: string): number[] => (text === "" ? [] : text.split(":").map((group) => parseInt(group, 16)));
  const first = part(head);
  const last = tail === undefined ? [] : part(tail);
  return [...first, ...Array<number>(8 - first.length - last.length).fill(0), ...last];
}

/** RFC 5952 text of an IPv6 address, as GCE returns it: Node's URL parser writes that form. */
function canonicalIPv6(ip: string): string {
  return new URL(`http://[${ip}]`).hostname.slice(1, -1);
}

/** Whether an IPv6 address lies in an IPv6 range `base/bits`. */
function inRange6(ip: string, cidr: string): boolean {
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
function allocateIPv6(subnet: StoredSubnetwork, inUse: ReadonlySet<string>): string {
  const base = ipv6Groups((subnet.ipv6CidrRange ?? "::/64").split("/")[0] ?? "::").slice(0, 4);
  for (let n = 1; n < 0x10000; n++) {
    const ip = canonicalIPv6([...base, 0, n, 0, 0].map((group) => group.toString(16)).join(":"));
    if (!inUse.has(ip)) {
      return ip;
    }
  }
  throw new GceError(400, `IP space of subnetwork ${subnet.name} is exhausted`, "ipSpaceExhausted");
}

/** The usable addresses of a subnet range: GCE reserves the first two and the last two. */
function usableRange(cidr: string): readonly [string, string] {
  const [base, bits] = cidr.split("/");
  const size = 2 ** (32 - Number(bits));
  const start = Math.floor(ipToInt(base ?? "0.0.0.0") / size) * size;
  return [intToIp(start + 2), intToIp(start + size - 3)];
}

function inRange(ip: string, cidr: string): boolean {
  const [base, bits] = cidr.split("/");
  if (net.isIP(ip) !== 4 || base === undefined) {
    return false;
  }
  const size = 2 ** (32 - Number(bits));
  return Math.floor(ipToInt(ip) / size) === Math.floor(ipToInt(base) / size);
}

function cidrsOverlap(a: string, b: string): boolean {
  return inRange(a.split("/")[0] ?? "", b) || inRange(b.split("/")[0] ?? "", a);
}

function isCidr4(cidr: string): boolean {
  return isCidr(cidr) && cidr.includes("/") && net.isIP(cidr.split("/")[0] ?? "") === 4;
}

/**
 * Secondary ranges of a subnet (cloud.google.com/vpc/docs/subnets#valid-ranges): each a named
 * IPv4 range ("The secondary range name must be unique within the subnet" and RFC 1035 like
 * resource names), none overlapping the primary range or another secondary range of the subnet.
 */
function checkSecondaryRanges(sub: SubnetworkSpec): void {
  const ranges = sub.secondaryIpRanges ?? [];
  ranges.forEach((r, i) => {
    if (!NAME_RE.test(r.rangeName) || ranges.findIndex((o) => o.rangeName === r.rangeName) !== i) {
      throw new Error(
        `putNetwork: subnetwork ${sub.name}: secondary range name "${r.rangeName}" must be a unique RFC 1035 name`,
      );
    }
    if (!isCidr4(r.ipCidrRange)) {
      throw new Error(
        `putNetwork: subnetwork ${sub.name}: secondary range ${r.rangeName} needs an IPv4 CIDR, got ${r.ipCidrRange}`,
      );
    }
    const clash = [sub.ipCidrRange, ...ranges.slice(0, i).map((o) => o.ipCidrRange)].find((o) =>
      cidrsOverlap(o, r.ipCidrRange),
    );
    if (clash !== undefined) {
      throw new Error(
        `putNetwork: subnetwork ${sub.name}: secondary range ${r.rangeName} (${r.ipCidrRange}) overlaps ${clash}`,
      );
    }
  });
}

/**
 * One alias IP range of an interface (cloud.google.com/vpc/docs/alias-ip): from the primary range
 * of the interface's subnet, or from the secondary range `subnetworkRangeName`, which must exist;
 * "Alias IP ranges ... must not conflict with" the ranges of other VMs in the subnet (nor, in the
 * primary range, the VM's own address). GCE also allocates a range from a netmask ("/24"); the
 * emulator is given explicit ranges. Messages are the emulator's (GCE's exact text is not documented).
 */
function aliasRange(
  alias: { readonly ipCidrRange: string; readonly subnetworkRangeName?: string },
  subnet: StoredSubnetwork | undefined,
  field: string,
  inUse: { cidr: string; owner: string }[],
  networkIP: string,
  owner: string,
): JsonObject {
  const cidr = net.isIP(alias.ipCidrRange) === 4 ? `${alias.ipCidrRange}/32` : alias.ipCidrRange;
  if (!isCidr4(cidr)) {
    throw new GceError(
      400,
      `Invalid value for field 'resource.${field}.ipCidrRange': '${alias.ipCidrRange}'. The emulator needs an explicit IPv4 range.`,
      "invalid",
    );
  }
  if (subnet === undefined) {
    throw new GceError(
      400,
      `Invalid value for field 'resource.${field}': the interface has no subnetwork to take an alias IP range from.`,
      "invalid",
    );
  }
  const name = alias.subnetworkRangeName;
  const from =
    name === undefined ? subnet.ipCidrRange : subnet.secondaryIpRanges.find((r) => r.rangeName === name)?.ipCidrRange;
  if (from === undefined) {
    throw new GceError(
      400,
      `Invalid value for field 'resource.${field}.subnetworkRangeName': '${name ?? ""}'. Subnetwork '${subnet.name}' has no secondary range of that name.`,
      "invalid",
    );
  }
  if (!inRange(cidr.split("/")[0] ?? "", from) || Number(cidr.split("/")[1]) < Number(from.split("/")[1])) {
    throw new GceError(
      400,
      `Invalid value for field 'resource.${field}.ipCidrRange': '${cidr}'. It is not within ${name === undefined ? "the primary range" : `secondary range '${name}'`} ${from} of subnetwork '${subnet.name}'.`,
      "invalid",
    );
  }
  const clash = inUse.find((u) => cidrsOverlap(u.cidr, cidr));
  if (clash !== undefined || (name === undefined && inRange(networkIP, cidr))) {
    throw new GceError(
      400,
      `Invalid value for field 'resource.${field}.ipCidrRange': '${cidr}'. It overlaps ${clash === undefined ? `the interface's address ${networkIP}` : `alias range ${clash.cidr} of instance '${clash.owner}'`}.`,
      "invalid",
    );
  }
  inUse.push({ cidr, owner });
  return name === undefined ? { ipCidrRange: cidr } : { ipCidrRange: cidr, subnetworkRangeName: name };
}

/** A region's name from one of its zones' names (`us-central1-a` → `us-central1`). */
export function regionOfZone(zone: string): string {
  return zone.replace(/-[a-z]$/, "");
}

function ipToInt(ip: string): number {
  return ip.split(".").reduce((acc, part) => acc * 256 + Number(part), 0);
}

function intToIp(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join(".");
}

/** Counts up through its ranges, skipping addresses in use; wraps around once exhausted. */
class IpPool {
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

function keyString(k: ResourceKey): string {
  return `${k.kind}/${k.project}/${k.scope}/${k.name}`;
}

function compareKeys(a: ResourceKey, b: ResourceKey): number {
  for (const f of ["kind", "project", "scope", "name"] as const) {
    if (a[f] < b[f]) {
      return -1;
    }
    if (a[f] > b[f]) {
      return 1;
    }
  }
  return 0;
}

function asString(v: Json | undefined): string | undefined {
  return typeof v === "string" ? v : undefined;
}

function fingerprintOf(v: Json): string {
  return createHash("sha256").update(canonical(v)).digest().subarray(0, 8).toString("base64");
}

/**
 * Rewrites input shorthands that depend on a sibling input into a standalone form: a route's
 * bare `nextHopInstance` name plus `nextHopInstanceZone` becomes `zone/name`.
 */
export function expandShorthands(kind: GceKind, props: JsonObject): JsonObject {
  const hop = props.nextHopInstance;
  const zone = props.nextHopInstanceZone;
  if (
    kind === "routes" &&
    typeof hop === "string" &&
    typeof zone === "string" &&
    /^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(hop)
  ) {
    return { ...props, nextHopInstance: `${zone}/${hop}` };
  }
  return props;
}

/** A resource's fingerprint: over its properties except the per-run ones (id, timestamp, self link). */
function resourceFingerprint(props: JsonObject): string {
  return fingerprintOf({ ...props, fingerprint: null, id: null, creationTimestamp: null, selfLink: null });
}

/** Keys of stored properties that are computed by the emulator, never inputs. */
const COMPUTED = new Set(["id", "selfLink", "creationTimestamp", "fingerprint", "labelFingerprint", "size", "type"]);

export class GceState {
  readonly endpoint: string;
  readonly project: string;
  readonly region: string;
  readonly zones: readonly string[];
  private readonly now: () => Date;
  private readonly resources = new Map<string, StoredResource>();
  private faults: ActiveFault[] = [];
  private nextId = 1n;
  // Addresses never routed on the internet: the three documentation ranges (RFC 5737) first, then
  // 198.18.0.0/20 of the benchmarking range (RFC 2544, RFC 6890 "Benchmarking"): 4,856 external
  // IPs, enough for bench:scale's 2,000 Services and their nodes (released ephemeral IPs are never
  // handed out again). GCE's own pool has no such end within a project's quotas (STATIC_ADDRESSES,
  // IN_USE_ADDRESSES: limits.ts); with 762 the 2,000-Service bench failed at the 763rd address.
  private readonly externalPool = new IpPool("EXTERNAL", [
    ["203.0.113.1", "203.0.113.254"],
    ["198.51.100.1", "198.51.100.254"],
    ["192.0.2.1", "192.0.2.254"],
    ["198.18.0.1", "198.18.15.254"],
  ]);
  private readonly internalPool = new IpPool("INTERNAL", [["10.128.0.2", "10.128.15.254"]]);
  private readonly networks = new Map<string, StoredNetwork>();
  private readonly subnetworks = new Map<string, StoredSubnetwork>();
  private readonly initialNetworks: readonly NetworkSpec[];
  private readonly instanceNetwork: string;
  /**
   * Ephemeral IPs released by deleted forwarding rules. GCE returns a released ephemeral IP to
   * Google's pool ("Ephemeral IP addresses ... are released when the resource is deleted":
   * cloud.google.com/vpc/docs/ip-addresses#ephemeraladdress), where other customers may get it; a
   * new ephemeral rule practically never gets it back, so this emulator never allocates it again.
   */
  private readonly released = new Set<string>();
  private events: HistoryEntry[] = [];
  private readonly groupMaxInstances: number;
  /** Asked before every create with what exists (limits.ts: project quotas); throws to refuse it. */
  private createGuard: CreateGuard | undefined;

  constructor(opts: GceStateOptions) {
    this.endpoint = opts.endpoint.replace(/\/+$/, "");
    this.project = opts.project;
    this.region = opts.region;
    this.zones = [...opts.zones];
    this.now = opts.now ?? (() => new Date());
    this.initialNetworks = opts.networks ?? [{ name: "default", autoCreateSubnetworks: true }];
    this.instanceNetwork = opts.instanceNetwork ?? "default";
    this.groupMaxInstances = opts.instanceGroupMaxInstances ?? INSTANCE_GROUP_MAX_INSTANCES;
    this.initialNetworks.forEach((n) => this.putNetwork(n));
  }

  /** Sets the check every create passes (quotas, limits.ts), through any face. */
  setCreateGuard(guard: CreateGuard | undefined): void {
    this.createGuard = guard;
  }

  // ---- networks ----------------------------------------------------------------------------

  /** Creates (or replaces) a VPC network and its subnetworks (test seeding, like instances). */
  putNetwork(spec: NetworkSpec): void {
    const project = spec.project ?? this.project;
    if (!NAME_RE.test(spec.name)) {
      throw new GceError(400, invalidNameMessage(spec.name), "invalid");
    }
    this.networks.set(`${project}/${spec.name}`, {
      project,
      name: spec.name,
      autoCreateSubnetworks: spec.autoCreateSubnetworks,
    });
    const subnets: SubnetworkSpec[] = [...(spec.subnetworks ?? [])];
    if (spec.autoCreateSubnetworks && !subnets.some((s) => (s.region ?? this.region) === this.region)) {
      subnets.push({ name: spec.name, region: this.region, ipCidrRange: "10.128.0.0/20" });
    }
    const networkLink = `${this.endpoint}/compute/v1/projects/${project}/global/networks/${spec.name}`;
    for (const sub of subnets) {
      const region = sub.region ?? this.region;
      if (!isCidr(sub.ipCidrRange) || net.isIP(sub.ipCidrRange.split("/")[0] ?? "") !== 4) {
        throw new Error(`putNetwork: subnetwork ${sub.name} needs an IPv4 ipCidrRange, got ${sub.ipCidrRange}`);
      }
      const dualStack = sub.stackType === "IPV4_IPV6";
      const v6 = sub.ipv6CidrRange;
      if (
        dualStack !== (sub.ipv6AccessType !== undefined && v6 !== undefined) ||
        (v6 !== undefined && (!isCidr(v6) || net.isIP(v6.split("/")[0] ?? "") !== 6 || !v6.endsWith("/64")))
      ) {
        throw new Error(
          `putNetwork: subnetwork ${sub.name}: a dual-stack subnet (stackType IPV4_IPV6) needs an ipv6AccessType and an IPv6 /64 ipv6CidrRange, and only it has them`,
        );
      }
      checkSecondaryRanges(sub);
      this.subnetworks.set(`${project}/${region}/${sub.name}`, {
        project,
        region,
        name: sub.name,
        network: networkLink,
        ipCidrRange: sub.ipCidrRange,
        ipv6CidrRange: v6,
        ipv6AccessType: sub.ipv6AccessType,
        secondaryIpRanges: (sub.secondaryIpRanges ?? []).map((r) => ({
          rangeName: r.rangeName,
          ipCidrRange: r.ipCidrRange,
        })),
        pool: new IpPool(`subnetwork ${sub.name}`, [usableRange(sub.ipCidrRange)]),
      });
    }
  }

  private networkOf(link: string): StoredNetwork | undefined {
    const p = parseResourcePath(link);
    return p === undefined || p.collection !== "networks" ? undefined : this.networks.get(`${p.project}/${p.name}`);
  }

  private subnetworkOf(link: string): StoredSubnetwork | undefined {
    const p = parseResourcePath(link);
    return p === undefined || p.collection !== "subnetworks"
      ? undefined
      : this.subnetworks.get(`${p.project}/${p.scope}/${p.name}`);
  }

  /** A network reference must name an existing network (GCE answers 404 otherwise). */
  private requireNetwork(link: Json | undefined): void {
    if (typeof link === "string" && this.networkOf(link) === undefined) {
      const p = parseResourcePath(link);
      throw notFound(p === undefined ? link : `projects/${p.project}/global/networks/${p.name}`);
    }
  }

  private requireSubnetwork(link: Json | undefined, networkLink: Json | undefined): StoredSubnetwork | undefined {
    if (typeof link !== "string") {
      return undefined;
    }
    const sub = this.subnetworkOf(link);
    if (sub === undefined) {
      const p = parseResourcePath(link);
      throw notFound(p === undefined ? link : `projects/${p.project}/regions/${p.scope}/subnetworks/${p.name}`);
    }
    if (typeof networkLink === "string" && networkLink !== sub.network) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.subnetwork': '${link}'. Subnetwork should belong to network '${networkLink}', but it belongs to '${sub.network}'.`,
        "invalid",
      );
    }
    return sub;
  }

  /**
   * The subnetwork an internal IP comes from: the named one, or the network's (default: the
   * project's \`default\`) subnetwork in the region. A custom-mode network has no implicit one:
   * internal addresses and forwarding rules there must name their subnetwork.
   */
  private internalSubnet(
    key: ResourceKey,
    props: JsonObject,
    field: "IPAddress" | "address",
  ): StoredSubnetwork | undefined {
    const named = this.requireSubnetwork(props.subnetwork, props.network);
    if (named !== undefined) {
      return named;
    }
    const networkLink =
      typeof props.network === "string"
        ? props.network
        : `${this.endpoint}/compute/v1/projects/${key.project}/global/networks/default`;
    const network = this.networkOf(networkLink);
    if (network === undefined) {
      this.requireNetwork(networkLink);
      return undefined;
    }
    if (!network.autoCreateSubnetworks) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.subnetwork': ''. Network '${networkLink}' is a custom mode network: an internal ${field === "address" ? "address" : "forwarding rule"} must specify a subnetwork.`,
        "invalid",
      );
    }
    return [...this.subnetworks.values()].find((s) => s.network === networkLink && s.region === key.scope);
  }

  /**
   * The dual-stack subnetwork an IPv6 address or forwarding rule comes from: it must be named
   * (GCE's message for a rule, verbatim from hashicorp/terraform-provider-google#18407: "Subnetwork
   * or Ip Collection must be specified for IPv6 forwarding rules."), be dual-stack (subnetworks
   * reference: stackType IPV4_IPV6), and its ipv6AccessType must be the scheme's: external IPv6
   * addresses and rules come from an EXTERNAL range, internal ones from an INTERNAL range
   * (cloud.google.com/vpc/docs/subnets, "IPv6 access type"). The last two texts are ours.
   */
  private dualStackSubnet(props: JsonObject, internal: boolean, what: "address" | "forwarding rule"): StoredSubnetwork {
    const sub = this.requireSubnetwork(props.subnetwork, props.network);
    if (sub === undefined) {
      const message =
        what === "address"
          ? "An IPv6 address must specify a subnetwork."
          : "Subnetwork or Ip Collection must be specified for IPv6 forwarding rules.";
      throw new GceError(400, `Invalid value for field 'resource.subnetwork': ''. ${message}`, "invalid");
    }
    const access = internal ? "INTERNAL" : "EXTERNAL";
    const link = String(props.subnetwork);
    if (sub.ipv6AccessType === undefined) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.subnetwork': '${link}'. Subnetwork '${sub.name}' has no IPv6 range (stackType IPV4_ONLY).`,
        "invalid",
      );
    }
    if (sub.ipv6AccessType !== access) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.subnetwork': '${link}'. An ${access} IPv6 ${what} needs a subnetwork with ipv6AccessType ${access}; '${sub.name}' has ${sub.ipv6AccessType}.`,
        "invalid",
      );
    }
    return sub;
  }

  /** An IPv6 address: a /96 of the subnet's range, or the one named, which must lie in it. */
  private materializeIpv6Address(key: ResourceKey, props: JsonObject, prev: StoredResource | undefined): void {
    const subnet = this.dualStackSubnet(props, props.addressType === "INTERNAL", "address");
    if (props.address === undefined) {
      props.address =
        prev?.properties.address ?? allocateIPv6(subnet, this.ipsInUse(prev === undefined ? undefined : key));
      return;
    }
    if (
      typeof props.address !== "string" ||
      net.isIP(props.address) !== 6 ||
      !inRange6(props.address, subnet.ipv6CidrRange ?? "")
    ) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.address': '${String(props.address)}'. The specified IP address is not within the subnetwork's IPv6 range ${subnet.ipv6CidrRange ?? ""}.`,
        "invalid",
      );
    }
    props.address = canonicalIPv6(props.address);
  }

  /**
   * An IPv6 forwarding rule's IP: its reserved IPv6 address, an IPv6 literal (checked like any IP
   * by requireUsableIp), or an ephemeral /96 of its dual-stack subnet.
   */
  private ipv6RuleAddress(key: ResourceKey, props: JsonObject, prev: StoredResource | undefined): StoredSubnetwork {
    const subnet = this.dualStackSubnet(
      props,
      String(props.loadBalancingScheme ?? "EXTERNAL").startsWith("INTERNAL"),
      "forwarding rule",
    );
    this.settleRuleIp(props, prev, () => allocateIPv6(subnet, this.ipsInUse(prev === undefined ? undefined : key)));
    if (typeof props.ipAddress === "string" && net.isIP(props.ipAddress) !== 6) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.IPAddress': '${props.ipAddress}'. An IPv6 forwarding rule needs an IPv6 address.`,
        "invalid",
      );
    }
    return subnet;
  }

  /**
   * A forwarding rule's IPAddress, either family: an address named by its link or name is its IP;
   * none given keeps the rule's previous IP, or takes an ephemeral one from `allocate`.
   */
  private settleRuleIp(props: JsonObject, prev: StoredResource | undefined, allocate: () => string): void {
    const ip = props.ipAddress;
    if (typeof ip === "string" && net.isIP(ip) === 0) {
      const resolved = this.resolveAddress(ip);
      if (resolved === undefined) {
        const addrKey = this.keyOfPath(ip);
        throw notFound(addrKey === undefined ? ip : this.path(addrKey));
      }
      props.ipAddress = resolved;
    } else if (ip === undefined) {
      props.ipAddress = prev?.properties.ipAddress ?? allocate();
    }
  }

  // ---- addressing --------------------------------------------------------------------------

  /** `projects/P/regions/R/forwardingRules/N` */
  path(key: ResourceKey): string {
    return resourcePath(key.kind, key.project, key.scope, key.name);
  }

  selfLink(key: ResourceKey): string {
    return `${this.endpoint}/compute/v1/${this.path(key)}`;
  }

  /** Self link of a zone or region (`scopeType` "zone"/"region") of a project. */
  scopeLink(project: string, scopeType: "region" | "zone", scope: string): string {
    return `${this.endpoint}/compute/v1/projects/${project}/${scopePath(scopeType, scope)}`;
  }

  /** The key a Pulumi resource ID or self link designates, if it is of a modelled kind. */
  keyOfPath(pathOrLink: string): ResourceKey | undefined {
    const p = parseResourcePath(pathOrLink);
    if (p === undefined) {
      return undefined;
    }
    const kind = kindOfPath(p);
    return kind === undefined ? undefined : { kind, project: p.project, scope: p.scope, name: p.name };
  }

  /**
   * The key of a resource from its Pulumi-named properties (project, region/zone, name), filling in
   * the emulator's default project/region/zone for absent ones.
   */
  keyOf(kindOrToken: string, props: JsonObject): ResourceKey {
    const kind = kindOf(kindOrToken);
    const spec = specOf(kind);
    const name = props.name;
    if (typeof name !== "string") {
      throw new GceError(400, "Invalid value for field 'resource.name': ''. Must be specified.", "invalid");
    }
    const project = asString(props.project) ?? this.project;
    let scope = "global";
    if (spec.scope === "region") {
      scope = asString(props.region) ?? this.region;
    } else if (spec.scope === "zone") {
      scope = asString(props.zone) ?? this.zones[0] ?? `${this.region}-a`;
    }
    return { kind, project, scope, name };
  }

  refContext(key: ResourceKey): RefContext {
    const spec = specOf(key.kind);
    return {
      endpoint: this.endpoint,
      project: key.project,
      region: spec.scope === "region" ? key.scope : spec.scope === "zone" ? regionOfZone(key.scope) : this.region,
      zone: spec.scope === "zone" ? key.scope : undefined,
    };
  }

  // ---- reads -------------------------------------------------------------------------------

  find(key: ResourceKey): StoredResource | undefined {
    const r = this.resources.get(keyString(key));
    return r === undefined ? undefined : { ...r, properties: clone(r.properties) };
  }

  get(key: ResourceKey): StoredResource {
    const r = this.find(key);
    if (r === undefined) {
      throw notFound(this.path(key));
    }
    return r;
  }

  /** Sorted by kind, project, scope, name. */
  list(filter: { kind?: GceKind; project?: string; scope?: string } = {}): StoredResource[] {
    return [...this.resources.values()]
      .filter(
        (r) =>
          (filter.kind === undefined || r.kind === filter.kind) &&
          (filter.project === undefined || r.project === filter.project) &&
          (filter.scope === undefined || r.scope === filter.scope),
      )
      .sort(compareKeys)
      .map((r) => ({ ...r, properties: clone(r.properties) }));
  }

  // ---- faults ------------------------------------------------------------------------------

  injectFault(fault: FaultSpec): void {
    const count = fault.count ?? 1;
    if (!Number.isInteger(count) || count < 1) {
      throw new Error(`injectFault: count must be a positive integer, got ${count}`);
    }
    if (!Number.isInteger(fault.status) || fault.status < 400 || fault.status > 599) {
      throw new Error(`injectFault: status must be an HTTP error status, got ${fault.status}`);
    }
    this.faults.push({
      kind: kindOf(fault.kind),
      name: fault.name,
      operation: fault.operation,
      status: fault.status,
      message: fault.message,
      reason: fault.reason,
      remaining: count,
    });
  }

  /** Throws the injected error if a fault matches this operation (and uses it up). */
  checkFault(kind: GceKind, name: string | undefined, operation: FaultOperation): void {
    const fault = this.faults.find(
      (f) => f.kind === kind && f.operation === operation && (f.name === undefined || f.name === name),
    );
    if (fault === undefined) {
      return;
    }
    fault.remaining -= 1;
    if (fault.remaining <= 0) {
      this.faults = this.faults.filter((f) => f !== fault);
    }
    throw new GceError(fault.status, fault.message, fault.reason);
  }

  clearFaults(): void {
    this.faults = [];
  }

  // ---- writes ------------------------------------------------------------------------------

  /**
   * GCE insert. `props` are Pulumi-named inputs including name/project/region/zone. `faults: false`
   * for a create that is not a Compute call of the code under test (out-of-band seeding).
   */
  create(kindOrToken: string, props: JsonObject, opts: { readonly faults?: boolean } = {}): StoredResource {
    const key = this.keyOf(kindOrToken, props);
    if (!NAME_RE.test(key.name)) {
      throw new GceError(400, invalidNameMessage(key.name), "invalid");
    }
    this.validate(key.kind, props);
    this.requireUrls(key.kind, props);
    if (opts.faults !== false) {
      this.checkFault(key.kind, key.name, "create");
    }
    if (this.resources.has(keyString(key))) {
      throw new GceError(409, `The resource '${this.path(key)}' already exists`, "alreadyExists");
    }
    this.createGuard?.(key, props, [...this.resources.values()]);
    const properties = this.materialize(key, props, undefined);
    const stored: StoredResource = { ...key, properties };
    this.resources.set(keyString(key), stored);
    this.record(key, "create");
    return this.get(key);
  }

  /**
   * A create by another tool calling the Compute API (the stock CCM, gcloud), not through Pulumi:
   * GCE's rules as \`create\` (names, 409, references, IP allocation and ownership), no faults.
   * `props` use the kind's @pulumi/gcp input names, as the emulator stores them.
   */
  insertOutOfBand(kindOrToken: string, props: JsonObject, where: OutOfBandWhere = {}): StoredResource {
    const kind = kindOf(kindOrToken);
    const spec = specOf(kind);
    if (kind === "instances") {
      throw new GceError(400, "instances are seeded with putInstance, not inserted out of band", "invalid");
    }
    const known = new Set(["name", "project", "region", "zone", ...spec.inputs]);
    const unknown = Object.keys(props).find((k) => !known.has(k));
    if (unknown !== undefined) {
      throw new GceError(400, `${unknown} is not a property of ${spec.typeName}`, "invalid");
    }
    const full: JsonObject = { ...props };
    if (where.project !== undefined) {
      full.project = where.project;
    }
    if (where.scope !== undefined) {
      if (spec.scope === "global") {
        if (where.scope !== "global") {
          throw new GceError(
            400,
            `${spec.typeName} is global: its scope is "global", not ${JSON.stringify(where.scope)}`,
            "invalid",
          );
        }
      } else {
        full[spec.scope] = where.scope;
      }
    }
    return this.create(kind, full, { faults: false });
  }

  /**
   * GCE update/patch/set* of a managed resource to the given complete inputs. Immutable fields
   * must be unchanged (400 otherwise).
   */
  update(key: ResourceKey, props: JsonObject): StoredResource {
    const prev = this.get(key);
    this.validate(key.kind, props);
    this.requireUrls(key.kind, props);
    this.checkFault(key.kind, key.name, "update");
    const newKey = this.keyOf(key.kind, { ...props, name: props.name ?? key.name });
    if (keyString(newKey) !== keyString(key)) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.name': '${newKey.name}'. The name, project, region and zone of '${this.path(key)}' cannot be changed.`,
        "invalid",
      );
    }
    const field = this.immutableFields(key.kind, prev.properties, props)[0];
    if (field !== undefined) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.${field}': ${JSON.stringify(props[field] ?? null)}. Field '${field}' of '${this.path(key)}' cannot be changed.`,
        "invalid",
      );
    }
    const properties = this.materialize(key, props, prev);
    this.resources.set(keyString(key), { ...key, properties });
    this.record(key, "update");
    return this.get(key);
  }

  /**
   * Adds or removes members of a target pool or an unmanaged instance group (targetPools.addInstance
   * / removeInstance, instanceGroups.addInstances / removeInstances: "Adds/Removes ... instances"
   * from the `instances` of the request body, each an instance URL). The group's rules hold as on
   * update (same zone and network, the group size limit); a link already in (add) or not in
   * (remove) the list changes nothing. Recorded as an update, like any change of the resource.
   */
  changeMembers(key: ResourceKey, links: readonly string[], add: boolean): StoredResource {
    const prev = this.get(key);
    const ctx = this.refContext(key);
    const named = links.map((link) => normalizeRef(link, { collection: "instances", scope: "zone" }, ctx));
    const current = Array.isArray(prev.properties.instances)
      ? prev.properties.instances.filter((l): l is string => typeof l === "string")
      : [];
    const next = add
      ? [...current, ...named.filter((l, i) => !current.includes(l) && named.indexOf(l) === i)]
      : current.filter((l) => !named.includes(l));
    const inputs: JsonObject = {};
    for (const [k, v] of Object.entries(prev.properties)) {
      if (!COMPUTED.has(k)) {
        inputs[k] = v;
      }
    }
    return this.update(key, { ...inputs, instances: next });
  }

  /**
   * GCE delete: refuses (400 resourceInUseByAnotherResource) while another resource uses it, except
   * an address: deleting an address a forwarding rule uses releases the reservation and the rule
   * keeps the IP, now ephemeral (cloud.google.com/vpc/docs/reserve-static-external-ip-address,
   * "Release a static external IP address", and …/reserve-static-internal-ip-address). The stock
   * CCM relies on it for every load balancer it makes: kubernetes/cloud-provider-gcp
   * gce_loadbalancer_external.go, "It is safe to release the static IP (which just demotes it to
   * ephemeral) now that it is attached", and gce_loadbalancer_internal.go, "Now that the controller
   * knows the forwarding rule exists, we can release the address"; so does ingress-gce's L4
   * (pkg/loadbalancers/l4.go, l4netlb.go: "If the forwarding rule was successfully created, the
   * ephemeral IP is not needed anymore"). The rule's IP then goes back to Google's pool only when
   * the rule is deleted (remove, `released`).
   */
  delete(key: ResourceKey): void {
    this.get(key);
    this.checkFault(key.kind, key.name, "delete");
    const user = key.kind === "addresses" ? undefined : this.usersOf(key)[0];
    if (user !== undefined) {
      throw new GceError(
        400,
        `The ${specOf(key.kind).resourceWord} resource '${this.path(key)}' is already being used by '${this.path(user)}'`,
        "resourceInUseByAnotherResource",
      );
    }
    this.remove(key);
  }

  /**
   * Removes a resource. A forwarding rule's IP that no address of its project and region holds is
   * ephemeral: it goes back to Google's pool (see \`released\`). A reserved address keeps its IP
   * when its rules are deleted ("A static external IP address is reserved for your project until
   * you decide to release it": cloud.google.com/vpc/docs/reserve-static-external-ip-address).
   */
  private remove(key: ResourceKey): void {
    const gone = this.resources.get(keyString(key));
    this.resources.delete(keyString(key));
    if (gone?.kind === "instances") {
      this.dropFromGroups(key);
    }
    const ip = gone?.kind === "forwardingRules" ? gone.properties.ipAddress : undefined;
    if (gone !== undefined && typeof ip === "string") {
      const held = [...this.resources.values()].some(
        (r) =>
          r.project === gone.project &&
          r.scope === gone.scope &&
          ((r.kind === "addresses" && r.properties.address === ip) ||
            (r.kind === "forwardingRules" && r.properties.ipAddress === ip)),
      );
      if (!held) {
        this.released.add(ip);
      }
    }
    this.record(key, "delete");
  }

  /**
   * A deleted VM leaves its unmanaged instance groups: the group lists only VMs that exist
   * (instanceGroups.listInstances lists "the instances in the specified instance group"; a group
   * is a collection of VMs, cloud.google.com/compute/docs/instance-groups/creating-groups-of-unmanaged-instances),
   * as issue 30 records GCE doing (no documentation sentence states it verbatim). The group's size
   * follows; the change is GCE's own, not an update anyone made, so it is not in the history.
   */
  private dropFromGroups(instance: ResourceKey): void {
    const gone = keyString(instance);
    for (const [k, group] of this.resources) {
      const members = group.kind === "instanceGroups" ? group.properties.instances : undefined;
      if (!Array.isArray(members)) {
        continue;
      }
      const kept = members.filter((m) => {
        const mk = typeof m === "string" ? this.keyOfPath(m) : undefined;
        return mk === undefined || keyString(mk) !== gone;
      });
      if (kept.length !== members.length) {
        const properties: JsonObject = { ...group.properties, instances: kept, size: kept.length };
        properties.fingerprint = resourceFingerprint(properties);
        this.resources.set(k, { ...group, properties });
      }
    }
  }

  private record(key: ResourceKey, op: HistoryEntry["op"]): void {
    this.events.push({ at: this.now().getTime(), kind: key.kind, scope: key.scope, name: key.name, op });
  }

  /** Every create, update and delete so far (any face), oldest first. */
  history(): HistoryEntry[] {
    return this.events.map((e) => ({ ...e }));
  }

  clearHistory(): void {
    this.events = [];
  }

  /** Out-of-band change (someone editing in the console): merges top-level properties, null removes. */
  patchOutOfBand(key: ResourceKey, patch: JsonObject): StoredResource {
    const prev = this.get(key);
    const props: JsonObject = { ...prev.properties };
    for (const [k, v] of Object.entries(patch)) {
      if (["name", "project", "region", "zone", "selfLink", "id"].includes(k)) {
        throw new GceError(400, `Invalid value for field 'resource.${k}': it cannot be patched`, "invalid");
      }
      if (v === null) {
        delete props[k];
      } else {
        props[k] = clone(v);
      }
    }
    if (key.kind !== "instances") {
      props.fingerprint = resourceFingerprint(props);
    }
    this.resources.set(keyString(key), { ...key, properties: props });
    this.record(key, "update");
    return this.get(key);
  }

  /** Out-of-band delete: bypasses in-use rules and faults. Throws 404 when absent. */
  deleteOutOfBand(key: ResourceKey): void {
    this.get(key);
    this.remove(key);
  }

  /** Removes every resource, fault and allocation. */
  reset(): void {
    this.resources.clear();
    this.faults = [];
    this.externalPool.reset();
    this.internalPool.reset();
    this.networks.clear();
    this.subnetworks.clear();
    this.released.clear();
    this.events = [];
    this.initialNetworks.forEach((n) => this.putNetwork(n));
  }

  /** Creates or replaces an instance (test seeding). */
  putInstance(project: string, zone: string, name: string, spec: InstanceSpec = {}): StoredResource {
    if (!NAME_RE.test(name)) {
      throw new GceError(400, invalidNameMessage(name), "invalid");
    }
    if (spec.status !== undefined && !INSTANCE_STATUSES.includes(spec.status)) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.status': '${spec.status}'. Expected one of ${INSTANCE_STATUSES.join(", ")}.`,
        "invalid",
      );
    }
    const key: ResourceKey = { kind: "instances", project, scope: zone, name };
    const prev = this.find(key);
    const ctx = this.refContext(key);
    const machineType = spec.machineType ?? "e2-standard-2";
    const aliasesInUse = this.aliasRangesInUse(keyString(key));
    const inUse = this.ipsInUse(prev === undefined ? undefined : key);
    const nics: Json[] = (spec.networkInterfaces ?? [{}]).map((nic, i) => {
      const network = normalizeRef(
        nic.network ?? this.instanceNetwork,
        { collection: "networks", scope: "global" },
        ctx,
      );
      const subnet = [...this.subnetworks.values()].find(
        (s) => s.network === network && s.region === regionOfZone(zone),
      );
      const networkIP = nic.networkIP ?? (subnet?.pool ?? this.internalPool).allocate(inUse);
      inUse.add(networkIP);
      const out: JsonObject = {
        name: `nic${i}`,
        network,
        networkIP,
      };

      if (nic.ipv6Address !== undefined) {
        out.ipv6Address = nic.ipv6Address;
      }
      if (nic.aliasIpRanges !== undefined && nic.aliasIpRanges.length > 0) {
        out.aliasIpRanges = nic.aliasIpRanges.map((alias, j) =>
          aliasRange(alias, subnet, `networkInterfaces[${i}].aliasIpRanges[${j}]`, aliasesInUse, networkIP, name),
        );
      }
      out.accessConfigs = (nic.accessConfigs ?? []).map((ac) => {
        const natIP = ac.natIP ?? this.externalPool.allocate(inUse);
        inUse.add(natIP);
        return { kind: "compute#accessConfig", type: "ONE_TO_ONE_NAT", name: "External NAT", natIP };
      });
      return out;
    });
    const tags: JsonObject = { fingerprint: fingerprintOf([...(spec.tags ?? [])]) };
    if (spec.tags !== undefined && spec.tags.length > 0) {
      tags.items = [...spec.tags];
    }
    const properties: JsonObject = {
      kind: "compute#instance",
      id: prev !== undefined ? (prev.properties.id ?? this.newId()) : this.newId(),
      creationTimestamp: prev?.properties.creationTimestamp ?? this.now().toISOString(),
      name,
      zone: this.scopeLink(project, "zone", zone),
      machineType: /^https?:\/\//.test(machineType)
        ? machineType
        : `${this.scopeLink(project, "zone", zone)}/machineTypes/${machineType}`,
      status: spec.status ?? "RUNNING",
      networkInterfaces: nics,
      tags,
      selfLink: this.selfLink(key),
    };
    if (spec.labels !== undefined) {
      properties.labels = { ...spec.labels };
    }
    this.resources.set(keyString(key), { ...key, properties });
    this.record(key, prev === undefined ? "create" : "update");
    return this.get(key);
  }

  /** Alias ranges of every instance but `except` (a replaced instance gives its own back), by subnet network. */
  private aliasRangesInUse(except: string): { cidr: string; owner: string }[] {
    const out: { cidr: string; owner: string }[] = [];
    for (const [k, r] of this.resources) {
      if (r.kind !== "instances" || k === except) continue;
      const nics = Array.isArray(r.properties.networkInterfaces) ? r.properties.networkInterfaces : [];
      for (const n of nics) {
        const aliases = isJsonObject(n) && Array.isArray(n.aliasIpRanges) ? n.aliasIpRanges : [];
        for (const a of aliases) {
          if (isJsonObject(a) && typeof a.ipCidrRange === "string") out.push({ cidr: a.ipCidrRange, owner: r.name });
        }
      }
    }
    return out;
  }

  /**
   * A stop, start, suspend or resume (instances.stop/start/suspend/resume): the status changes,
   * nothing else (addresses and alias ranges stay, as they do for a VM that keeps its interfaces).
   */
  setInstanceStatus(project: string, zone: string, name: string, status: string): StoredResource {
    if (!INSTANCE_STATUSES.includes(status)) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.status': '${status}'. Expected one of ${INSTANCE_STATUSES.join(", ")}.`,
        "invalid",
      );
    }
    const key: ResourceKey = { kind: "instances", project, scope: zone, name };
    const prev = this.find(key);
    if (prev === undefined) {
      throw new GceError(
        404,
        `The resource 'projects/${project}/zones/${zone}/instances/${name}' was not found`,
        "notFound",
      );
    }
    this.resources.set(keyString(key), { ...key, properties: { ...prev.properties, status } });
    this.record(key, "update");
    return this.get(key);
  }

  // ---- rules -------------------------------------------------------------------------------

  /**
   * References the provider sends to GCE verbatim must be URLs (full or partial); GCE refuses a
   * bare name there. InstanceGroup.network: resource_compute_instance_group.go,
   * resourceComputeInstanceGroupCreate (`instanceGroup.Network = v.(string)`); RegionBackendService
   * health_checks and backend.group: resource_compute_region_backend_service.go,
   * expandComputeRegionBackendServiceHealthChecks / ...BackendGroup (no ParseXFieldValue). Every
   * other reference dccm sends goes through an expander that turns a name into a URL
   * (ParseNetworkFieldValue, ParseSubnetworkFieldValue, ParseRegionalFieldValue, the target
   * pool's and instance group's instance and health check converters), so the emulator accepts
   * names there.
   */
  private requireUrls(kind: GceKind, props: JsonObject): void {
    const url = (field: string, v: Json | undefined): void => {
      if (typeof v === "string" && v !== "" && !containsUnknown(v) && !v.includes("/")) {
        throw new GceError(
          400,
          `Invalid value for field 'resource.${field}': '${v}'. The URL is malformed.`,
          "invalid",
        );
      }
    };
    if (kind === "instanceGroups") {
      url("network", props.network);
    }
    if (kind === "backendServices") {
      url("healthChecks[0]", props.healthChecks);
      if (Array.isArray(props.backends)) {
        props.backends.forEach((b, i) => url(`backends[${i}].group`, isJsonObject(b) ? b.group : undefined));
      }
    }
  }

  private validate(kind: GceKind, props: JsonObject): void {
    const failure = validateInputs(kind, props)[0];
    if (failure !== undefined) {
      throw new GceError(400, failure.reason, "invalid");
    }
  }

  /** Immutable inputs whose new value differs from the stored one. */
  immutableFields(kind: GceKind, stored: JsonObject, news: JsonObject): string[] {
    const spec = specOf(kind);
    news = expandShorthands(kind, news);
    const key = this.keyOf(kind, { ...news, name: news.name ?? stored.name ?? null });
    const ctx = this.refContext(key);
    const changed = spec.immutable.filter((field) => {
      const nv = news[field] ?? defaultFor(kind, field, news);
      if (nv === undefined) {
        return false;
      }
      return !this.sameValue(kind, field, nv, stored[field], ctx);
    });
    return changed;
  }

  /** Resources that use `key` (and so block its deletion; an address's rules do not, see delete). */
  usersOf(key: ResourceKey): ResourceKey[] {
    const link = this.selfLink(key);
    const users: ResourceKey[] = [];
    for (const r of this.resources.values()) {
      const p = r.properties;
      let uses = false;
      switch (key.kind) {
        case "backendServices":
          uses = r.kind === "forwardingRules" && p.backendService === link;
          break;
        case "targetPools":
          uses =
            (r.kind === "forwardingRules" && p.target === link) || (r.kind === "targetPools" && p.backupPool === link);
          break;
        case "healthChecks":
        case "globalHealthChecks":
        case "httpHealthChecks":
          uses = (r.kind === "backendServices" || r.kind === "targetPools") && p.healthChecks === link;
          break;
        case "instanceGroups":
          uses =
            r.kind === "backendServices" &&
            Array.isArray(p.backends) &&
            p.backends.some((b) => isJsonObject(b) && b.group === link);
          break;
        case "forwardingRules":
          uses = r.kind === "routes" && p.nextHopIlb === link;
          break;
        default:
          uses = false;
      }
      if (uses) {
        users.push({ kind: r.kind, project: r.project, scope: r.scope, name: r.name });
      }
    }
    return users.sort(compareKeys);
  }

  /**
   * Whether a new input value means the same as a stored (normalized) one: references compared
   * as self links, sets unordered, a forwarding rule's address reference by its IP.
   */
  sameValue(kind: GceKind, field: string, newValue: Json, storedValue: Json | undefined, ctx: RefContext): boolean {
    if (containsUnknown(newValue)) {
      return false;
    }
    return deepEqual(
      this.comparable(kind, field, newValue, ctx, true),
      this.comparable(kind, field, storedValue ?? null, ctx, false),
    );
  }

  private comparable(kind: GceKind, field: string, v: Json, ctx: RefContext, resolve: boolean): Json {
    const spec = specOf(kind);
    let out = this.normalizeField(kind, field, v, ctx);
    if (kind === "forwardingRules" && field === "ipAddress" && typeof out === "string" && resolve) {
      out = this.resolveAddress(out) ?? out;
    }
    if (spec.setFields.includes(field) && Array.isArray(out)) {
      out = [...out].sort((a, b) => canonical(a).localeCompare(canonical(b)));
    }
    if ((field === "allows" || field === "denies" || field === "backends") && Array.isArray(out)) {
      out = out
        .map((rule) => {
          if (!isJsonObject(rule)) {
            return rule;
          }
          const r: JsonObject = { ...rule };
          if (typeof r.protocol === "string") {
            r.protocol = r.protocol.toLowerCase();
          }
          if (Array.isArray(r.ports)) {
            r.ports = [...r.ports].sort((a, b) => canonical(a).localeCompare(canonical(b)));
          }
          return r;
        })
        .sort((a, b) => canonical(a).localeCompare(canonical(b)));
    }
    return out;
  }

  /** Normalizes references inside one input to self links. */
  normalizeField(kind: GceKind, field: string, v: Json, ctx: RefContext): Json {
    const spec = specOf(kind);
    if (kind === "forwardingRules" && field === "ipAddress") {
      if (typeof v !== "string" || net.isIP(v) !== 0 || containsUnknown(v)) {
        return v;
      }
      return normalizeRef(v, { collection: "addresses", scope: "region" }, ctx);
    }
    if (kind === "routes" && field === "nextHopIlb") {
      if (typeof v !== "string" || net.isIP(v) !== 0) {
        return v;
      }
      return normalizeRef(v, { collection: "forwardingRules", scope: "region" }, ctx);
    }
    if (kind === "routes" && field === "nextHopInstance") {
      return typeof v === "string" ? normalizeRef(v, { collection: "instances", scope: "zone" }, ctx) : v;
    }
    if (kind === "backendServices" && field === "backends" && Array.isArray(v)) {
      const group: RefTarget = { collection: "instanceGroups", scope: "zone" };
      return v.map((b) =>
        isJsonObject(b) && typeof b.group === "string" ? { ...b, group: normalizeRef(b.group, group, ctx) } : b,
      );
    }
    const ref = spec.refs[field];
    if (ref !== undefined) {
      if (typeof v === "string") {
        return normalizeRef(v, ref, ctx);
      }
      if (Array.isArray(v)) {
        return v.map((e) => (typeof e === "string" ? normalizeRef(e, ref, ctx) : e));
      }
    }
    return v;
  }

  /** The IP of the address a self link designates, or undefined. */
  private resolveAddress(link: string): string | undefined {
    if (net.isIP(link) !== 0) {
      return link;
    }
    const key = this.keyOfPath(link);
    if (key === undefined || key.kind !== "addresses") {
      return undefined;
    }
    return asString(this.resources.get(keyString(key))?.properties.address);
  }

  private requireExists(link: Json | undefined): void {
    if (typeof link !== "string") {
      return;
    }
    const key = this.keyOfPath(link);
    if (key !== undefined && !this.resources.has(keyString(key))) {
      throw notFound(this.path(key));
    }
  }

  /**
   * Two forwarding rules of one project and region cannot share [IPAddress, IPProtocol] with
   * overlapping ports. Checked after the rule's own IP is known (see materialize).
   */
  private requireNoPortConflict(key: ResourceKey, props: JsonObject): void {
    const ip =
      typeof props.ipAddress === "string" && net.isIP(props.ipAddress) === 0
        ? this.resolveAddress(props.ipAddress)
        : props.ipAddress;
    if (typeof ip !== "string") {
      return;
    }
    const protocol = props.ipProtocol ?? "TCP";
    const mine = forwardingRulePorts(props);
    for (const other of this.resources.values()) {
      if (
        other.kind !== "forwardingRules" ||
        other.project !== key.project ||
        other.scope !== key.scope ||
        other.name === key.name
      ) {
        continue;
      }
      const o = other.properties;
      if (o.ipAddress !== ip || (o.ipProtocol ?? "TCP") !== protocol) {
        continue;
      }
      const overlap = forwardingRulePorts(o).some(([a, b]) => mine.some(([c, d]) => a <= d && c <= b));
      if (overlap) {
        throw new GceError(
          400,
          `Invalid value for field 'resource.IPAddress': '${ip}'. Specified IP address is in-use and would result in a conflict: forwarding rule '${this.path(other)}' already uses ${String(protocol)} on overlapping ports.`,
          "invalid",
        );
      }
    }
  }

  /**
   * A forwarding rule's scheme must be its backend service's (forwarding-rule-concepts: an
   * internal passthrough rule points at an INTERNAL backend service, an external one at EXTERNAL).
   */
  private requireSameScheme(props: JsonObject): void {
    if (typeof props.backendService !== "string") {
      return;
    }
    const key = this.keyOfPath(props.backendService);
    const bs = key === undefined ? undefined : this.resources.get(keyString(key));
    const ruleScheme = props.loadBalancingScheme ?? "EXTERNAL";
    const bsScheme = bs?.properties.loadBalancingScheme ?? "INTERNAL";
    if (bs !== undefined && bsScheme !== ruleScheme) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.loadBalancingScheme': '${String(ruleScheme)}'. The forwarding rule's load balancing scheme must match the scheme of backend service '${this.path(bs)}' (${String(bsScheme)}).`,
        "invalid",
      );
    }
  }

  /**
   * Where a forwarding rule's IP may come from (cloud.google.com/load-balancing/docs/forwarding-rule-concepts,
   * "IP address specifications"): ephemeral (unset), or a static address reserved in the project
   * and region with the rule's type; an internal rule may also name an unreserved IP of its
   * subnetwork. Several INTERNAL rules share one IP only through an address with purpose
   * SHARED_LOADBALANCER_VIP, at most 10 (load-balancing/docs/internal/multiple-forwarding-rules-same-ip).
   * The tier of an external rule must be its address's. An external IP the project does not hold is
   * refused with GCE's text "Invalid IP address specified." (as reported in hashicorp/terraform#19231).
   */
  private requireUsableIp(
    key: ResourceKey,
    props: JsonObject,
    scheme: string,
    subnet: StoredSubnetwork | undefined,
    ephemeral: boolean,
  ): void {
    const ip = props.ipAddress;
    if (typeof ip !== "string") {
      return;
    }
    const internal = scheme.startsWith("INTERNAL");
    const reserved = [...this.resources.values()].find(
      (r) =>
        r.kind === "addresses" && r.project === key.project && r.scope === key.scope && r.properties.address === ip,
    );
    if (!ephemeral) {
      if (reserved === undefined) {
        if (!internal) {
          throw new GceError(
            400,
            `Invalid value for field 'resource.IPAddress': '${ip}'. Invalid IP address specified.`,
            "invalid",
          );
        }
        const range = net.isIP(ip) === 6 ? (subnet?.ipv6CidrRange ?? "") : subnet?.ipCidrRange;
        if (
          subnet !== undefined &&
          range !== undefined &&
          !(net.isIP(ip) === 6 ? inRange6(ip, range) : inRange(ip, range))
        ) {
          throw new GceError(
            400,
            `Invalid value for field 'resource.IPAddress': '${ip}'. The specified IP address is not within the subnetwork's range ${range}.`,
            "invalid",
          );
        }
      } else {
        const addressType = reserved.properties.addressType ?? "EXTERNAL";
        if ((addressType === "INTERNAL") !== internal) {
          throw new GceError(
            400,
            `Invalid value for field 'resource.IPAddress': '${ip}'. Address '${this.path(reserved)}' is ${String(addressType)} and cannot be used by a forwarding rule with loadBalancingScheme ${scheme}.`,
            "invalid",
          );
        }
        const ruleTier = props.networkTier ?? "PREMIUM";
        const addressTier = reserved.properties.networkTier ?? "PREMIUM";
        if (!internal && ruleTier !== addressTier) {
          throw new GceError(
            400,
            `Invalid value for field 'resource.networkTier': '${String(ruleTier)}'. The network tier of the forwarding rule must be the same as the network tier of its IP address '${this.path(reserved)}' (${String(addressTier)}).`,
            "invalid",
          );
        }
      }
    }
    if (!internal) {
      return;
    }
    const sharing = [...this.resources.values()].filter(
      (r) =>
        r.kind === "forwardingRules" &&
        r.project === key.project &&
        r.scope === key.scope &&
        r.name !== key.name &&
        r.properties.ipAddress === ip &&
        String(r.properties.loadBalancingScheme ?? "").startsWith("INTERNAL"),
    );
    const first = sharing[0];
    if (first === undefined) {
      return;
    }
    if (reserved?.properties.purpose !== "SHARED_LOADBALANCER_VIP") {
      throw new GceError(
        400,
        `Invalid value for field 'resource.IPAddress': '${ip}'. IP address is already in use by forwarding rule '${this.path(first)}'; internal forwarding rules can share an IP address only if it is reserved with purpose SHARED_LOADBALANCER_VIP.`,
        "invalid",
      );
    }
    if (sharing.length >= 10) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.IPAddress': '${ip}'. An address with purpose SHARED_LOADBALANCER_VIP can be used by at most 10 forwarding rules.`,
        "invalid",
      );
    }
  }

  /**
   * Which IP literal an address insert may reserve.
   * - An IP another address holds cannot be reserved again. Internal: 409, operation error
   *   IP_IN_USE_BY_ANOTHER_RESOURCE, message verbatim from kubernetes/ingress-gce#2735 ("IP
   *   '10.164.0.18' is already being used by another resource."); external: 400 (the status split is
   *   the stock CCM's, gce_address_manager.go ensureAddressReservation: "by an internal address: a
   *   StatusConflict is returned, by an external address: a BadRequest"; the external text is ours).
   * - The ephemeral IP of a forwarding rule of the project and region is promoted: the address
   *   holds that very IP and the rule keeps it (external: same network tier;
   *   cloud.google.com/vpc/docs/reserve-static-external-ip-address#promote_ephemeral_ip; internal:
   *   inside the subnetwork, checked by the caller; reserve-static-internal-ip-address, "Promote an
   *   ephemeral internal IP address").
   * - Internal: any other unused IP of the subnetwork may be named (reserve-static-internal-ip-address,
   *   "Reserve a specific internal IP address"); one an instance uses is in use like above.
   * - External: an IP the project does not hold (another project's, an instance's, a released
   *   ephemeral one) cannot be reserved by naming it; only the emulator's free pool stands for
   *   "an unused Google IP" (reserve-static-external-ip-address: an external literal only promotes).
   */
  private requireReservableIp(key: ResourceKey, ip: string, internal: boolean, tier: Json | undefined): void {
    const all = [...this.resources.values()];
    const here = (r: StoredResource): boolean => r.project === key.project && r.scope === key.scope;
    const isInternal = (r: StoredResource): boolean =>
      r.kind === "addresses"
        ? r.properties.addressType === "INTERNAL"
        : String(r.properties.loadBalancingScheme ?? "EXTERNAL").startsWith("INTERNAL");
    const holder = all.find(
      (r) =>
        r.kind === "addresses" && r.properties.address === ip && isInternal(r) === internal && (!internal || here(r)),
    );
    if (holder !== undefined && internal) {
      throw new GceError(409, `IP '${ip}' is already being used by another resource.`, "IP_IN_USE_BY_ANOTHER_RESOURCE");
    }
    if (holder !== undefined) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.address': '${ip}'. IP '${ip}' is already being used by another resource.`,
        "invalid",
      );
    }
    const rule = all.find(
      (r) => r.kind === "forwardingRules" && here(r) && r.properties.ipAddress === ip && isInternal(r) === internal,
    );
    if (internal) {
      const nic = all.some(
        (r) => r.kind === "instances" && r.project === key.project && this.nicIps(r, "networkIP").includes(ip),
      );
      if (rule === undefined && nic) {
        throw new GceError(
          409,
          `IP '${ip}' is already being used by another resource.`,
          "IP_IN_USE_BY_ANOTHER_RESOURCE",
        );
      }
      return;
    }
    if (rule !== undefined && (rule.properties.networkTier ?? "PREMIUM") === (tier ?? "PREMIUM")) {
      return;
    }
    if (rule !== undefined || this.ipsInUse(key).has(ip)) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.address': '${ip}'. The IP address is not available to this project: it is neither free nor the ephemeral IP of a forwarding rule of this project and region with network tier ${String(tier ?? "PREMIUM")}.`,
        "invalid",
      );
    }
  }

  /** The internal (`networkIP`) or external (`natIP`) IPs of an instance's interfaces. */
  private nicIps(instance: StoredResource, field: "networkIP" | "natIP"): string[] {
    const nics = Array.isArray(instance.properties.networkInterfaces) ? instance.properties.networkInterfaces : [];
    const out: string[] = [];
    for (const nic of nics) {
      if (!isJsonObject(nic)) {
        continue;
      }
      const configs = field === "natIP" && Array.isArray(nic.accessConfigs) ? nic.accessConfigs : [nic];
      for (const c of configs) {
        const v = isJsonObject(c) ? c[field] : undefined;
        if (typeof v === "string") {
          out.push(v);
        }
      }
    }
    return out;
  }

  /**
   * An EXTERNAL regional backend service takes a regional health check
   * (load-balancing/docs/network/networklb-backend-service: "regional health check").
   */
  // An INTERNAL one takes a global or a regional health check (the backend service of an internal
  // passthrough Network Load Balancer accepts either: cloud.google.com/load-balancing/docs/internal,
  // "Health checks", and load-balancing/docs/health-check-concepts, the health-check scope per load
  // balancer), so only the EXTERNAL scheme is checked here.
  private requireRegionalCheck(props: JsonObject): void {
    const link = props.healthChecks;
    if ((props.loadBalancingScheme ?? "INTERNAL") !== "EXTERNAL" || typeof link !== "string") {
      return;
    }
    if (parseResourcePath(link)?.scopeType !== "region") {
      throw new GceError(
        400,
        `Invalid value for field 'resource.healthChecks[0]': '${link}'. A regional backend service with loadBalancingScheme EXTERNAL requires a regional health check.`,
        "invalid",
      );
    }
  }

  /** Target pools take legacy HTTP health checks only (targetPools resource reference, healthChecks). */
  private requireLegacyCheck(link: Json | undefined): void {
    if (typeof link === "string" && parseResourcePath(link)?.collection !== "httpHealthChecks") {
      throw new GceError(
        400,
        `Invalid value for field 'resource.healthChecks[0]': '${link}'. A target pool accepts only legacy HTTP health checks (httpHealthChecks).`,
        "invalid",
      );
    }
  }

  /**
   * An instance group holds at most INSTANCE_GROUP_MAX_INSTANCES instances (see there for the
   * documentation). GCE's message for this refusal is not documented: the form here is that of
   * GCE's other fixed-limit errors ("Exceeded limit '<LIMIT>' on resource '<name>'. Limit: <n>").
   */
  private requireGroupSize(key: ResourceKey, instances: Json | undefined): void {
    const count = Array.isArray(instances) ? new Set(instances).size : 0;
    if (count > this.groupMaxInstances) {
      throw new GceError(
        400,
        `Exceeded limit 'MAX_INSTANCES_IN_INSTANCE_GROUP' on resource '${key.name}'. Limit: ${this.groupMaxInstances}.0`,
        "limitExceeded",
      );
    }
  }

  /**
   * An instance of an unmanaged group must exist, be in the group's zone and in the group's
   * network (instanceGroups.addInstances: "instances ... must be in the same zone and network").
   */
  private requireGroupMember(key: ResourceKey, network: Json | undefined, link: Json, index: number): void {
    if (typeof link !== "string") {
      return;
    }
    const member = this.keyOfPath(link);
    if (member !== undefined && member.scope !== key.scope) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.instances[${index}]': '${link}'. Instance must be in zone '${key.scope}' of the instance group.`,
        "invalid",
      );
    }
    this.requireExists(link);
    const instance = member === undefined ? undefined : this.resources.get(keyString(member));
    const nics = instance?.properties.networkInterfaces;
    const nic = Array.isArray(nics) ? nics[0] : undefined;
    const instanceNetwork = isJsonObject(nic) ? nic.network : undefined;
    if (typeof network === "string" && typeof instanceNetwork === "string" && instanceNetwork !== network) {
      throw new GceError(
        400,
        `Invalid value for field 'resource.instances[${index}]': '${link}'. Instance is in network '${instanceNetwork}', not in the network of the instance group '${network}'.`,
        "invalid",
      );
    }
  }

  /** IPs allocation must skip: those held by any resource, and released ephemeral ones. */
  private ipsInUse(except?: ResourceKey): Set<string> {
    const used = new Set<string>(this.released);
    for (const r of this.resources.values()) {
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

  private newId(): string {
    const id = 1_000_000_000_000_000_000n + this.nextId;
    this.nextId += 1n;
    return id.toString();
  }

  /** Stored properties from inputs: normalized references, GCE defaults, computed fields. */
  private materialize(key: ResourceKey, inputs: JsonObject, prev: StoredResource | undefined): JsonObject {
    const spec = specOf(key.kind);
    const ctx = this.refContext(key);
    const props: JsonObject = {};
    for (const [k, v] of Object.entries(expandShorthands(key.kind, inputs))) {
      if (v === null || COMPUTED.has(k) || k === "name" || k === "project" || k === "region" || k === "zone") {
        continue;
      }
      if (containsUnknown(v)) {
        throw new GceError(400, `Invalid value for field 'resource.${k}': the value is not known`, "invalid");
      }
      props[k] = this.normalizeField(key.kind, k, clone(v), ctx);
    }
    for (const field of spec.inputs) {
      if (props[field] === undefined) {
        const d = defaultFor(key.kind, field, props);
        if (d !== undefined) {
          props[field] = d;
        }
      }
    }

    switch (key.kind) {
      case "addresses": {
        this.requireNetwork(props.network);
        if (props.ipVersion === "IPV6") {
          this.materializeIpv6Address(key, props, prev);
          break;
        }
        const internal = props.addressType === "INTERNAL";
        const subnet = internal
          ? this.internalSubnet(key, props, "address")
          : this.requireSubnetwork(props.subnetwork, props.network);
        if (props.address === undefined) {
          props.address =
            prev?.properties.address ??
            (internal ? (subnet?.pool ?? this.internalPool) : this.externalPool).allocate(
              this.ipsInUse(prev === undefined ? undefined : key),
            );
        } else if (
          internal &&
          subnet !== undefined &&
          typeof props.address === "string" &&
          !inRange(props.address, subnet.ipCidrRange)
        ) {
          throw new GceError(
            400,
            `Invalid value for field 'resource.address': '${props.address}'. The specified IP address is not within the subnetwork's range ${subnet.ipCidrRange}.`,
            "invalid",
          );
        } else if (prev === undefined && typeof props.address === "string") {
          this.requireReservableIp(key, props.address, internal, props.networkTier);
        }
        break;
      }
      case "forwardingRules": {
        this.requireExists(props.backendService);
        this.requireExists(props.target);
        this.requireNetwork(props.network);
        const scheme = typeof props.loadBalancingScheme === "string" ? props.loadBalancingScheme : "EXTERNAL";
        const internal = scheme.startsWith("INTERNAL");
        const ip = props.ipAddress;
        if (props.ipVersion === "IPV6") {
          const subnet = this.ipv6RuleAddress(key, props, prev);
          this.requireSameScheme(props);
          this.requireNoPortConflict(key, props);
          if (prev === undefined || prev.properties.ipAddress !== props.ipAddress) {
            this.requireUsableIp(key, props, scheme, subnet, ip === undefined);
          }
          break;
        }
        const subnet = internal
          ? this.internalSubnet(key, props, "IPAddress")
          : this.requireSubnetwork(props.subnetwork, props.network);
        this.requireSameScheme(props);
        this.requireNoPortConflict(key, props);
        this.settleRuleIp(props, prev, () =>
          (internal ? (subnet?.pool ?? this.internalPool) : this.externalPool).allocate(
            this.ipsInUse(prev === undefined ? undefined : key),
          ),
        );
        if (prev === undefined || prev.properties.ipAddress !== props.ipAddress) {
          this.requireUsableIp(key, props, scheme, subnet, ip === undefined);
        }
        break;
      }
      case "backendServices":
        this.requireRegionalCheck(props);
        this.requireExists(props.healthChecks);
        this.requireNetwork(props.network);
        if (Array.isArray(props.backends)) {
          for (const b of props.backends) {
            if (isJsonObject(b)) {
              this.requireExists(b.group);
              // A passthrough backend service's backends balance by CONNECTION, the mode a backend
              // that names none gets (kinds.ts validateInputs, backendServices: the sources).
              if (
                b.balancingMode === undefined &&
                ["INTERNAL", "EXTERNAL"].includes(String(props.loadBalancingScheme))
              ) {
                b.balancingMode = "CONNECTION";
              }
            }
          }
        }
        break;
      case "targetPools":
        // Instances of a target pool need not exist: GCE stores the URLs and the provider
        // accepts any (resource_compute_target_pool.go convertInstancesToUrls only builds URLs).
        this.requireExists(props.healthChecks);
        this.requireExists(props.backupPool);
        this.requireLegacyCheck(props.healthChecks);
        break;
      case "healthChecks":
      case "globalHealthChecks": {
        const t = healthCheckType(props);
        if (t !== undefined) {
          props.type = t;
        }
        break;
      }
      case "instanceGroups":
        this.requireNetwork(props.network);
        this.requireGroupSize(key, props.instances);
        if (Array.isArray(props.instances)) {
          props.instances.forEach((i, index) => this.requireGroupMember(key, props.network, i, index));
        }
        props.size = Array.isArray(props.instances) ? props.instances.length : 0;
        break;
      case "firewalls":
        this.requireNetwork(props.network);
        break;
      case "routes":
        this.requireNetwork(props.network);
        this.requireExists(props.nextHopInstance);
        break;
      default:
        break;
    }

    const out: JsonObject = {
      ...props,
      name: key.name,
      project: key.project,
    };
    if (spec.scope === "region") {
      out.region = key.scope;
    } else if (spec.scope === "zone") {
      out.zone = key.scope;
    }
    if (spec.labels) {
      out.labelFingerprint = fingerprintOf(props.labels ?? {});
    }
    out.id = prev?.properties.id ?? this.newId();
    out.creationTimestamp = prev?.properties.creationTimestamp ?? this.now().toISOString();
    out.selfLink = this.selfLink(key);
    out.fingerprint = resourceFingerprint(out);
    return out;
  }
}
