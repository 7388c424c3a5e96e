/**
 * IP families of a LoadBalancer Service (docs/guides/services.md#service-semantics, "IP families"):
 * which families its load balancer serves, and the family-aware reading of its load balancer IP
 * and source ranges. Pure; problems go to the caller's sink, which names the Service.
 */
import {
  ANNOTATION_BACKEND,
  ANNOTATION_ILB_SUBNET,
  ANNOTATION_IPV6_SUBNET,
  ANNOTATION_NETWORK_TIER,
} from "./annotations";
import { formatIPv6, parseCidr, parseIPv4, parseIPv6, type IpFamily } from "./net";
import type { BackendMode, LbScheme, NetworkTier } from "./types";

export interface ProblemSink {
  add(field: string, message: string): void;
}

export type FamilyPolicy = "SingleStack" | "PreferDualStack" | "RequireDualStack";

export interface Families {
  policy: FamilyPolicy;
  ipv4: boolean;
  ipv6: boolean;
}

const POLICIES: readonly string[] = ["SingleStack", "PreferDualStack", "RequireDualStack"];

/** spec.ipFamilyPolicy and spec.ipFamilies as the apiserver leaves them; absent: IPv4 SingleStack. */
export function readFamilies(
  ipFamilies: readonly string[] | undefined,
  ipFamilyPolicy: string | undefined,
  problems: ProblemSink,
): Families {
  let policy: FamilyPolicy = "SingleStack";
  if (ipFamilyPolicy !== undefined && POLICIES.includes(ipFamilyPolicy)) policy = ipFamilyPolicy as FamilyPolicy;
  else if (ipFamilyPolicy !== undefined)
    problems.add("spec.ipFamilyPolicy", `"${ipFamilyPolicy}" is not SingleStack, PreferDualStack or RequireDualStack`);
  const listed: IpFamily[] = [];
  (ipFamilies ?? []).forEach((family, index) => {
    if (family !== "IPv4" && family !== "IPv6")
      problems.add(`spec.ipFamilies[${index}]`, `"${family}" is not IPv4 or IPv6`);
    else if (listed.includes(family)) problems.add(`spec.ipFamilies[${index}]`, `${family} is listed twice`);
    else listed.push(family);
  });
  // An object without ipFamilies (a hand-written snapshot) takes what its policy asks for.
  const families: IpFamily[] = listed.length > 0 ? listed : policy === "SingleStack" ? ["IPv4"] : ["IPv4", "IPv6"];
  if (policy === "SingleStack" && families.length > 1)
    problems.add("spec.ipFamilies", `SingleStack takes one IP family, got ${families.join(", ")}`);
  if (policy === "RequireDualStack" && families.length < 2)
    problems.add("spec.ipFamilies", `RequireDualStack needs IPv4 and IPv6, got ${families.join(", ")}`);
  return { policy, ipv4: families.includes("IPv4"), ipv6: families.includes("IPv6") };
}

export interface Ipv6Setup {
  scheme: LbScheme;
  backend: BackendMode;
  networkTier: NetworkTier;
  /** The subnetwork the IPv6 half would use: the internal one, or the external IPv6 one. */
  subnetwork: string | undefined;
}

/** What keeps GCE from serving this load balancer over IPv6, naming the field to change; undefined when nothing does. */
export function ipv6Obstacle(setup: Ipv6Setup): { field: string; message: string } | undefined {
  if (setup.backend === "target-pool") {
    // Target pool-based external passthrough Network Load Balancers support only IPv4 traffic
    // (cloud.google.com/load-balancing/docs/network/networklb-target-pools).
    return {
      field: `metadata.annotations[${ANNOTATION_BACKEND}]`,
      message:
        "IPv6 needs a backend-service load balancer: target pools are IPv4-only (set backend-service here or config backendMode)",
    };
  }
  if (setup.scheme === "EXTERNAL" && setup.networkTier === "STANDARD") {
    // Google documents IPv6 load balancing in Premium Tier (cloud.google.com/load-balancing/docs/choosing-load-balancer:
    // "IPv6 termination is available if you configure the load balancer in Premium Tier"); a Standard
    // tier IPv6 Network Load Balancer is not documented, so it is refused rather than assumed.
    return {
      field: `metadata.annotations[${ANNOTATION_NETWORK_TIER}]`,
      message: "IPv6 load balancers are Premium tier only",
    };
  }
  if (setup.subnetwork === undefined) {
    const internal = setup.scheme === "INTERNAL";
    return {
      field: `metadata.annotations[${internal ? ANNOTATION_ILB_SUBNET : ANNOTATION_IPV6_SUBNET}]`,
      message: `IPv6 needs a dual-stack subnetwork (stackType IPV4_IPV6, ipv6AccessType ${internal ? "INTERNAL" : "EXTERNAL"}): set this annotation or config subnetwork`,
    };
  }
  return undefined;
}

