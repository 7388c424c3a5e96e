/** IPv4 parsing for validation; IPv6 is recognised only to be rejected with a precise message. */

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
  if (looksLikeIPv6(trimmed)) return { ok: false, reason: `"${trimmed}" is an IPv6 range; only IPv4 ranges are supported` };
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
