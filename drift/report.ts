/**
 * Pure: `dccm drift`'s report, observe-only: what a drift pass by listing would find (drift/plan.ts
 * planDriftPass over the stacks as the backend records them), with nothing sent to `up --refresh`.
 */
import type { AppliedSnapshot } from "./applied";
import { planDriftPass } from "./plan";

export interface DriftReport {
  project: string;
  /** Stacks compared with the listing. */
  compared: number;
  /** Resources listed. */
  listed: number;
  /** Stacks whose state left pending operations (a run was killed): not compared, their next run settles them. */
  unknown: string[];
  drifted: Array<{ stack: string; service?: string; reasons: string[] }>;
}

/** One stack as the backend records it: undefined resources when its state is not known (pending operations). */
export interface RecordedStack {
  stack: string;
  /** `namespace/name` of a Service stack. */
  service?: string;
  resources: AppliedSnapshot["resources"] | undefined;
}

/** Pure: the report of `listed` (resource id → the Compute API's JSON) against the recorded stacks. */
export function driftReport(
  project: string,
  stacks: readonly RecordedStack[],
  listed: ReadonlyMap<string, Record<string, unknown>>,
): DriftReport {
  const applied: AppliedSnapshot[] = [];
  const unknown: string[] = [];
  const services = new Map<string, string>();
  for (const { stack, service, resources } of stacks) {
    if (service !== undefined) services.set(stack, service);
    if (resources === undefined) unknown.push(stack);
    else applied.push({ stack, resources, generation: 0 });
  }
  const drifted = planDriftPass(applied, listed).map(({ stack, reasons }) => {
    const service = services.get(stack);
    return { stack, ...(service !== undefined ? { service } : {}), reasons };
  });
  drifted.sort((a, b) => (a.stack < b.stack ? -1 : a.stack > b.stack ? 1 : 0));
  return { project, compared: applied.length, listed: listed.size, unknown: [...unknown].sort(), drifted };
}

/** Pure: the human form: a summary line, then each drifted stack and its resources. */
export function formatDriftReport(report: DriftReport): string[] {
  const lines = [
    `${report.drifted.length === 0 ? "no drift" : `drift in ${report.drifted.length} of ${report.compared} stacks`}: ${report.compared} stacks compared with ${report.listed} GCE resources of project ${report.project}; nothing was changed`,
  ];
  for (const { stack, service, reasons } of report.drifted) {
    lines.push(`${stack}${service !== undefined ? ` (Service ${service})` : ""}:`);
    for (const reason of reasons) lines.push(`  ${reason}`);
  }
  if (report.unknown.length > 0)
    lines.push(
      `not compared (a run left pending operations; the stack's next run settles them): ${report.unknown.join(", ")}`,
    );
  return lines;
}

/** Pure: 0 no drift, 2 drift found (as dccm preview: 2 = something to do). */
export function driftExitCode(report: DriftReport): 0 | 2 {
  return report.drifted.length > 0 ? 2 : 0;
}
