// GCE's list `filter` parameter (every Compute list method: "A filter expression that filters
// resources listed in the response", cloud.google.com/compute/docs/reference/rest/v1/*/list),
// evaluated on a resource's REST representation. Two grammars, which cannot be mixed in one
// expression:
//
// - regular expressions: `field eq literal` / `field ne literal`, the literal unquoted, 'single'
//   or "double" quoted, "interpreted as a regular expression using Google RE2 library syntax. The
//   literal value must match the entire field"; one un-parenthesized expression or several
//   parenthesized ones, all of which must hold. The stock CCM (k8s-cloud-provider
//   pkg/cloud/filter) writes only this form: `(name eq k8s-.*) (network eq <url>) (description
//   eq k8s-node-route)`.
// - comparisons: `field = value`, `!=`, `>`, `<`, `>=`, `<=`, and `:` (substring of a string field;
//   `field:*` "tests whether a key has been defined"), several parenthesized expressions joined by
//   AND (the default) or OR.
//
// Fields are REST names, nested ones with dots (`scheduling.automaticRestart`); a list field
// matches when one of its elements does. Anything else is GCE's 400 "Invalid list filter
// expression".

import type { Json, JsonObject } from "./json";

type Operator = "eq" | "ne" | "=" | "!=" | ">" | "<" | ">=" | "<=" | ":";

interface Clause {
  readonly field: string;
  readonly op: Operator;
  readonly value: string;
  /** Compiled once, for eq/ne. */
  readonly regex: RegExp | undefined;
}

/** Clauses in disjunctive form: the filter holds when every clause of one group holds. */
export type ListFilter = ReadonlyArray<readonly Clause[]>;

export class FilterError extends Error {}

function invalid(filter: string, why: string): FilterError {
  return new FilterError(`Invalid value for field 'filter': '${filter}'. Invalid list filter expression: ${why}.`);
}

const REGEX_OPS: readonly Operator[] = ["eq", "ne"];
// Longest first, so `!=` is not read as `!` and `>=` not as `>`.
const OPS: readonly Operator[] = ["!=", ">=", "<=", "eq", "ne", "=", ">", "<", ":"];

/** Reads one literal at `text[at]`: quoted (no escapes, as GCE documents none) or up to a space or `)`. */
function readLiteral(filter: string, text: string, at: number): { value: string; end: number } {
  const quote = text[at];
  if (quote === '"' || quote === "'") {
    const close = text.indexOf(quote, at + 1);
    if (close < 0) {
      throw invalid(filter, `unterminated ${quote} literal`);
    }
    return { value: text.slice(at + 1, close), end: close + 1 };
  }
  let end = at;
  while (end < text.length && !/[\s)]/.test(text[end] ?? "")) {
    end++;
  }
  if (end === at) {
    throw invalid(filter, `a value is missing at position ${at}`);
  }
  return { value: text.slice(at, end), end };
}

function readClause(filter: string, text: string, start: number): { clause: Clause; end: number } {
  let at = start;
  const skip = (): void => {
    while (/\s/.test(text[at] ?? "")) at++;
  };
  skip();
  const field = /^[A-Za-z_][A-Za-z0-9_.]*/.exec(text.slice(at))?.[0];
  if (field === undefined) {
    throw invalid(filter, `a field name is expected at position ${at}`);
  }
  at += field.length;
  skip();
  const op = OPS.find((candidate) => {
    const rest = text.slice(at);
    // eq/ne are words: `name equals` is not `name eq uals`.
    return rest.startsWith(candidate) && (!/^[a-z]/.test(candidate) || /^\s/.test(rest.slice(candidate.length)));
  });
  if (op === undefined) {
    throw invalid(filter, `an operator (eq, ne, =, !=, >, <, >=, <=, :) is expected after '${field}'`);
  }
  at += op.length;
  skip();
  const literal = readLiteral(filter, text, at);
  let regex: RegExp | undefined;
  if (REGEX_OPS.includes(op)) {
    try {
      regex = new RegExp(`^(?:${literal.value})$`, "s");
    } catch (cause) {
      throw invalid(
        filter,
        `'${literal.value}' is not a regular expression (${cause instanceof Error ? cause.message : String(cause)})`,
      );
    }
  }
  return { clause: { field, op, value: literal.value, regex }, end: literal.end };
}

