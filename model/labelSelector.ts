/**
 * Kubernetes label selectors as text (`a=b,c!=d,e in (f,g),h notin (i),j,!k`), the grammar of
 * k8s.io/apimachinery pkg/labels (selector.go, Parse): parsed once, matched against Node labels.
 * Pure.
 */

export type LabelRequirement =
  { key: string; operator: "in" | "notin"; values: string[] } | { key: string; operator: "exists" | "!exists" };

export type SelectorParse = { ok: true; requirements: LabelRequirement[] } | { ok: false; reason: string };

/** A label value: at most 63 characters, empty or alphanumeric at both ends with `-_.` inside (validation.IsValidLabelValue). */
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A qualified key (validation.IsQualifiedName): an optional DNS-subdomain prefix and `/`, then a name of at most 63 characters. */
function keyProblem(key: string): string | undefined {
  const slash = key.indexOf("/");
  const prefix = slash < 0 ? undefined : key.slice(0, slash);
  const name = slash < 0 ? key : key.slice(slash + 1);
  if (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix)))
    return `"${key}": the prefix before "/" must be a DNS subdomain`;
  if (name === "" || name.length > 63 || !/^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(name))
    return `"${key}" is not a label key (at most 63 letters, digits, "-", "_" or ".", alphanumeric at both ends, after an optional prefix and "/")`;
  return undefined;
}

function valueProblem(value: string): string | undefined {
  return value.length <= 63 && LABEL_VALUE.test(value)
    ? undefined
    : `"${value}" is not a label value (at most 63 letters, digits, "-", "_" or ".", alphanumeric at both ends)`;
}

/** The text split at the commas outside parentheses; undefined when parentheses do not pair. */
function splitTopLevel(text: string): string[] | undefined {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "(") depth++;
    else if (c === ")") depth--;
    if (depth < 0 || depth > 1) return undefined;
    if (c === "," && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  if (depth !== 0) return undefined;
  parts.push(text.slice(start));
  return parts.map((part) => part.trim());
}

function parseRequirement(text: string): LabelRequirement | string {
  if (text === "") return "an empty requirement (two commas in a row, or one at an end)";
  const set = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(text);
  if (set !== null) {
    const values = set[3].split(",").map((value) => value.trim());
    if (values.length === 1 && values[0] === "") return `"${text}": ${set[2]} needs at least one value`;
    for (const value of values) {
      const problem = valueProblem(value);
      if (problem !== undefined) return problem;
    }
    return { key: set[1], operator: set[2] as "in" | "notin", values: [...new Set(values)].sort() };
  }
  const comparison = /^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$/.exec(text);
  if (comparison !== null) {
    const problem = valueProblem(comparison[3]);
    if (problem !== undefined) return problem;
    return { key: comparison[1], operator: comparison[2] === "!=" ? "notin" : "in", values: [comparison[3]] };
  }
  const absent = /^!\s*([^=!\s()]+)$/.exec(text);
  if (absent !== null) return { key: absent[1], operator: "!exists" };
  if (/^[^=!\s()]+$/.test(text)) return { key: text, operator: "exists" };
  return `"${text}" is not key, !key, key=value, key!=value, key in (values) or key notin (values)`;
}

/** The requirements of a selector, or the first problem with it. An empty text is refused: it would select every node. */
export function parseLabelSelector(text: string): SelectorParse {
  if (text.trim() === "") return { ok: false, reason: "is empty (remove the annotation to use every eligible node)" };
  const parts = splitTopLevel(text);
  if (parts === undefined) return { ok: false, reason: `"${text}": unbalanced parentheses` };
  const requirements: LabelRequirement[] = [];
  for (const part of parts) {
    const requirement = parseRequirement(part);
    if (typeof requirement === "string") return { ok: false, reason: requirement };
    const problem = keyProblem(requirement.key);
    if (problem !== undefined) return { ok: false, reason: problem };
    requirements.push(requirement);
  }
  return { ok: true, requirements };
}

/** Whether labels satisfy every requirement: `notin` (and `!=`) hold for a missing key, as Kubernetes has it. */
export function selectorMatches(
  requirements: readonly LabelRequirement[],
  labels: Readonly<Record<string, string>>,
): boolean {
  return requirements.every((requirement) => {
    const has = Object.prototype.hasOwnProperty.call(labels, requirement.key);
    switch (requirement.operator) {
      case "exists":
        return has;
      case "!exists":
        return !has;
      case "in":
        return has && requirement.values.includes(labels[requirement.key]);
      case "notin":
        return !has || !requirement.values.includes(labels[requirement.key]);
    }
  });
}
