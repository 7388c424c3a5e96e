/**
 * Adoption of the stock GCE CCM's load balancers and routes (docs/explanation/architecture.md "Adoption"), the
 * pure part: from what Compute lists and what each stack already holds, which resources each
 * stack's first `up` imports, which ephemeral IP is promoted to the static address dccm declares
 * first (only for a Service that reserves `<lb>` for life: the others keep the ephemeral IP), which external Service stays on its target pool, and what the stock CCM made under names
 * dccm does not use. The stock names are dccm's own (docs/explanation/architecture.md "Names"), so a resource
 * found under the name a stack declares is the one that stack adopts.
 */
import { declaredResourceIds, globalResourceId, regionalResourceId } from "../gce/ids";

import {
  ANNOTATION_BACKEND,
  CLUSTER_STACK,
  networkProjectOf,
  type DesiredState,
  type NetworkTier,
  type ServiceDesired,
  type ServiceInfo,
  type Scope,
} from "../model";

/** One GCE resource as Compute lists it, under its Pulumi resource ID (gce/ids.ts). */
export interface GceItem {
  id: string;
  /** The Compute resource (REST field names: `IPAddress`, `target`, …). */
  properties: Record<string, unknown>;
}

export type Inventory = ReadonlyMap<string, GceItem>;

/** An in-use ephemeral IP made a static address of the name and shape dccm declares (addresses.insert). */
export interface AddressPromotion {
  name: string;
  region: string;
  ip: string;
  addressType: "EXTERNAL" | "INTERNAL";
  networkTier?: NetworkTier;
  subnetwork?: string;
  description: string;
}

export interface StackAdoption {
  stack: string;
  /** `<namespace>/<name>`; absent for the cluster stack. */
  service?: string;
  /** Pulumi resource IDs the stack's next up imports, sorted (the promoted address not among them: it does not exist yet). */
  imports: string[];
  promotion?: AddressPromotion;
  /**
   * A Service that reserves no address at rest: the reservation its stock forwarding rule's
   * ephemeral IP needs if the adoption replaces the rule (`--allow-replace`). The stack then holds
   * `<lb>` until the daemon's next run of it releases it (controllers/service/addressPins.ts).
   */
  replacementPin?: AddressPromotion;
  /** Stock resources of this Service or cluster under names dccm does not use: left in place, reported. */
  leftovers: string[];
}

/**
 * Finalizers nothing removes once the stock CCM is gone: ILBFinalizerV1 (cloud-provider-gcp
 * gce_loadbalancer_internal.go); `l4-netlb-v1` is not cloud-provider-gcp's (its external path adds
 * none of its own) but GKE's, and would block the deletion of a Service of a cluster that came from
 * GKE just the same.
 */
export const STOCK_FINALIZERS = ["gke.networking.io/l4-ilb-v1", "gke.networking.io/l4-netlb-v1"] as const;

const TARGET_POOL_LINK = /\/targetPools\/[^/]+$/;

