// GCE's resource quotas as regions.get and projects.get report them: each `quotas[]` entry is a
// Quota (Compute API reference, Quota: "metric: [Output Only] Name of the quota metric", "limit:
// [Output Only] Quota limit for this metric", "usage: [Output Only] Current usage of this metric").
// The region's list holds the regional quotas (STATIC_ADDRESSES, INTERNAL_ADDRESSES, …), the
// project's the project-wide ones (FORWARDING_RULES, FIREWALLS, …: "globally" in GCE's refusal).

import { isRecord } from "../runtime/guards";
import type { CallOptions } from "./types";

/** One quota as read: its metric, limit and usage (numbers as GCE sends them, `8.0` → 8). */
export interface QuotaReading {
  readonly metric: string;
  readonly limit: number;
  readonly usage: number;
}

/** The quotas of the region dccm serves and of its project, as last read. */
export interface ProjectQuotas {
  readonly region: string;
  /** regions.get `quotas`. */
  readonly regional: readonly QuotaReading[];
  /** projects.get `quotas`. */
  readonly global: readonly QuotaReading[];
}

/** The two reads; ComputeClient implements them, tests substitute them. */
export interface QuotaApi {
  getRegionQuotas(project: string, region: string, opts?: CallOptions): Promise<QuotaReading[]>;
  getProjectQuotas(project: string, opts?: CallOptions): Promise<QuotaReading[]>;
}

/** The `quotas` of a Region or Project body; an entry without a metric or numeric limit and usage is skipped. Pure. */
export function parseQuotas(body: unknown): QuotaReading[] {
  const quotas = isRecord(body) && Array.isArray(body.quotas) ? (body.quotas as unknown[]) : [];
  const out: QuotaReading[] = [];
  for (const entry of quotas) {
    if (!isRecord(entry)) continue;
    const { metric, limit, usage } = entry;
    if (typeof metric === "string" && typeof limit === "number" && typeof usage === "number") {
      out.push({ metric, limit, usage });
    }
  }
  return out;
}

/** Both reads at once: the region's quotas and the project's. */
export async function readProjectQuotas(
  api: QuotaApi,
  project: string,
  region: string,
  opts?: CallOptions,
): Promise<ProjectQuotas> {
  const [regional, global] = await Promise.all([
    api.getRegionQuotas(project, region, opts),
    api.getProjectQuotas(project, opts),
  ]);
  return { region, regional, global };
}
