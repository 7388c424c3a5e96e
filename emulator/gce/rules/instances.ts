// The rules of instances (seeded by tests, see instances.ts): what GCE does to the groups of a
// deleted VM.

import type { JsonObject } from "../json";
import { keyString, resourceFingerprint } from "../store";
import type { KindRules } from "./rules";

export const INSTANCE_RULES: KindRules = {
  /**
   * A deleted VM leaves its unmanaged instance groups: the group lists only VMs that exist
   * (instanceGroups.listInstances lists "the instances in the specified instance group"; a group
   * is a collection of VMs, cloud.google.com/compute/docs/instance-groups/creating-groups-of-unmanaged-instances),
   * as GCE is seen doing (no documentation sentence states it verbatim). The group's size follows;
   * the change is GCE's own, not an update anyone made, so it is not in the history.
   */
  afterRemove(env, instance) {
    const gone = keyString(instance);
    for (const group of env.store.ofKind("instanceGroups")) {
      const members = group.properties.instances;
      if (!Array.isArray(members)) {
        continue;
      }
      const kept = members.filter((m) => {
        const mk = typeof m === "string" ? env.keyOfPath(m) : undefined;
        return mk === undefined || keyString(mk) !== gone;
      });
      if (kept.length !== members.length) {
        const properties: JsonObject = { ...group.properties, instances: kept, size: kept.length };
        properties.fingerprint = resourceFingerprint(properties);
        env.store.put(group, properties);
      }
    }
  },
};
