// The rules of forwarding rules: where a rule's IP comes from (ephemeral, a reserved address, an
// internal literal), which IPs and ports rules may share, the backend's scheme, and what becomes
// of an ephemeral IP when its rule is deleted.

import * as net from "node:net";

import { GceError, notFound } from "../errors";
import { allocateIPv6, inRange, inRange6 } from "../ipam";
import { containsUnknown, type JsonObject } from "../json";
import { normalizeRef } from "../kinds";
import type { StoredSubnetwork } from "../networks";
import type { ResourceKey, StoredResource } from "../store";
import { forwardingRulePorts } from "../validation";
import type { KindRules, RuleEnv } from "./rules";

/**
 * A forwarding rule's IPAddress, either family: an address named by its link or name is its IP;
 * none given keeps the rule's previous IP, or takes an ephemeral one from `allocate`.
 */
function settleRuleIp(env: RuleEnv, props: JsonObject, prev: StoredResource | undefined, allocate: () => string): void {
  const ip = props.ipAddress;
  if (typeof ip === "string" && net.isIP(ip) === 0) {
    const resolved = env.resolveAddress(ip);
    if (resolved === undefined) {
      const addrKey = env.keyOfPath(ip);
      throw notFound(addrKey === undefined ? ip : env.path(addrKey));
    }
    props.ipAddress = resolved;
  } else if (ip === undefined) {
    props.ipAddress = prev?.properties.ipAddress ?? allocate();
  }
}

/**
 * An IPv6 forwarding rule's IP: its reserved IPv6 address, an IPv6 literal (checked like any IP
 * by requireUsableIp), or an ephemeral /96 of its dual-stack subnet.
 */
function ipv6RuleAddress(
  env: RuleEnv,
  key: ResourceKey,
  props: JsonObject,
  prev: StoredResource | undefined,
): StoredSubnetwork {
  const subnet = env.networks.dualStackSubnet(
    props,
    String(props.loadBalancingScheme ?? "EXTERNAL").startsWith("INTERNAL"),
    "forwarding rule",
  );
  settleRuleIp(env, props, prev, () => allocateIPv6(subnet, env.ipsInUse(prev === undefined ? undefined : key)));
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
 * Two forwarding rules of one project and region cannot share [IPAddress, IPProtocol] with
 * overlapping ports. Checked after the rule's own IP is known (see materialize).
 */
function requireNoPortConflict(env: RuleEnv, key: ResourceKey, props: JsonObject): void {
  const ip =
    typeof props.ipAddress === "string" && net.isIP(props.ipAddress) === 0
      ? env.resolveAddress(props.ipAddress)
      : props.ipAddress;
  if (typeof ip !== "string") {
    return;
  }
  const protocol = props.ipProtocol ?? "TCP";
  const mine = forwardingRulePorts(props);
  for (const other of env.store.ofKind("forwardingRules")) {
    if (other.project !== key.project || other.scope !== key.scope || other.name === key.name) {
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
        `Invalid value for field 'resource.IPAddress': '${ip}'. Specified IP address is in-use and would result in a conflict: forwarding rule '${env.path(other)}' already uses ${String(protocol)} on overlapping ports.`,
        "invalid",
      );
    }
  }
}

/**
 * A forwarding rule's scheme must be its backend service's (forwarding-rule-concepts: an
 * internal passthrough rule points at an INTERNAL backend service, an external one at EXTERNAL).
 */
