/**
 * IP parsing for validation. IPv4 everywhere; IPv6 only where a Service serves IPv6 (its load
 * balancer IP and source ranges): elsewhere it is recognised only to be rejected with a precise message.
 */

export function parseIPv4(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = value * 256 + octet;
  }
  return value;
}

export function formatIPv4(value: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join(".");
}

export function looksLikeIPv6(text: string): boolean {
  return text.includes(":");
}

export interface Cidr4 {
  base: number;
  prefix: number;
}

export type CidrParse = { ok: true; cidr: Cidr4; canonical: string } | { ok: false; reason: string };

/** Parses `a.b.c.d/n`; host bits are cleared in `canonical` (GCE stores the network address). */
export function parseCidr4(text: string): CidrParse {
  const trimmed = text.trim();
  if (looksLikeIPv6(trimmed))
    return { ok: false, reason: `"${trimmed}" is an IPv6 range; only IPv4 ranges are supported` };
  const slash = trimmed.indexOf("/");
  if (slash < 0) return { ok: false, reason: `"${trimmed}" is not a CIDR (expected a.b.c.d/n)` };
  const ip = parseIPv4(trimmed.slice(0, slash));
  const prefixText = trimmed.slice(slash + 1);
  if (ip === undefined || !/^(0|[1-9][0-9]?)$/.test(prefixText) || Number(prefixText) > 32) {
    return { ok: false, reason: `"${trimmed}" is not a CIDR (expected a.b.c.d/n)` };
  }
  const prefix = Number(prefixText);
  const size = 2 ** (32 - prefix);
  const base = Math.floor(ip / size) * size;
  return { ok: true, cidr: { base, prefix }, canonical: `${formatIPv4(base)}/${prefix}` };
}

export function cidrContains(outer: Cidr4, inner: Cidr4): boolean {
  if (inner.prefix < outer.prefix) return false;
  const size = 2 ** (32 - outer.prefix);
  return Math.floor(inner.base / size) * size === outer.base;
}

/** The eight 16-bit groups of an IPv6 address (`::` expanded); undefined when not one. Zone IDs and embedded IPv4 are refused. */
export function parseIPv6(text: string): number[] | undefined {
  if (!/^[0-9a-fA-F:]+$/.test(text) || text.includes(":::")) return undefined;
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groups = (half: string): string[] => (half === "" ? [] : half.split(":"));
  const head = groups(halves[0] ?? "");
  const tail = halves.length === 2 ? groups(halves[1] ?? "") : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...tail];
  if (all.some((group) => !/^[0-9a-fA-F]{1,4}$/.test(group))) return undefined;
  return all.map((group) => parseInt(group, 16));
}

/** RFC 5952 text: lower case, no leading zeros, the longest run (≥ 2) of zero groups as `::`. */
export function formatIPv6(groups: readonly number[]): string {
  let best = { start: -1, length: 0 };
  for (let start = 0; start < groups.length;) {
    let end = start;
    while (end < groups.length && groups[end] === 0) end++;
    if (end - start > best.length) best = { start, length: end - start };
    start = end === start ? start + 1 : end;
  }
  const hex = groups.map((group) => group.toString(16));
  if (best.length < 2) return hex.join(":");
  return `${hex.slice(0, best.start).join(":")}::${hex.slice(best.start + best.length).join(":")}`;
}

export type IpFamily = "IPv4" | "IPv6";

export type CidrAnyParse = { ok: true; family: IpFamily; canonical: string } | { ok: false; reason: string };

/** Parses an IPv4 or IPv6 CIDR; host bits cleared in `canonical` (GCE stores the network address). */
export function parseCidr(text: string): CidrAnyParse {
  const trimmed = text.trim();
  if (!looksLikeIPv6(trimmed)) {
    const parsed = parseCidr4(trimmed);
    return parsed.ok ? { ok: true, family: "IPv4", canonical: parsed.canonical } : parsed;
  }
  const bad = {
    ok: false as const,
    reason: `"${trimmed}" is not a CIDR (expected a.b.c.d/n or an IPv6 prefix x:x::/n)`,
  };
  const slash = trimmed.indexOf("/");
  const groups = slash < 0 ? undefined : parseIPv6(trimmed.slice(0, slash));
  const prefixText = slash < 0 ? "" : trimmed.slice(slash + 1);
  if (groups === undefined || !/^(0|[1-9][0-9]{0,2})$/.test(prefixText) || Number(prefixText) > 128) return bad;
  const prefix = Number(prefixText);
  const masked = groups.map((group, index) => {
    const kept = Math.min(16, Math.max(0, prefix - index * 16));
    return kept === 0 ? 0 : group & ((0xffff << (16 - kept)) & 0xffff);
  });
  return { ok: true, family: "IPv6", canonical: `${formatIPv6(masked)}/${prefix}` };
}
