/**
 * Which changes of a Service may replace its forwarding rules. GCE cannot change a forwarding
 * rule's IP protocol, ports, scheme, network tier or subnetwork in place (Compute API reference,
 * forwardingRules: only `target`, `allowGlobalAccess`, `labels` and a few others are updatable;
 * terraform-provider-google resource_compute_forwarding_rule.go marks the rest ForceNew), and dccm
 * replaces a rule with the backend service or target pool it points at (components/serviceLoadBalancer.ts
 * `replaceWith`): a backend service on a new protocol, a target pool on a new session affinity or
 * health check. The shape is every such field; two runs of equal shape replace no rule. It errs
 * on the side of "may replace": a change it counts that GCE makes in place costs one reservation
 * of the IP for one run, never the IP (controllers/service/addressPins.ts).
 */
import type { ServiceDesired } from "./types";

export function forwardingRuleShape(service: ServiceDesired): string {
  return JSON.stringify({
    scheme: service.scheme,
    networkTier: service.networkTier,
    subnetwork: service.subnetwork ?? null,
    backend: service.backend,
    frontends: service.frontends.map((frontend) => [frontend.name, frontend.protocol, frontend.portSelection]),
    targetPool:
      service.backend === "target-pool"
        ? [service.sessionAffinity, service.healthCheck.kind, service.healthCheck.spec.name]
        : null,
    ipv6: service.ipv6 !== undefined ? [service.ipv6.subnetwork, service.ipv6Only === true] : null,
  });
}

/** Pure: whether `<lb>` is the Service's only while a run holds it (no user IP, no life-long reservation, IPv4 served). */
export function reservesTransiently(service: ServiceDesired): boolean {
  return service.userIP === undefined && service.reserveAddress !== true && service.ipv6Only !== true;
}
