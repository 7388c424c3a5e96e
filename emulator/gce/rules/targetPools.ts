// The rules of target pools: their legacy health check, the references that must exist, and who
// uses them.

import { GceError } from "../errors";
import type { Json } from "../json";
import { parseResourcePath } from "../kinds";
import type { KindRules } from "./rules";

/** Target pools take legacy HTTP health checks only (targetPools resource reference, healthChecks). */
function requireLegacyCheck(link: Json | undefined): void {
  if (typeof link === "string" && parseResourcePath(link)?.collection !== "httpHealthChecks") {
    throw new GceError(
      400,
      `Invalid value for field 'resource.healthChecks[0]': '${link}'. A target pool accepts only legacy HTTP health checks (httpHealthChecks).`,
      "invalid",
    );
  }
}

export const TARGET_POOL_RULES: KindRules = {
  materialize(env, _key, props) {
    // Instances of a target pool need not exist: GCE stores the URLs and the provider
    // accepts any (resource_compute_target_pool.go convertInstancesToUrls only builds URLs).
    env.requireExists(props.healthChecks);
    env.requireExists(props.backupPool);
    requireLegacyCheck(props.healthChecks);
  },
  usedBy: (link, user) =>
    (user.kind === "forwardingRules" && user.properties.target === link) ||
    (user.kind === "targetPools" && user.properties.backupPool === link),
};