/** Parses a `filter` query parameter; an empty one matches everything. Throws FilterError. */
export function parseFilter(filter: string): ListFilter {
  const text = filter.trim();
  if (text === "") {
    return [[]];
  }
  if (!text.startsWith("(")) {
    const { clause, end } = readClause(filter, text, 0);
    if (text.slice(end).trim() !== "") {
      throw invalid(filter, "several expressions must each be in parentheses");
    }
    return [[clause]];
  }
  const groups: Clause[][] = [[]];
  let at = 0;
  let joiner: "AND" | "OR" | undefined;
  while (at < text.length) {
    while (/\s/.test(text[at] ?? "")) at++;
    if (at >= text.length) {
      break;
    }
    const word = /^(AND|OR)\s/.exec(text.slice(at))?.[1];
    if (word === "AND" || word === "OR") {
      if (joiner !== undefined) {
        throw invalid(filter, `'${word}' follows '${joiner}'`);
      }
      joiner = word;
      at += word.length;
      continue;
    }
    if (text[at] !== "(") {
      throw invalid(filter, `'(' is expected at position ${at}`);
    }
    const { clause, end } = readClause(filter, text, at + 1);
    let close = end;
    while (/\s/.test(text[close] ?? "")) close++;
    if (text[close] !== ")") {
      throw invalid(filter, `')' is expected at position ${close}`);
    }
    if (joiner === "OR") {
      groups.push([]);
    }
    groups[groups.length - 1]?.push(clause);
    joiner = undefined;
    at = close + 1;
  }
  const clauses = groups.flat();
  if (clauses.length === 0 || joiner !== undefined) {
    throw invalid(filter, "an expression is missing");
  }
  const regexes = clauses.filter((c) => REGEX_OPS.includes(c.op)).length;
  if (regexes > 0 && regexes < clauses.length) {
    throw invalid(filter, "eq/ne (regular expressions) cannot be mixed with =, !=, >, <, >=, <= or :");
  }
  if (regexes > 0 && groups.length > 1) {
    throw invalid(filter, "regular expressions (eq/ne) cannot be joined by OR");
  }
  return groups;
}

/** The scalar values at a dotted path (a list contributes each element). */
function valuesAt(resource: JsonObject, field: string): Array<string | number | boolean> | undefined {
  let current: Json[] = [resource];
  for (const part of field.split(".")) {
    const next: Json[] = [];
    for (const v of current) {
      const inner = v !== null && typeof v === "object" && !Array.isArray(v) ? v[part] : undefined;
      if (Array.isArray(inner)) {
        next.push(...inner);
      } else if (inner !== undefined) {
        next.push(inner);
      }
    }
    if (next.length === 0) {
      return undefined;
    }
    current = next;
  }
  return current.filter(
    (v): v is string | number | boolean => typeof v === "string" || typeof v === "number" || typeof v === "boolean",
  );
}

function holds(clause: Clause, resource: JsonObject): boolean {
  const values = valuesAt(resource, clause.field);
  if (clause.op === ":" && clause.value === "*") {
    return values !== undefined;
  }
  // An absent field equals nothing: `ne` and `!=` hold for it.
  if (clause.op === "ne" || clause.op === "!=") {
    return !(values ?? []).some((v) =>
      clause.regex === undefined ? String(v) === clause.value : clause.regex.test(String(v)),
    );
  }
  return (values ?? []).some((v) => {
    switch (clause.op) {
      case "eq":
        return clause.regex?.test(String(v)) === true;
      case "=":
        return String(v) === clause.value;
      case ":":
        return typeof v === "string" ? v.includes(clause.value) : String(v) === clause.value;
      default: {
        const a = typeof v === "number" ? v : Number(v);
        const b = Number(clause.value);
        const [x, y] = Number.isNaN(a) || Number.isNaN(b) ? [String(v), clause.value] : [a, b];
        return clause.op === ">" ? x > y : clause.op === "<" ? x < y : clause.op === ">=" ? x >= y : x <= y;
      }
    }
  });
}

export function matchesFilter(filter: ListFilter, resource: JsonObject): boolean {
  return filter.some((group) => group.every((clause) => holds(clause, resource)));
}
