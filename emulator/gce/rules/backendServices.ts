// The rules of regional backend services: their health check's scope, the references that must
// exist, the balancing mode of a passthrough backend, and who uses them.

import { GceError } from "../errors";
import { isJsonObject, type JsonObject } from "../json";
import { normalizeRef, parseResourcePath, type RefTarget } from "../kinds";
import type { KindRules } from "./rules";
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
      isJsonObject(b) && typeof b.group === "string" ? { ...b, group: normalizeRef(b.group, INSTANCE_GROUP, ctx) } : b,
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
  },
  usedBy: (link, user) => user.kind === "forwardingRules" && user.properties.backendService === link,
};
