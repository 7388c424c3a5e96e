// The rules of zonal network endpoint groups: their network and subnetwork, their GCE_VM_IP
// endpoints (attach, detach: the VM, its IP, one endpoint per VM and IP), the size GCE computes,
// and who uses them.

import { GceError } from "../errors";
import { inRange } from "../ipam";
import { isJsonObject, type Json, type JsonObject } from "../json";
import { normalizeRef } from "../kinds";
import type { StoredSubnetwork } from "../networks";
import type { ResourceKey, StoredResource } from "../store";
import type { KindRules, RuleEnv } from "./rules";

/**
 * The stored property holding a NEG's endpoints (`[{ instance: <self link>, ipAddress }]`). It is
 * no input of the NEG (attach/detach change it) and no field of its REST form (GCE reports `size`):
 * rest.ts and provider-api.ts leave it out.
 */
export const NEG_ENDPOINTS = "networkEndpoints";

/** One endpoint as the emulator stores it. */
export interface StoredEndpoint {
  /** The instance's self link. */
  readonly instance: string;
  readonly ipAddress: string;
}

/** An endpoint of an attach or detach request (networkEndpointGroups.attachNetworkEndpoints body). */
export interface EndpointRequest {
  readonly instance?: string;
  readonly ipAddress?: string;
  readonly port?: Json;
}

/** The endpoints a NEG holds. */
export function storedEndpoints(neg: StoredResource): StoredEndpoint[] {
  const list = neg.properties[NEG_ENDPOINTS];
  if (!Array.isArray(list)) {
    return [];
  }
  return list.flatMap((e) =>
    isJsonObject(e) && typeof e.instance === "string" && typeof e.ipAddress === "string"
      ? [{ instance: e.instance, ipAddress: e.ipAddress }]
      : [],
  );
}

/**
 * The subnetwork of a NEG: the one it names, else its network's in the region. Zonal NEGs "represent
 * collections of either IP addresses or IP address and port combinations for Google Cloud resources
 * within a single subnet" (cloud.google.com/load-balancing/docs/negs/zonal-neg-concepts).
 */
function negSubnet(env: RuleEnv, key: ResourceKey, props: JsonObject): StoredSubnetwork | undefined {
  const named = env.networks.requireSubnetwork(props.subnetwork, props.network);
  if (named !== undefined || typeof props.network !== "string") {
    return named;
  }
  return env.networks.subnetIn(props.network, key.scope.replace(/-[a-z]$/, ""));
}

function invalid(index: number, field: string, value: string, why: string): GceError {
  return new GceError(
    400,
    `Invalid value for field 'networkEndpoints[${index}].${field}': '${value}'. ${why}`,
    "invalid",
  );
}

/** An interface's IPs an endpoint may name: its primary internal IP, or one of its alias ranges. */
function nicHolds(nic: JsonObject, ip: string): boolean {
  if (nic.networkIP === ip) {
    return true;
  }
  const aliases = Array.isArray(nic.aliasIpRanges) ? nic.aliasIpRanges : [];
  return aliases.some((a) => isJsonObject(a) && typeof a.ipCidrRange === "string" && inRange(ip, a.ipCidrRange));
}

/** The VM's interface in the NEG's subnetwork, if it has one. */
function nicInSubnet(
  instance: StoredResource,
  subnetLink: string | undefined,
  network: Json | undefined,
): JsonObject | undefined {
  const nics = Array.isArray(instance.properties.networkInterfaces) ? instance.properties.networkInterfaces : [];
  return nics.find(
    (n): n is JsonObject =>
      isJsonObject(n) && (subnetLink === undefined ? n.network === network : n.subnetwork === subnetLink),
  );
}

/**
 * One GCE_VM_IP endpoint of an attach, checked against the NEG as GCE does:
 * - the VM must be in the NEG's zone (NetworkEndpoint.instance: "The instance must be in the same
 *   zone of network endpoint group", networkEndpointGroups resource reference);
 * - a GCE_VM_IP endpoint has no port ("port is required unless the Network Endpoint Group is
 *   created with the type of GCE_VM_IP", @pulumi/gcp NetworkEndpointListNetworkEndpoint.port);
 * - its IP is the VM's primary internal IP, or in an alias range, of the VM's interface in the
 *   NEG's subnetwork (NetworkEndpoint.ipAddress: "The IP address must belong to a VM in Compute
 *   Engine (either the primary IP or as part of an aliased IP range). If the IP address is not
 *   specified, then the primary IP address for the VM instance in the network that the network
 *   endpoint group belongs to will be used"; zonal-neg-concepts: a GCE_VM_IP endpoint is
 *   "represented using the primary internal IPv4 address of a Compute Engine VM's network
 *   interface", in the NEG's "single subnet").
 * An endpoint that names no instance is looked up by its IP among the zone's VMs (the IP "must
 * belong to a VM"). Messages are the emulator's: GCE's exact texts are not documented.
 */
