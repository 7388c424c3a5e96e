/**
 * What exists in GCE for adoption: one listing of the collections dccm uses (leaks/gce.ts, the
 * same calls as the leak check), keyed by Pulumi resource ID.
 */
import { resourcePath, listCollections, type LeakCompute } from "../leaks/gce";
import type { CallOptions } from "../nodes/compute";
import type { GceItem, Inventory } from "./plan";

export async function listInventory(compute: LeakCompute, project: string, region: string, opts?: CallOptions): Promise<Inventory> {
  const inventory = new Map<string, GceItem>();
  for (const { kind, scope, item } of await listCollections(compute, project, region, opts)) {
    if (typeof item.name !== "string") continue;
    const id = resourcePath(project, { kind, scope, name: item.name });
    inventory.set(id, { id, properties: item });
  }
  return inventory;
}
