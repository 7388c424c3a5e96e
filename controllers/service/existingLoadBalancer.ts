/**
 * The guard before a Service stack's first `up`: when GCE already has resources under the names
 * of that Service's load balancer and the stack holds none, the `up` would create beside them (a new
 * address, so a new IP, while the stock CCM's forwarding rule keeps the old one) and then fail on
 * the first name that exists (409). Once its address is in the stack, `dccm adopt` can no longer
 * keep the IP without a replace. So nothing is created: the Service is told to be adopted.
 *
 * Pure: the names to look up and the decision (table-tested). The executor (`ExistingResources`)
 * makes one GET per name of this Service's load balancer, and only before its first up.
 */
import { loadBalancerFamily } from "../../leaks/classify";
import { exists, regionalOrGlobalScope, type LeakCompute } from "../../gce/listing";
import { projectOfKind, resourcePath, type Projects } from "../../gce/resources";
import type { CallOptions } from "../../gce";
import { resourceId, type ResourceKind } from "../../gce/resources";

/** The event reason the held Service gets. */
export const LOAD_BALANCER_EXISTS = "LoadBalancerExists";

/** A GCE resource under one of the load balancer's names. */
export interface NamedResource {
  kind: ResourceKind;
  /** The region, or `global`. */
  scope: string;
  name: string;
  /** The Compute API path, which is also the resource's Pulumi ID (what a stack holds). */
  id: string;
}

/** Pure: every resource the load balancer `lbName` can have (leaks/classify.ts loadBalancerFamily), located. */
export function loadBalancerResources(projects: Projects, region: string, lbName: string): NamedResource[] {
  return loadBalancerFamily(lbName).flatMap(([kind, name]) => {
    const scope = regionalOrGlobalScope(kind, region);
    if (scope === undefined) return [];
    return [{ kind, scope, name, id: resourcePath(projectOfKind(kind, projects), { kind, scope, name }) }];
  });
}

export type FirstUpDecision =
  | { kind: "proceed" }
  /** `resources`: `kind/scope/name` of each resource GCE has and no stack holds, sorted. */
  | { kind: "hold"; resources: string[] };

/**
 * Pure. `occupied`: the load balancer's resources GCE has; `held`: the IDs of the resources the
 * Service's stack holds. A stack holding anything is past its first up (the guard is off: an up
 * cut short holds its provider from its first step on, and the next up recovers the creates it left pending; what the
 * stack lacks is the engine's to create); a stack holding nothing proceeds only when GCE has nothing
 * under the names.
 */
export function decideFirstUp(occupied: readonly NamedResource[], held: ReadonlySet<string>): FirstUpDecision {
  if (held.size > 0) return { kind: "proceed" };
  const resources = occupied.map(resourceId).sort();
  return resources.length === 0 ? { kind: "proceed" } : { kind: "hold", resources };
}

/** Pure: the Warning the held Service gets (one per retry, counted by the event recorder). */
export function loadBalancerExistsMessage(resources: readonly string[]): string {
  return (
    `Not created: GCE already has ${resources.join(", ")} under this load balancer's names, held by no dccm stack ` +
    "(the stock CCM's?); adopt them with their IP: run dccm adopt, or restart dccm daemon with --adopt"
  );
}

/** The reconcile's error while held: the runtime logs it and retries with the queue's backoff. */
export class LoadBalancerExistsError extends Error {
  constructor(readonly resources: readonly string[]) {
    super(
      `GCE already has resources under the load balancer's names that no stack holds (${resources.join(", ")}): run dccm adopt, or restart dccm daemon with --adopt`,
    );
    this.name = "LoadBalancerExistsError";
  }
}

/** What the guard asks GCE (the executor's only Compute calls). */
export interface ExistingResources {
  /** The load balancer's resources GCE has: one GET per name, all at once. */
  occupied(lbName: string, opts?: CallOptions): Promise<NamedResource[]>;
}

export function existingResources(
  compute: Pick<LeakCompute, "getResource">,
  projects: Projects,
  region: string,
): ExistingResources {
  return {
    async occupied(lbName, opts) {
      const candidates = loadBalancerResources(projects, region, lbName);
      const found = await Promise.all(
        candidates.map((resource) => exists(compute, projects, { ...resource, description: "" }, opts)),
      );
      return candidates.filter((_, index) => found[index]);
    },
  };
}