function text(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

function regional(desired: DesiredState, collection: string, name: string): string {
  return regionalResourceId(desired.cluster.project, desired.cluster.region, collection, name);
}

function global(desired: DesiredState, collection: string, name: string): string {
  return globalResourceId(desired.cluster.project, collection, name);
}

/**
 * A firewall's ID: in the Shared VPC host when there is one, where a stock CCM run with gce.conf
 * `network-project-id` made it too (cloud-provider-gcp v0.28.2 support.go: Firewalls calls go to
 * NetworkProjectID).
 */
function firewallId(desired: DesiredState, name: string): string {
  return globalResourceId(networkProjectOf(desired.cluster), "firewalls", name);
}

/**
 * Services whose load balancer the stock CCM serves from a target pool and that dccm would move to
 * a backend service by default (config `backendMode`, no `dccm.io/backend` annotation): adoption
 * pins them to `target-pool` with the annotation, so that adopting never replaces a forwarding
 * rule. `dccm adopt --to backend-service` moves them, one at a time.
 */
export function servicesToPinOnTargetPool(
  desired: DesiredState,
  services: readonly ServiceInfo[],
  inventory: Inventory,
): string[] {
  const annotated = new Set(
    services
      .filter((info) => info.annotations[ANNOTATION_BACKEND] !== undefined)
      .map((info) => `${info.namespace}/${info.name}`),
  );
  return desired.services
    .filter(
      (service) =>
        service.scheme === "EXTERNAL" && service.backend === "backend-service" && !annotated.has(service.key),
    )
    .filter((service) => {
      const rule = inventory.get(regional(desired, "forwardingRules", service.lbName));
      return rule !== undefined && TARGET_POOL_LINK.test(text(rule.properties.target) ?? "");
    })
    .map((service) => service.key);
}

/** The Services with the annotation that keeps each on its target pool (what the adoption writes first). */
export function withTargetPoolPins(services: readonly ServiceInfo[], pinned: readonly string[]): ServiceInfo[] {
  const keys = new Set(pinned);
  return services.map((info) =>
    keys.has(`${info.namespace}/${info.name}`)
      ? { ...info, annotations: { ...info.annotations, [ANNOTATION_BACKEND]: "target-pool" } }
      : info,
  );
}

function promotionFor(
  desired: DesiredState,
  service: ServiceDesired,
  inventory: Inventory,
): AddressPromotion | undefined {
  // A Service that reserves no address at rest keeps the stock rule's ephemeral IP, as the stock CCM did.
  if (service.reserveAddress !== true) return undefined;
  return ephemeralPromotion(desired, service, inventory);
}

/** The promotion of the stock rule's ephemeral IP to `<lb>`: none with a user IP, an existing `<lb>`, or no rule. */
function ephemeralPromotion(
  desired: DesiredState,
  service: ServiceDesired,
  inventory: Inventory,
): AddressPromotion | undefined {
  if (service.userIP !== undefined || inventory.has(regional(desired, "addresses", service.lbName))) return undefined;
  const rule = inventory.get(regional(desired, "forwardingRules", service.lbName));
  const ip = text(rule?.properties.IPAddress);
  if (ip === undefined) return undefined;
  const internal = service.scheme === "INTERNAL";
  return {
    name: service.lbName,
    region: desired.cluster.region,
    ip,
    addressType: service.scheme,
    ...(internal
      ? service.subnetwork !== undefined
        ? { subnetwork: service.subnetwork }
        : {}
      : { networkTier: service.networkTier }),
    description: service.description,
  };
}

/** What the stock CCM names differently from dccm (cloud-provider-gcp gce_loadbalancer_naming.go), for one Service. */
function stockOnlyIds(desired: DesiredState, service: ServiceDesired): string[] {
  if (service.scheme !== "INTERNAL") return [];
  const { clusterId } = desired.cluster;
  const dedicated = service.healthCheck.kind === "dedicated";
  const name = dedicated ? service.lbName : `k8s-${clusterId}-node`;
  // Internal: health-check firewall `<lb>-hc` / `k8s-<clusterId>-node-hc` (makeHealthCheckFirewallName) and a global HealthCheck.
  return [firewallId(desired, `${name}-hc`), global(desired, "healthChecks", name)];
}

/**
 * Pure: the adoption of every stack the desired state declares that exists in GCE (in part or in
 * whole) and is not in the stack yet. `inState(stack)`: the resource IDs the stack already holds
 * (empty for a stack never applied); those are never imported again.
 */
export function planAdoption(
  desired: DesiredState,
  inventory: Inventory,
  inState: (stack: string) => ReadonlySet<string>,
): StackAdoption[] {
  const plans: StackAdoption[] = [];
  const scopes: { stack: string; scope: Scope; service?: ServiceDesired }[] = [
    { stack: CLUSTER_STACK, scope: { kind: "cluster" } },
    ...desired.services.map((service) => ({
      stack: service.stack,
      scope: { kind: "service" as const, namespace: service.namespace, name: service.name },
      service,
    })),
  ];
  for (const { stack, scope, service } of scopes) {
    const held = inState(stack);
    const promotion = service === undefined || held.size > 0 ? undefined : promotionFor(desired, service, inventory);
    const replacementPin =
      service === undefined || held.size > 0 || promotion !== undefined || service.ipv6Only === true
        ? undefined
        : ephemeralPromotion(desired, service, inventory);
    // A promoted address is imported once it exists (the executor adds it after addresses.insert).
    const imports = declaredResourceIds(desired, scope).filter((id) => !held.has(id) && inventory.has(id));
    const leftovers = service === undefined ? [] : stockOnlyIds(desired, service).filter((id) => inventory.has(id));
    if (imports.length === 0 && promotion === undefined && leftovers.length === 0) continue;
    plans.push({
      stack,
      ...(service !== undefined ? { service: service.key } : {}),
      imports: [...new Set(imports)].sort(),
      ...(promotion !== undefined ? { promotion } : {}),
      ...(replacementPin !== undefined ? { replacementPin } : {}),
      leftovers: leftovers.sort(),
    });
  }
  return plans;
}

/** The Pulumi resource ID of the address a promotion creates. */
export function promotedAddressId(desired: DesiredState, promotion: AddressPromotion): string {
  return regional(desired, "addresses", promotion.name);
}

/**
 * For a preview before the promotion: the forwarding rules of a promoted address, with the IP they
 * will take from it.
 */
export function previewIps(desired: DesiredState, adoption: StackAdoption): Map<string, string> {
  const ips = new Map<string, string>();
  const service = desired.services.find((candidate) => candidate.key === adoption.service);
  if (adoption.promotion === undefined || service === undefined) return ips;
  for (const frontend of service.frontends)
    ips.set(regional(desired, "forwardingRules", frontend.name), adoption.promotion.ip);
  // The IPv4 firewalls towards the promoted address (destinationRanges); never the IPv6 ones.
  const towardsAddress = [service.firewall, service.healthCheckFirewall, service.denyFirewall].filter(
    (spec) => spec !== undefined && spec.destination?.kind === "address",
  );
  for (const spec of towardsAddress)
    if (spec !== undefined) ips.set(firewallId(desired, spec.name), adoption.promotion.ip);
  return ips;
}
