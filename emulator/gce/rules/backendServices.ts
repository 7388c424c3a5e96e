// The rules of regional backend services: their health check's scope, the references that must
// exist, the balancing mode of a passthrough backend, and who uses them.

import { GceError } from "../errors";
import { isJsonObject, type JsonObject } from "../json";
import { normalizeRef, parseResourcePath, type RefTarget } from "../kinds";
import type { KindRules, RuleEnv } from "./rules";
import { requireUrl } from "./urls";

/**
 * An EXTERNAL regional backend service takes a regional health check
 * (load-balancing/docs/network/networklb-backend-service: "regional health check").
 */
// An INTERNAL one takes a global or a regional health check (the backend service of an internal
// passthrough Network Load Balancer accepts either: cloud.google.com/load-balancing/docs/internal,
// "Health checks", and load-balancing/docs/health-check-concepts, the health-check scope per load
// balancer), so only the EXTERNAL scheme is checked here.
function requireRegionalCheck(props: JsonObject): void {
  const link = props.healthChecks;
  if ((props.loadBalancingScheme ?? "INTERNAL") !== "EXTERNAL" || typeof link !== "string") {
    return;
  }
  if (parseResourcePath(link)?.scopeType !== "region") {
    throw new GceError(
      400,
      `Invalid value for field 'resource.healthChecks[0]': '${link}'. A regional backend service with loadBalancingScheme EXTERNAL requires a regional health check.`,
      "invalid",
    );
  }
}

const INSTANCE_GROUP: RefTarget = { collection: "instanceGroups", scope: "zone" };
const NETWORK_ENDPOINT_GROUP: RefTarget = { collection: "networkEndpointGroups", scope: "zone" };

/** A backend's group reference: a NEG when its path names one, else an instance group (a bare name too). */
function groupTarget(group: string): RefTarget {
  return /(^|\/)networkEndpointGroups\//.test(group) ? NETWORK_ENDPOINT_GROUP : INSTANCE_GROUP;
}

/**
 * The kinds of a backend service's backends:
 * - "For a given backend service, all backends must either be instance groups or network endpoint
 *   groups. ... you cannot associate instance groups and network endpoint groups with the same
 *   backend service" (cloud.google.com/load-balancing/docs/backend-service, Backends);
 * - a passthrough backend service (INTERNAL, EXTERNAL) takes zonal NEGs of type GCE_VM_IP only
 *   ("Internal passthrough Network Load Balancers only support zonal NEGs with GCE_VM_IP
 *   endpoints", load-balancing/docs/internal/setting-up-internal-zonal-neg; "Passthrough Network
 *   Load Balancers support zonal NEGs with GCE_VM_IP endpoints", load-balancing/docs/negs/zonal-neg-concepts),
 *   and GCE_VM_IP NEGs serve passthrough load balancers only (zonal-neg-concepts lists them as the
 *   only load balancers of GCE_VM_IP zonal NEGs).
 * Messages are the emulator's: GCE's exact texts are not documented.
 */
function requireBackendKinds(env: RuleEnv, props: JsonObject): void {
  if (!Array.isArray(props.backends)) {
    return;
  }
  const groups = props.backends.map((b) => (isJsonObject(b) && typeof b.group === "string" ? b.group : ""));
  const negs = groups.map((g) => parseResourcePath(g)?.collection === "networkEndpointGroups");
  const firstNeg = negs.indexOf(true);
  const firstGroup = negs.findIndex((n, i) => !n && groups[i] !== "");
  if (firstNeg >= 0 && firstGroup >= 0) {
    const at = Math.max(firstNeg, firstGroup);
    throw new GceError(
      400,
      `Invalid value for field 'resource.backends[${at}].group': '${groups[at] ?? ""}'. A backend service's backends must all be instance groups or all be network endpoint groups.`,
      "invalid",
    );
  }
  const passthrough = ["INTERNAL", "EXTERNAL"].includes(String(props.loadBalancingScheme ?? "INTERNAL"));
  groups.forEach((group, i) => {
    if (!negs[i]) {
      return;
    }
    const key = env.keyOfPath(group);
    const type = key === undefined ? undefined : env.store.peek(key)?.properties.networkEndpointType;
    if (type === undefined || (type === "GCE_VM_IP") === passthrough) {
      return;
    }
    const scheme = String(props.loadBalancingScheme ?? "INTERNAL");
    throw new GceError(
      400,
      `Invalid value for field 'resource.backends[${i}].group': '${group}'. ${
        passthrough
          ? `A backend service with loadBalancingScheme ${scheme} takes network endpoint groups of type GCE_VM_IP only, not ${String(type)}.`
          : `A network endpoint group of type GCE_VM_IP is a backend of a passthrough (INTERNAL or EXTERNAL) backend service only, not of one with loadBalancingScheme ${scheme}.`
      }`,
      "invalid",
    );
  });
}

export const BACKEND_SERVICE_RULES: KindRules = {
  requireUrls(props) {
    requireUrl("healthChecks[0]", props.healthChecks);
    if (Array.isArray(props.backends)) {
      props.backends.forEach((b, i) => requireUrl(`backends[${i}].group`, isJsonObject(b) ? b.group : undefined));
    }
  },
  normalizeField(field, value, ctx) {
    if (field !== "backends" || !Array.isArray(value)) {
      return undefined;
    }
    return value.map((b) =>
      isJsonObject(b) && typeof b.group === "string"
        ? { ...b, group: normalizeRef(b.group, groupTarget(b.group), ctx) }
        : b,
    );
  },
  materialize(env, _key, props) {
    requireRegionalCheck(props);
    env.requireExists(props.healthChecks);
    env.networks.requireNetwork(props.network);
    if (Array.isArray(props.backends)) {
      for (const b of props.backends) {
        if (isJsonObject(b)) {
          env.requireExists(b.group);
          // A passthrough backend service's backends balance by CONNECTION, the mode a backend
          // that names none gets (kinds.ts validateInputs, backendServices: the sources).
          if (b.balancingMode === undefined && ["INTERNAL", "EXTERNAL"].includes(String(props.loadBalancingScheme))) {
            b.balancingMode = "CONNECTION";
          }
        }
      }
    }
    requireBackendKinds(env, props);
  },
  usedBy: (link, user) => user.kind === "forwardingRules" && user.properties.backendService === link,
};
