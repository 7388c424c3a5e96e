// The fixtures the GCE emulator's face tests share: names, tokens and a load balancer's resources.

import { type GceEmulator, GceError } from "../index";
import { type Json, toJson } from "../json";

export const PROJECT = "dccm-test";
export const REGION = "us-central1";
export const NOW = "2024-01-02T03:04:05.000Z";
export const ADDRESS = "gcp:compute/address:Address";
export const FORWARDING_RULE = "gcp:compute/forwardingRule:ForwardingRule";
export const BACKEND_SERVICE = "gcp:compute/regionBackendService:RegionBackendService";
export const HEALTH_CHECK = "gcp:compute/regionHealthCheck:RegionHealthCheck";
export const HTTP_HEALTH_CHECK = "gcp:compute/httpHealthCheck:HttpHealthCheck";
export const TARGET_POOL = "gcp:compute/targetPool:TargetPool";
export const INSTANCE_GROUP = "gcp:compute/instanceGroup:InstanceGroup";
export const FIREWALL = "gcp:compute/firewall:Firewall";
export const ROUTE = "gcp:compute/route:Route";
/** fingerprint of `{}` (the labelFingerprint of a resource without labels) */
export const EMPTY_LABELS_FINGERPRINT = "RBNvo1WzZ4o=";
export const NAME_REASON = (name: string): string =>
  `Invalid value for field 'resource.name': '${name}'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'`;

export const regional = { project: PROJECT, region: REGION };

/** Runs `fn`, expecting a GceError; returns it. */
export function gceError(fn: () => unknown): GceError {
  try {
    fn();
  } catch (e) {
    if (e instanceof GceError) {
      return e;
    }
    throw new Error("expected a GceError", { cause: e });
  }
  throw new Error("expected a GceError, nothing was thrown");
}

export async function getJson(url: string, init?: RequestInit): Promise<{ status: number; body: Json }> {
  const res = await fetch(url, init);
  return { status: res.status, body: toJson(JSON.parse(await res.text()), url) };
}

/** An address, a health check, a backend service and a forwarding rule, like one internal LB. */
export function createLoadBalancer(gce: GceEmulator, name: string): void {
  gce.state.create(ADDRESS, { ...regional, name, addressType: "INTERNAL" });
  gce.state.create(HEALTH_CHECK, { ...regional, name, httpHealthCheck: { port: 10256, requestPath: "/healthz" } });
  gce.state.create(BACKEND_SERVICE, {
    ...regional,
    name,
    healthChecks: `regions/${REGION}/healthChecks/${name}`,
    loadBalancingScheme: "INTERNAL",
    protocol: "TCP",
  });
  gce.state.create(FORWARDING_RULE, {
    ...regional,
    name,
    ipAddress: `projects/${PROJECT}/regions/${REGION}/addresses/${name}`,
    backendService: `regions/${REGION}/backendServices/${name}`,
    loadBalancingScheme: "INTERNAL",
    ports: ["80"],
  });
}
