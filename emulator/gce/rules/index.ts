// The one table of every kind's rules: a kind added to kinds.ts (GceKind) needs its row here.

import type { JsonObject } from "../json";
import type { GceKind } from "../kinds";
import { ADDRESS_RULES } from "./addresses";
import { BACKEND_SERVICE_RULES } from "./backendServices";
import { FIREWALL_RULES } from "./firewalls";
import { FORWARDING_RULE_RULES } from "./forwardingRules";
import { HEALTH_CHECK_RULES, HTTP_HEALTH_CHECK_RULES } from "./healthChecks";
import { INSTANCE_GROUP_RULES } from "./instanceGroups";
import { INSTANCE_RULES } from "./instances";
import { NETWORK_ENDPOINT_GROUP_RULES } from "./networkEndpointGroups";
import { ROUTE_RULES } from "./routes";
import type { KindRules } from "./rules";
import { TARGET_POOL_RULES } from "./targetPools";

export type { KindRules, RuleEnv } from "./rules";
export { INSTANCE_GROUP_MAX_INSTANCES } from "./instanceGroups";
export {
  changedEndpoints,
  type EndpointRequest,
  NEG_ENDPOINTS,
  type StoredEndpoint,
  storedEndpoints,
} from "./networkEndpointGroups";

const RULES: { readonly [K in GceKind]: KindRules } = {
  addresses: ADDRESS_RULES,
  forwardingRules: FORWARDING_RULE_RULES,
  backendServices: BACKEND_SERVICE_RULES,
  targetPools: TARGET_POOL_RULES,
  healthChecks: HEALTH_CHECK_RULES,
  globalHealthChecks: HEALTH_CHECK_RULES,
  httpHealthChecks: HTTP_HEALTH_CHECK_RULES,
  instanceGroups: INSTANCE_GROUP_RULES,
  networkEndpointGroups: NETWORK_ENDPOINT_GROUP_RULES,
  firewalls: FIREWALL_RULES,
  routes: ROUTE_RULES,
  instances: INSTANCE_RULES,
};

export function rulesOf(kind: GceKind): KindRules {
  return RULES[kind];
}

/**
 * Rewrites input shorthands that depend on a sibling input into a standalone form: a route's
 * bare `nextHopInstance` name plus `nextHopInstanceZone` becomes `zone/name`.
 */
export function expandShorthands(kind: GceKind, props: JsonObject): JsonObject {
  return rulesOf(kind).expandShorthands?.(props) ?? props;
}