function resolveEndpoint(
  env: RuleEnv,
  negKey: ResourceKey,
  neg: StoredResource,
  req: EndpointRequest,
  index: number,
): StoredEndpoint {
  if (req.port !== undefined && req.port !== null) {
    throw invalid(index, "port", JSON.stringify(req.port), "A network endpoint of type GCE_VM_IP has no port.");
  }
  const subnet = negSubnet(env, negKey, neg.properties);
  const subnetLink =
    subnet === undefined
      ? undefined
      : `${env.scopeLink(subnet.project, "region", subnet.region)}/subnetworks/${subnet.name}`;
  const ctx = env.refContext(negKey);
  let instance: StoredResource | undefined;
  if (req.instance !== undefined) {
    const link = normalizeRef(req.instance, { collection: "instances", scope: "zone" }, ctx);
    const key = env.keyOfPath(link);
    if (key !== undefined && key.scope !== negKey.scope) {
      throw invalid(
        index,
        "instance",
        req.instance,
        `Instance must be in zone '${negKey.scope}' of the network endpoint group.`,
      );
    }
    env.requireExists(link);
    instance = key === undefined ? undefined : env.store.peek(key);
  } else if (req.ipAddress !== undefined) {
    const ip = req.ipAddress;
    instance = env.store
      .ofKind("instances")
      .find(
        (r) =>
          r.project === negKey.project &&
          r.scope === negKey.scope &&
          nicInSubnet(r, subnetLink, neg.properties.network) !== undefined &&
          nicHolds(nicInSubnet(r, subnetLink, neg.properties.network) ?? {}, ip),
      );
  }
  if (instance === undefined) {
    throw invalid(
      index,
      "ipAddress",
      req.ipAddress ?? "",
      "The IP address must belong to a VM in the zone of the network endpoint group.",
    );
  }
  const nic = nicInSubnet(instance, subnetLink, neg.properties.network);
  const where = subnetLink ?? String(neg.properties.network);
  if (nic === undefined) {
    throw invalid(
      index,
      "instance",
      instance.name,
      `Instance has no network interface in '${where}', the subnetwork of the network endpoint group.`,
    );
  }
  const ip = req.ipAddress ?? (typeof nic.networkIP === "string" ? nic.networkIP : "");
  if (!nicHolds(nic, ip)) {
    throw invalid(
      index,
      "ipAddress",
      ip,
      `The IP address is neither the primary internal IP nor in an alias IP range of the network interface of instance '${instance.name}' in '${where}'.`,
    );
  }
  return { instance: env.selfLink(instance), ipAddress: ip };
}

/**
 * The endpoints of a NEG after an attach or a detach. Only GCE_VM_IP NEGs are modelled: an attach
 * or detach on another type is refused by the emulator (not by GCE). Attach: every endpoint is
 * checked (resolveEndpoint); an endpoint already attached as it is changes nothing; "A single IP
 * address cannot be referenced by more than one endpoint in a NEG" (zonal-neg-concepts), and a
 * GCE_VM_IP endpoint stands for the VM's interface, so a VM appears once per NEG: another IP of an
 * attached VM, or an attached IP under another VM, is refused. Detach: the endpoints named (by
 * instance and IP, or by IP alone) leave; one not attached changes nothing.
 */
export function changedEndpoints(
  env: RuleEnv,
  negKey: ResourceKey,
  neg: StoredResource,
  requests: readonly EndpointRequest[],
  attach: boolean,
): StoredEndpoint[] {
  const type = neg.properties.networkEndpointType;
  if (type !== "GCE_VM_IP") {
    throw new GceError(
      400,
      `The GCE emulator models the endpoints of GCE_VM_IP network endpoint groups only; '${env.path(negKey)}' is of type ${String(type)}.`,
      "invalid",
    );
  }
  const current = storedEndpoints(neg);
  if (!attach) {
    const ctx = env.refContext(negKey);
    const gone = (e: StoredEndpoint): boolean =>
      requests.some(
        (r) =>
          (r.ipAddress === undefined || r.ipAddress === e.ipAddress) &&
          (r.instance === undefined ||
            normalizeRef(r.instance, { collection: "instances", scope: "zone" }, ctx) === e.instance),
      );
    return current.filter((e) => !gone(e));
  }
  const next = [...current];
  requests.forEach((r, index) => {
    const e = resolveEndpoint(env, negKey, neg, r, index);
    const same = next.find((n) => n.instance === e.instance && n.ipAddress === e.ipAddress);
    if (same !== undefined) {
      return;
    }
    const clash = next.find((n) => n.instance === e.instance || n.ipAddress === e.ipAddress);
    if (clash !== undefined) {
      throw new GceError(
        400,
        `Invalid value for field 'networkEndpoints[${index}]': '${e.ipAddress}'. Network endpoint group '${negKey.name}' already has an endpoint of instance '${clash.instance.slice(clash.instance.lastIndexOf("/") + 1)}' with IP address '${clash.ipAddress}': a GCE_VM_IP network endpoint group holds one endpoint per VM and per IP address.`,
        "invalid",
      );
    }
    next.push(e);
  });
  return next;
}

export const NETWORK_ENDPOINT_GROUP_RULES: KindRules = {
  materialize(env, key, props, prev) {
    env.networks.requireNetwork(props.network);
    negSubnet(env, key, props);
    const kept: Json = prev === undefined ? [] : (prev.properties[NEG_ENDPOINTS] ?? []);
    props[NEG_ENDPOINTS] = kept;
    props.size = Array.isArray(kept) ? kept.length : 0;
  },
  usedBy: (link, user) =>
    user.kind === "backendServices" &&
    Array.isArray(user.properties.backends) &&
    user.properties.backends.some((b) => isJsonObject(b) && b.group === link),
};