function requireSameScheme(env: RuleEnv, props: JsonObject): void {
  if (typeof props.backendService !== "string") {
    return;
  }
  const key = env.keyOfPath(props.backendService);
  const bs = key === undefined ? undefined : env.store.peek(key);
  const ruleScheme = props.loadBalancingScheme ?? "EXTERNAL";
  const bsScheme = bs?.properties.loadBalancingScheme ?? "INTERNAL";
  if (bs !== undefined && bsScheme !== ruleScheme) {
    throw new GceError(
      400,
      `Invalid value for field 'resource.loadBalancingScheme': '${String(ruleScheme)}'. The forwarding rule's load balancing scheme must match the scheme of backend service '${env.path(bs)}' (${String(bsScheme)}).`,
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
function requireUsableIp(
  env: RuleEnv,
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
  const reserved = env.store
    .ofKind("addresses")
    .find((r) => r.project === key.project && r.scope === key.scope && r.properties.address === ip);
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
          `Invalid value for field 'resource.IPAddress': '${ip}'. Address '${env.path(reserved)}' is ${String(addressType)} and cannot be used by a forwarding rule with loadBalancingScheme ${scheme}.`,
          "invalid",
        );
      }
      const ruleTier = props.networkTier ?? "PREMIUM";
      const addressTier = reserved.properties.networkTier ?? "PREMIUM";
      if (!internal && ruleTier !== addressTier) {
        throw new GceError(
          400,
          `Invalid value for field 'resource.networkTier': '${String(ruleTier)}'. The network tier of the forwarding rule must be the same as the network tier of its IP address '${env.path(reserved)}' (${String(addressTier)}).`,
          "invalid",
        );
      }
    }
  }
  if (!internal) {
    return;
  }
  const sharing = env.store
    .ofKind("forwardingRules")
    .filter(
      (r) =>
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
      `Invalid value for field 'resource.IPAddress': '${ip}'. IP address is already in use by forwarding rule '${env.path(first)}'; internal forwarding rules can share an IP address only if it is reserved with purpose SHARED_LOADBALANCER_VIP.`,
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

export const FORWARDING_RULE_RULES: KindRules = {
  normalizeField(field, value, ctx) {
    if (field !== "ipAddress") {
      return undefined;
    }
    if (typeof value !== "string" || net.isIP(value) !== 0 || containsUnknown(value)) {
      return value;
    }
    return normalizeRef(value, { collection: "addresses", scope: "region" }, ctx);
  },
  comparable(env, field, value) {
    return field === "ipAddress" && typeof value === "string" ? (env.resolveAddress(value) ?? value) : value;
  },
  materialize(env, key, props, prev) {
    env.requireExists(props.backendService);
    env.requireExists(props.target);
    env.networks.requireNetwork(props.network);
    const scheme = typeof props.loadBalancingScheme === "string" ? props.loadBalancingScheme : "EXTERNAL";
    const internal = scheme.startsWith("INTERNAL");
    const ip = props.ipAddress;
    if (props.ipVersion === "IPV6") {
      const subnet = ipv6RuleAddress(env, key, props, prev);
      requireSameScheme(env, props);
      requireNoPortConflict(env, key, props);
      if (prev === undefined || prev.properties.ipAddress !== props.ipAddress) {
        requireUsableIp(env, key, props, scheme, subnet, ip === undefined);
      }
      return;
    }
    const subnet = internal
      ? env.networks.internalSubnet(key, props, "IPAddress")
      : env.networks.requireSubnetwork(props.subnetwork, props.network);
    requireSameScheme(env, props);
    requireNoPortConflict(env, key, props);
    settleRuleIp(env, props, prev, () =>
      (internal ? (subnet?.pool ?? env.ipam.internal) : env.ipam.external).allocate(
        env.ipsInUse(prev === undefined ? undefined : key),
      ),
    );
    if (prev === undefined || prev.properties.ipAddress !== props.ipAddress) {
      requireUsableIp(env, key, props, scheme, subnet, ip === undefined);
    }
  },
  usedBy: (link, user) => user.kind === "routes" && user.properties.nextHopIlb === link,
  /**
   * A rule's IP that no address of its project and region holds is ephemeral: it goes back to
   * Google's pool (Ipam.release). A reserved address keeps its IP when its rules are deleted ("A
   * static external IP address is reserved for your project until you decide to release it":
   * cloud.google.com/vpc/docs/reserve-static-external-ip-address).
   */
  afterRemove(env, gone) {
    const ip = gone.properties.ipAddress;
    if (typeof ip !== "string") {
      return;
    }
    const held = env.store
      .all()
      .some(
        (r) =>
          r.project === gone.project &&
          r.scope === gone.scope &&
          ((r.kind === "addresses" && r.properties.address === ip) ||
            (r.kind === "forwardingRules" && r.properties.ipAddress === ip)),
      );
    if (!held) {
      env.ipam.release(ip);
    }
  },
};
