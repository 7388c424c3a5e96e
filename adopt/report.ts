/** What `dccm adopt` prints (pure): per stack what is promoted, imported, updated field by field, replaced, created and left. */
import { formatValue, type ResourceChange } from "../preview/plan";
import type { AdoptionReport, StackReport } from "./adopter";

function shortType(type: string): string {
  return type.split(":").pop() ?? type;
}

function changeLines(change: ResourceChange): string[] {
  const because =
    change.op === "replace" && change.replaceBecause.length > 0 ? ` because ${change.replaceBecause.join(", ")}` : "";
  return [
    `  ${change.op} ${shortType(change.type)} ${change.name}${because}`,
    ...change.fields.map((field) => `      ${field.path}: ${formatValue(field.old)} → ${formatValue(field.new)}`),
  ];
}

function stackLines(report: StackReport, dryRun: boolean): string[] {
  const subject = report.service !== undefined ? `Service ${report.service}` : "Cluster";
  const verdict =
    report.refused !== undefined ? `not adopted: ${report.refused}` : dryRun ? "would be adopted" : "adopted";
  const lines = [`${subject} (stack ${report.stack}): ${verdict}`];
  if (report.promotion !== undefined)
    lines.push(
      `  promote ${report.promotion.ip} (ephemeral, in use by forwarding rule ${report.promotion.name}) to static Address ${report.promotion.name}`,
    );
  for (const name of report.imported) lines.push(`  import ${name}`);
  // The promoted address is created by the promotion, not by the engine.
  const changes = report.changes.filter(
    (change) => !(change.op === "create" && report.promotion !== undefined && shortType(change.type) === "Address"),
  );
  lines.push(...changes.flatMap(changeLines));
  for (const id of report.leftovers)
    lines.push(`  leave ${id} (the stock CCM's name, which dccm does not use; delete it once the Service is served)`);
  return lines;
}

export interface AdoptionSummary {
  promote: number;
  import: number;
  update: number;
  replace: number;
  create: number;
  refused: number;
}

export function summarizeAdoption(report: AdoptionReport): AdoptionSummary {
  const summary: AdoptionSummary = { promote: 0, import: 0, update: 0, replace: 0, create: 0, refused: 0 };
  for (const stack of report.stacks) {
    if (stack.promotion !== undefined) summary.promote++;
    summary.import += stack.imported.length;
    for (const change of stack.changes) {
      if (change.op === "update" || change.op === "replace") summary[change.op]++;
      else if (change.op === "create" && !(stack.promotion !== undefined && shortType(change.type) === "Address"))
        summary.create++;
    }
    if (stack.refused !== undefined) summary.refused++;
  }
  return summary;
}

export function formatAdoption(report: AdoptionReport, dryRun: boolean): string {
  const lines: string[] = [];
  for (const key of report.pinned)
    lines.push(
      `Service ${key}: ${dryRun ? "would be pinned" : "pinned"} to its target pool (annotation dccm.io/backend: target-pool; move it with dccm adopt --to backend-service)`,
    );
  for (const stack of report.stacks) lines.push(...stackLines(stack, dryRun));
  const s = summarizeAdoption(report);
  lines.push(
    `Adoption: ${s.promote} addresses to promote, ${s.import} to import, ${s.update} to update in place, ${s.replace} to replace, ${s.create} to create, ${s.refused} stacks refused`,
  );
  return `${lines.join("\n")}\n`;
}
