/**
 * The instance groups of one zone when its backend instances exceed what one group holds
 * (docs/guides/services.md#service-semantics, "Instance groups"). Pure.
 */
import { instanceGroupKey } from "./names";
import type { ServiceDesired } from "./types";

/** Every group of a Service's backend zones, by zone then number (ServiceDesired.backendGroups), as instanceGroupKey. */
export function backendGroupKeys(service: ServiceDesired): string[] {
  return service.backendGroups === undefined ? [...service.backendZones] : service.backendGroups.map(instanceGroupKey);
}

/**
 * The groups applied Service stacks name (instanceGroupKey each), as the model observes them: zones
 * whose first group is named, and `<zone>/<name>` of the numbered ones.
 */
export function observedReferences(keys: readonly string[]): { referencedZones: string[]; referencedGroups: string[] } {
  const sorted = [...new Set(keys)].sort();
  return {
    referencedZones: sorted.filter((key) => !key.includes("/")),
    referencedGroups: sorted.filter((key) => key.includes("/")),
  };
}

export interface ZoneGroups {
  /** The zone's group number (1: `k8s-ig--<clusterId>`) → its instance names, sorted. */
  readonly groups: ReadonlyMap<number, readonly string[]>;
}

export interface AssignInput {
  /** The zone's backend instance names. */
  instances: readonly string[];
  /** What the cluster stack last applied: group number → instance names. */
  previous: ReadonlyMap<number, readonly string[]>;
  /** Instances per group, at least 1. */
  limit: number;
  /** Group numbers an applied Service stack still names: declared even when empty. */
  referenced: ReadonlySet<number>;
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * No churn: an instance stays in the group it was in (a group over `limit`, after the limit was
 * lowered, keeps its first `limit` names); the others, by name, fill the lowest-numbered group with
 * room. Declared: the first group whenever the zone has an instance or is referenced, a numbered
 * one while it has an instance or is referenced; an emptied numbered group is dropped.
 */
export function assignGroups(input: AssignInput): ZoneGroups {
  const limit = Math.max(1, Math.floor(input.limit));
  const present = new Set(input.instances);
  const placed = new Set<string>();
  const groups = new Map<number, string[]>();
  for (const index of [...input.previous.keys()].sort((a, b) => a - b)) {
    const kept = [...new Set(input.previous.get(index))]
      .filter((name) => present.has(name) && !placed.has(name))
      .sort(compareText)
      .slice(0, limit);
    for (const name of kept) placed.add(name);
    if (kept.length > 0) groups.set(index, kept);
  }
  const newcomers = [...present].filter((name) => !placed.has(name)).sort(compareText);
  for (let index = 1, next = 0; next < newcomers.length; index++) {
    const members = groups.get(index) ?? [];
    const room = limit - members.length;
    if (room <= 0) continue;
    members.push(...newcomers.slice(next, next + room));
    next += room;
    groups.set(index, members.sort(compareText));
  }
  for (const index of input.referenced) if (!groups.has(index)) groups.set(index, []);
  if (groups.size > 0 && !groups.has(1)) groups.set(1, []);
  if (present.size === 0 && !input.referenced.has(1)) groups.delete(1);
  const sorted = new Map([...groups.entries()].sort(([a], [b]) => a - b));
  return { groups: sorted };
}
