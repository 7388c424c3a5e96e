// VPC networks and subnetworks: seeded by tests (they are not resources dccm manages), looked up by
// the rules of the kinds that name them, and the internal IP pools of their subnets.

import * as net from "node:net";

import { GceError, notFound } from "./errors";
import { IpPool, cidrsOverlap, isCidr4, usableRange } from "./ipam";
import type { Json, JsonObject } from "./json";
import { invalidNameMessage, NAME_RE, parseResourcePath } from "./kinds";
import { isCidr } from "./validation";
import type { ResourceKey } from "./store";

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

export interface StoredSubnetwork {
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
 * The kinds a Shared VPC keeps in the network's own project: firewall rules and routes are
 * resources of the VPC network (cloud.google.com/vpc/docs/shared-vpc, "Shared VPC allows
 * organization administrators to delegate administrative responsibilities, such as creating and
 * managing instances, to Service Project Admins while maintaining centralized control over network
 * resources like subnets, routes, and firewalls."), so a service project cannot name the host's
 * network in one: hashicorp/terraform-provider-google's users see a firewall in a service project
 * on a host network refused ("Cross project referencing is not allowed for this resource",
 * terraform-google-modules/terraform-google-bastion-host#110).
 */
const NETWORK_OWN_KINDS: ReadonlySet<string> = new Set(["firewalls", "routes"]);

export class Networks {
  private readonly networks = new Map<string, StoredNetwork>();
  private readonly subnetworks = new Map<string, StoredSubnetwork>();
  /** Shared VPC host projects (`projects.enableXpnHost`). */
  private readonly xpnHosts = new Set<string>();
  /** Service project → the host it is attached to (`projects.enableXpnResource`). */
  private readonly xpnServices = new Map<string, string>();

  constructor(
    private readonly endpoint: string,
    private readonly project: string,
    private readonly region: string,
    private readonly initial: readonly NetworkSpec[],
  ) {
    this.initial.forEach((n) => this.put(n));
  }

  /** Creates (or replaces) a VPC network and its subnetworks (test seeding, like instances). */
  put(spec: NetworkSpec): void {
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

  /** The subnetwork of a network (its self link) in a region, if it has one. */
  subnetIn(networkLink: string, region: string): StoredSubnetwork | undefined {
    return [...this.subnetworks.values()].find((s) => s.network === networkLink && s.region === region);
  }

  /** A network reference must name an existing network (GCE answers 404 otherwise). */
  requireNetwork(link: Json | undefined): void {
    if (typeof link === "string" && this.networkOf(link) === undefined) {
      const p = parseResourcePath(link);
      throw notFound(p === undefined ? link : `projects/${p.project}/global/networks/${p.name}`);
    }
  }

  requireSubnetwork(link: Json | undefined, networkLink: Json | undefined): StoredSubnetwork | undefined {
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
  internalSubnet(key: ResourceKey, props: JsonObject, field: "IPAddress" | "address"): StoredSubnetwork | undefined {
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
    return this.subnetIn(networkLink, key.scope);
  }

  /**
   * The dual-stack subnetwork an IPv6 address or forwarding rule comes from: it must be named
   * (GCE's message for a rule, verbatim from hashicorp/terraform-provider-google#18407: "Subnetwork
   * or Ip Collection must be specified for IPv6 forwarding rules."), be dual-stack (subnetworks
   * reference: stackType IPV4_IPV6), and its ipv6AccessType must be the scheme's: external IPv6
   * addresses and rules come from an EXTERNAL range, internal ones from an INTERNAL range
   * (cloud.google.com/vpc/docs/subnets, "IPv6 access type"). The last two texts are ours.
   */
  dualStackSubnet(props: JsonObject, internal: boolean, what: "address" | "forwarding rule"): StoredSubnetwork {
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

  /**
   * `projects.enableXpnHost`: the project becomes a Shared VPC host (cloud.google.com/vpc/docs/
   * provisioning-shared-vpc: "Shared VPC is also referred to as "XPN" in the API"). Refused for a
   * service project: "A project cannot be both a host and a service project simultaneously"
   * (cloud.google.com/vpc/docs/shared-vpc, "Host and service projects"; the message is ours).
   */
  enableXpnHost(project: string): void {
    const host = this.xpnServices.get(project);
    if (host !== undefined) {
      throw new GceError(
        400,
        `Project '${project}' is a service project of Shared VPC host '${host}': a project cannot be both a host and a service project.`,
        "invalid",
      );
    }
    this.xpnHosts.add(project);
  }

  /**
   * `projects.enableXpnResource` on the host: attaches a service project. "A service project is any
   * project that has been attached to a host project by a Shared VPC Admin"; "each service project
   * can only be attached to a single host project" (cloud.google.com/vpc/docs/shared-vpc, "Host
   * and service projects"). The messages are ours.
   */
  enableXpnResource(host: string, service: string): void {
    if (!this.xpnHosts.has(host)) {
      throw new GceError(400, `Project '${host}' is not a Shared VPC host project (enableXpnHost first).`, "invalid");
    }
    const attached = this.xpnServices.get(service);
    if (this.xpnHosts.has(service) || service === host || (attached !== undefined && attached !== host)) {
      throw new GceError(
        400,
        `Project '${service}' cannot be attached to Shared VPC host '${host}': it is ${attached !== undefined ? `attached to '${attached}'` : "a host project"}.`,
        "invalid",
      );
    }
    this.xpnServices.set(service, host);
  }

  /** `projects.getXpnHost`: the host a service project is attached to, if any. */
  xpnHostOf(service: string): string | undefined {
    return this.xpnServices.get(service);
  }

  /**
   * A resource of `key`'s project naming a network or subnetwork of another project: accepted only
   * from a service project attached to that project as its Shared VPC host ("Instances in the
   * service projects can have network connections in the shared subnets of the host project",
   * cloud.google.com/vpc/docs/provisioning-shared-vpc; load balancers of a service project use the
   * host's network and subnets, cloud.google.com/load-balancing/docs/internal#shared_vpc), and
   * never from a firewall or route, which are the network's own. Else GCE's 400, verbatim as
   * tranquilitybase-io/tb-gcp#507 quotes it for a service project not yet attached: "Invalid
   * value for field '...subnetwork': '<link>'. Cross-project references for this resource are not
   * allowed."
   */
  requireSameProjectOrShared(key: ResourceKey, field: string, link: Json | undefined): void {
    if (typeof link !== "string") {
      return;
    }
    const referenced = parseResourcePath(link)?.project;
    if (referenced === undefined || referenced === key.project) {
      return;
    }
    if (!NETWORK_OWN_KINDS.has(key.kind) && this.xpnServices.get(key.project) === referenced) {
      return;
    }
    throw new GceError(
      400,
      `Invalid value for field 'resource.${field}': '${link}'. Cross-project references for this resource are not allowed.`,
      "invalid",
    );
  }

  /** Back to the networks the emulator started with, and no Shared VPC. */
  reset(): void {
    this.networks.clear();
    this.subnetworks.clear();
    this.xpnHosts.clear();
    this.xpnServices.clear();
    this.initial.forEach((n) => this.put(n));
  }
}
