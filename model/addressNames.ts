/**
 * `networking.gke.io/load-balancer-ip-addresses` (pure): names of regional addresses the user reserved,
 * resolved to their IPs by reading each by name (ingress-gce pkg/l4/annotations/l4_static_address.go
 * ipAddressFromAnnotation: `GetRegionAddress` in the cluster's region, the family from `ipVersion`,
 * IPV4 when absent). Where ingress-gce skips a name GCE does not know, dccm refuses it: a typo
 * would otherwise silently give the Service an ephemeral IP. The addresses stay the user's: they
 * reach the stack as a user IP (`userIP`, `userIP6`), never as an address dccm declares, so no run
 * deletes them. The Compute read is controllers/service/addressNames.ts readRegionalAddress.
 */

/** A regional address as `addresses.get` answers it, in the fields the check reads. */
export interface NamedAddress {
  name: string;
  address: string;
  /** EXTERNAL or INTERNAL (GCE's default when absent: EXTERNAL). */
  addressType?: string;
  /** IPV4 or IPV6 (GCE's default when absent: IPV4). */
  ipVersion?: string;
  /** GCE_ENDPOINT, SHARED_LOADBALANCER_VIP, … (absent on an external address). */
  purpose?: string;
}

export interface ResolvedAddress {
  name: string;
  ip: string;
}

export type AddressNamesResolution =
  | { ok: true; ipv4?: ResolvedAddress; ipv6?: ResolvedAddress }
  /** What is wrong, for metadata.annotations[networking.gke.io/load-balancer-ip-addresses]. */
  | { ok: false; problem: string };

/** Internal forwarding rules take an address reserved for endpoints, or one shared by several rules. */
const INTERNAL_PURPOSES = ["GCE_ENDPOINT", "SHARED_LOADBALANCER_VIP"];

function misfit(address: NamedAddress, scheme: "EXTERNAL" | "INTERNAL"): string | undefined {
  const type = address.addressType ?? "EXTERNAL";
  if (type !== scheme)
    return `address ${address.name} is ${type}; an ${scheme.toLowerCase()} load balancer needs an ${scheme} address`;
  if (scheme === "INTERNAL" && !INTERNAL_PURPOSES.includes(address.purpose ?? "GCE_ENDPOINT"))
    return `address ${address.name} has purpose ${address.purpose}; an internal load balancer needs purpose GCE_ENDPOINT or SHARED_LOADBALANCER_VIP`;
  return undefined;
}

/**
 * The names (as gkeAnnotations.ts readAddressNames read them) and what GCE answered for each
 * (undefined: no such address in the region) → at most one address per family.
 */
export function resolveAddressNames(
  scheme: "EXTERNAL" | "INTERNAL",
  where: { project: string; region: string },
  names: readonly string[],
  found: ReadonlyMap<string, NamedAddress | undefined>,
): AddressNamesResolution {
  const families: { ipv4?: ResolvedAddress; ipv6?: ResolvedAddress } = {};
  for (const name of names) {
    const address = found.get(name);
    if (address === undefined)
      return {
        ok: false,
        problem: `no address ${name} in project ${where.project} region ${where.region}; the load balancer needs a regional address of its own region (gcloud compute addresses create ${name} --region ${where.region})`,
      };
    const wrong = misfit(address, scheme);
    if (wrong !== undefined) return { ok: false, problem: wrong };
    const family = (address.ipVersion ?? "IPV4") === "IPV6" ? "ipv6" : "ipv4";
    const taken = families[family];
    if (taken !== undefined)
      return {
        ok: false,
        problem: `addresses ${taken.name} and ${name} are both ${family === "ipv4" ? "IPv4" : "IPv6"}; name at most one address of each family`,
      };
    families[family] = { name, ip: address.address };
  }
  return { ok: true, ...families };
}
