/**
 * What exists in GCE for adoption: one listing of the collections dccm uses (gce/listing.ts, the
 * same calls as the leak check), keyed by Pulumi resource ID.
 */
import { listCollections, type LeakCompute } from "../gce/listing";
import { projectOfKind, resourcePath, type Projects } from "../gce/resources";
import type { CallOptions } from "../gce";
import type { GceItem, Inventory } from "./plan";

export async function listInventory(
  compute: LeakCompute,
  projects: Projects,
  region: string,
  opts?: CallOptions,
): Promise<Inventory> {
  const inventory = new Map<string, GceItem>();
  for (const { kind, scope, item } of await listCollections(compute, projects, region, opts)) {
    if (typeof item.name !== "string") continue;
    const id = resourcePath(projectOfKind(kind, projects), { kind, scope, name: item.name });
    inventory.set(id, { id, properties: item });
  }
  // The stock CCM's internal load balancers use global health checks, which dccm does not: listed
  // only to be reported as left in place.
  const globalChecks = `projects/${projects.project}/global/healthChecks`;
  for (const item of await compute.listCollection("healthChecks.list", globalChecks, opts)) {
    if (typeof item !== "object" || item === null || typeof (item as Record<string, unknown>).name !== "string")
      continue;
    const id = `${globalChecks}/${String((item as Record<string, unknown>).name)}`;
    inventory.set(id, { id, properties: item as Record<string, unknown> });
  }
  return inventory;
}
