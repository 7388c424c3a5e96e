/**
 * A Service's `spec.loadBalancerIP` on an external load balancer, checked against GCE before the
 * `up` (issue 19.4), as the stock CCM's verifyUserRequestedIP does: the IP must be a static address
 * reserved in the project and region, in the Service's network tier, or already be the load
 * balancer's own IP. Anything else would fail inside the engine with a provider message, or worse,
 * be reported as ensured. Internal load balancers are not checked: there, GCE takes any free IP of
 * the subnetwork, as the stock CCM's ILB path does.
 */
import { ANNOTATION_NETWORK_TIER, type ServiceDesired } from "../../model";
import type { ComputeClient } from "../../gce";

export interface ObservedAddress {
  name: string;
  address: string;
  /** EXTERNAL or INTERNAL (GCE's default when absent: EXTERNAL). */
  addressType?: string;
  /** PREMIUM or STANDARD (GCE's default when absent: PREMIUM). */
  networkTier?: string;
}

export type RequestedIpCheck = { ok: true; source: "static" | "current" } | { ok: false; message: string };

export function checkRequestedIp(
  service: Pick<ServiceDesired, "key" | "scheme" | "networkTier" | "userIP">,
  where: { project: string; region: string },
  addresses: readonly ObservedAddress[],
  currentRuleIps: readonly string[],
): RequestedIpCheck | undefined {
  const requested = service.userIP;
  if (requested === undefined || service.scheme !== "EXTERNAL") return undefined;
  const prefix = `Service ${service.key}: spec.loadBalancerIP: ${requested}`;
  const reserved = addresses.find((address) => address.address === requested);
  if (reserved !== undefined) {
    if ((reserved.addressType ?? "EXTERNAL") !== "EXTERNAL") {
      return {
        ok: false,
        message: `${prefix} is the internal address ${reserved.name}; an external load balancer needs an EXTERNAL address`,
      };
    }
    const tier = reserved.networkTier ?? "PREMIUM";
    if (tier !== service.networkTier) {
      return {
        ok: false,
        message: `${prefix} is address ${reserved.name} of the ${tier} network tier, and the Service asks for ${service.networkTier} (annotation ${ANNOTATION_NETWORK_TIER})`,
      };
    }
    return { ok: true, source: "static" };
  }
  if (currentRuleIps.includes(requested)) return { ok: true, source: "current" };
  return {
    ok: false,
    message:
      `${prefix} is neither a static address reserved in project ${where.project} region ${where.region} nor the current IP of the load balancer; ` +
      `reserve it first (gcloud compute addresses create NAME --region ${where.region} --addresses ${requested})`,
  };
}

/** The two Compute reads the check needs. */
export interface AddressReader {
  regionalAddresses(project: string, region: string, signal?: AbortSignal): Promise<ObservedAddress[]>;
  /** The IP of a regional forwarding rule, undefined when there is no such rule. */
  forwardingRuleIp(project: string, region: string, name: string, signal?: AbortSignal): Promise<string | undefined>;
}

/**
 * The reconciler's verifyRequestedIp over Compute. When Compute cannot answer, the check is skipped
 * (logged): the `up` still fails on an IP GCE refuses, only with the provider's words.
 */
export function requestedIpVerifier(
  reader: AddressReader,
  where: { project: string; region: string },
  onUnchecked: (service: string, error: unknown) => void,
  signal?: AbortSignal,
): (service: ServiceDesired) => Promise<string | undefined> {
  return async (service) => {
    if (service.userIP === undefined || service.scheme !== "EXTERNAL") return undefined;
    let addresses: ObservedAddress[];
    let ruleIps: string[];
    try {
      addresses = await reader.regionalAddresses(where.project, where.region, signal);
      const ips = await Promise.all(
        service.frontends.map((frontend) =>
          reader.forwardingRuleIp(where.project, where.region, frontend.name, signal),
        ),
      );
      ruleIps = ips.filter((ip): ip is string => ip !== undefined);
    } catch (error) {
      onUnchecked(service.key, error);
      return undefined;
    }
    const check = checkRequestedIp(service, where, addresses, ruleIps);
    return check !== undefined && !check.ok ? check.message : undefined;
  };
}

function text(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** AddressReader over the Compute client (addresses.list, forwardingRules.get). */
export function computeAddressReader(compute: Pick<ComputeClient, "listCollection" | "getResource">): AddressReader {
  return {
    async regionalAddresses(project, region, signal) {
      const items = await compute.listCollection(
        "addresses.list",
        `projects/${project}/regions/${region}/addresses`,
        signal !== undefined ? { signal } : {},
      );
      return items.flatMap((item): ObservedAddress[] => {
        if (typeof item !== "object" || item === null) return [];
        const fields = item as Record<string, unknown>;
        const name = text(fields.name);
        const address = text(fields.address);
        if (name === undefined || address === undefined) return [];
        const addressType = text(fields.addressType);
        const networkTier = text(fields.networkTier);
        return [
          {
            name,
            address,
            ...(addressType !== undefined ? { addressType } : {}),
            ...(networkTier !== undefined ? { networkTier } : {}),
          },
        ];
      });
    },
    async forwardingRuleIp(project, region, name, signal) {
      const rule = await compute.getResource(
        "forwardingRules.get",
        `projects/${project}/regions/${region}/forwardingRules/${name}`,
        signal !== undefined ? { signal } : {},
      );
      return typeof rule === "object" && rule !== null ? text((rule as Record<string, unknown>).IPAddress) : undefined;
    },
  };
}
