/**
 * What the Service stacks, as applied, point at in the cluster stack (its instance groups, the
 * legacy node health check, their deny rules): kept as a union over every Service stack, and folded
 * into the observation the cluster stack's desired state is computed from.
 */
import { observedReferences, type ObservedCloud } from "../model";

/** What Service stacks, as last applied, point at in the cluster stack. */
export interface ClusterReferences {
  /**
   * The instance groups, as instanceGroupKey: a zone for its first group, `<zone>/<name>` for a
   * numbered one (daemon/daemon.ts splits them into referencedZones and referencedGroups).
   */
  zones: string[];
  legacyHealthCheck: boolean;
  /**
   * The Services (`namespace/name`) whose stack holds a deny rule (`enableL4DenyFirewall`); on one
   * stack's references, its own Service when it does. Unset when none.
   */
  denyRules?: string[];
  /**
   * In the union only: some Service stack known at the start was not read yet (it may hold a deny
   * rule). Unset when none.
   */
  unread?: true;
}

/**
 * Pure: the observation with what the Service stacks point at. `clusterFirewallAboveDeny`: the
 * cluster stack recorded its node health-check firewall at 999; with Service stacks still unread
 * it stays there (denyRulesUnread). The deny fields only when they say something: the desired
 * state of a cluster that never had a deny rule is unchanged.
 */
export function withReferences(
  observed: ObservedCloud,
  references: ClusterReferences,
  clusterFirewallAboveDeny: boolean,
): ObservedCloud {
  const next: ObservedCloud = {
    ...observed,
    ...observedReferences(references.zones),
    legacyHealthCheckReferenced: references.legacyHealthCheck,
  };
  delete next.denyRulesHeld;
  delete next.denyRulesUnread;
  if (references.denyRules !== undefined && references.denyRules.length > 0) next.denyRulesHeld = references.denyRules;
  if (references.unread === true && clusterFirewallAboveDeny) next.denyRulesUnread = true;
  return next;
}

/**
 * The union of what Service stacks point at, kept as counts: a stack's change costs its own zones,
 * not a pass over every stack (after a restart every stack reports once: O(stacks), not O(stacks²)).
 */
export class ReferenceUnion {
  private readonly zones = new Map<string, number>();
  private readonly denyRules = new Map<string, number>();
  private legacyHealthCheck = 0;

  replace(before: ClusterReferences | undefined, after: ClusterReferences | undefined): void {
    if (before !== undefined) this.count(before, -1);
    if (after !== undefined) this.count(after, 1);
  }

  /** Zones and deny rules sorted. */
  union(): ClusterReferences {
    const denyRules = [...this.denyRules.keys()].sort();
    return {
      zones: [...this.zones.keys()].sort(),
      legacyHealthCheck: this.legacyHealthCheck > 0,
      ...(denyRules.length > 0 ? { denyRules } : {}),
    };
  }

  private count(references: ClusterReferences, delta: 1 | -1): void {
    countEach(this.zones, references.zones, delta);
    countEach(this.denyRules, references.denyRules ?? [], delta);
    if (references.legacyHealthCheck) this.legacyHealthCheck += delta;
  }
}

function countEach(counts: Map<string, number>, keys: readonly string[], delta: 1 | -1): void {
  for (const key of new Set(keys)) {
    const next = (counts.get(key) ?? 0) + delta;
    if (next > 0) counts.set(key, next);
    else counts.delete(key);
  }
}
