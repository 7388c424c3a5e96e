// The rules of health checks (regional, global and legacy HTTP): the type GCE derives from the
// check's block, and who uses them.

import type { JsonObject } from "../json";
import { healthCheckType } from "../kinds";
import type { ResourceKey } from "../store";
import type { KindRules, RuleEnv } from "./rules";

const usedBy: KindRules["usedBy"] = (link, user) =>
  (user.kind === "backendServices" || user.kind === "targetPools") && user.properties.healthChecks === link;

function materialize(_env: RuleEnv, _key: ResourceKey, props: JsonObject): void {
  const t = healthCheckType(props);
  if (t !== undefined) {
    props.type = t;
  }
}

export const HEALTH_CHECK_RULES: KindRules = { materialize, usedBy };
export const HTTP_HEALTH_CHECK_RULES: KindRules = { usedBy };