/** The families the load balancer serves, and why IPv6 was left out of a PreferDualStack one. */
export interface Served {
  ipv4: boolean;
  ipv6: boolean;
  fallback?: string;
}

/** PreferDualStack falls back to IPv4 when GCE cannot serve IPv6 here; a Service that requires IPv6 is rejected. */
export function servedFamilies(families: Families, setup: Ipv6Setup, problems: ProblemSink): Served {
  if (!families.ipv6) return { ipv4: families.ipv4, ipv6: false };
  const obstacle = ipv6Obstacle(setup);
  if (obstacle === undefined) return { ipv4: families.ipv4, ipv6: true };
  if (families.policy === "PreferDualStack" && families.ipv4) {
    return {
      ipv4: true,
      ipv6: false,
      fallback: `spec.ipFamilyPolicy PreferDualStack: the load balancer serves IPv4 only: ${obstacle.field}: ${obstacle.message}`,
    };
  }
  problems.add(obstacle.field, obstacle.message);
  return { ipv4: families.ipv4, ipv6: false };
}

/** spec.loadBalancerIP of a Service that asked for IPv6: either family, the one it is of must be served. */
export function readUserIPs(value: string, served: Served, problems: ProblemSink): { ipv4?: string; ipv6?: string } {
  const groups = parseIPv6(value);
  if (parseIPv4(value) === undefined && groups === undefined) {
    problems.add("spec.loadBalancerIP", `"${value}" is not an IP address`);
    return {};
  }
  const family: IpFamily = groups === undefined ? "IPv4" : "IPv6";
  if (family === "IPv4" ? !served.ipv4 : !served.ipv6) {
    problems.add(
      "spec.loadBalancerIP",
      `"${value}" is an ${family} address, but the load balancer does not serve ${family}${served.fallback !== undefined ? ` (${served.fallback})` : ""}`,
    );
    return {};
  }
  // GCE stores an IPv6 address in its RFC 5952 form: compared as written, another spelling would never match.
  return groups === undefined ? { ipv4: value } : { ipv6: formatIPv6(groups) };
}

/** Source ranges of a Service that asked for IPv6, split by family; each served family gets its own firewall. */
export function readDualSourceRanges(
  field: string,
  raw: readonly string[],
  served: Served,
  problems: ProblemSink,
): { ipv4: string[]; ipv6: string[] } {
  if (raw.length === 0) return { ipv4: ["0.0.0.0/0"], ipv6: ["::/0"] };
  const ranges = { ipv4: new Set<string>(), ipv6: new Set<string>() };
  let malformed = false;
  for (const text of raw) {
    const parsed = parseCidr(text);
    if (!parsed.ok) problems.add(field, parsed.reason);
    else ranges[parsed.family === "IPv4" ? "ipv4" : "ipv6"].add(parsed.canonical);
    malformed ||= !parsed.ok;
  }
  const result = { ipv4: [...ranges.ipv4].sort(), ipv6: [...ranges.ipv6].sort() };
  if (malformed) return result;
  // With ranges given, a served family without one must not default to everyone.
  for (const family of ["ipv4", "ipv6"] as const) {
    if (served[family] && result[family].length === 0) {
      problems.add(
        field,
        `no ${family === "ipv4" ? "IPv4" : "IPv6"} range; each IP family the load balancer serves needs at least one when ranges are given`,
      );
    }
  }
  return result;
}
