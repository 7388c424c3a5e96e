// The rules of addresses: where an IP comes from (allocated, named, promoted from a rule's
// ephemeral IP), in which subnetwork, and which IPs may not be reserved.

import * as net from "node:net";

import { GceError } from "../errors";
import { nicIps } from "../instances";
import { allocateIPv6, canonicalIPv6, inRange, inRange6 } from "../ipam";
import type { Json, JsonObject } from "../json";
import type { ResourceKey, StoredResource } from "../store";
import type { KindRules, RuleEnv } from "./rules";

/** An IPv6 address: a /96 of the subnet's range, or the one named, which must lie in it. */
function materializeIpv6Address(
  env: RuleEnv,
  key: ResourceKey,
  props: JsonObject,
  prev: StoredResource | undefined,
): void {
  const subnet = env.networks.dualStackSubnet(props, props.addressType === "INTERNAL", "address");
  if (props.address === undefined) {
    props.address =
      prev?.properties.address ?? allocateIPv6(subnet, env.ipsInUse(prev === undefined ? undefined : key));
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
function requireReservableIp(
  env: RuleEnv,
  key: ResourceKey,
  ip: string,
  internal: boolean,
  tier: Json | undefined,
): void {
  const here = (r: StoredResource): boolean => r.project === key.project && r.scope === key.scope;
  const isInternal = (r: StoredResource): boolean =>
    r.kind === "addresses"
      ? r.properties.addressType === "INTERNAL"
      : String(r.properties.loadBalancingScheme ?? "EXTERNAL").startsWith("INTERNAL");
  const holder = env.store
    .ofKind("addresses")
    .find((r) => r.properties.address === ip && isInternal(r) === internal && (!internal || here(r)));
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
  const rule = env.store
    .ofKind("forwardingRules")
    .find((r) => here(r) && r.properties.ipAddress === ip && isInternal(r) === internal);
  if (internal) {
    const nic = env.store
      .ofKind("instances")
      .some((r) => r.project === key.project && nicIps(r, "networkIP").includes(ip));
    if (rule === undefined && nic) {
      throw new GceError(409, `IP '${ip}' is already being used by another resource.`, "IP_IN_USE_BY_ANOTHER_RESOURCE");
    }
    return;
  }
  if (rule !== undefined && (rule.properties.networkTier ?? "PREMIUM") === (tier ?? "PREMIUM")) {
    return;
  }
  if (rule !== undefined || env.ipsInUse(key).has(ip)) {
    throw new GceError(
      400,
      `Invalid value for field 'resource.address': '${ip}'. The IP address is not available to this project: it is neither free nor the ephemeral IP of a forwarding rule of this project and region with network tier ${String(tier ?? "PREMIUM")}.`,
      "invalid",
    );
  }
}

export const ADDRESS_RULES: KindRules = {
  materialize(env, key, props, prev) {
    env.networks.requireNetwork(props.network);
    if (props.ipVersion === "IPV6") {
      materializeIpv6Address(env, key, props, prev);
      return;
    }
    const internal = props.addressType === "INTERNAL";
    const subnet = internal
      ? env.networks.internalSubnet(key, props, "address")
      : env.networks.requireSubnetwork(props.subnetwork, props.network);
    if (props.address === undefined) {
      props.address =
        prev?.properties.address ??
        (internal ? (subnet?.pool ?? env.ipam.internal) : env.ipam.external).allocate(
          env.ipsInUse(prev === undefined ? undefined : key),
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
      requireReservableIp(env, key, props.address, internal, props.networkTier);
    }
  },
};
