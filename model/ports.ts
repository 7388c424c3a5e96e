/** Port sets as GCE can express them. */

/** Sorted unique ports collapsed into GCE firewall port strings: [80, 81, 82, 443] → ["80-82", "443"]. */
export function collapsePortRanges(ports: readonly number[]): string[] {
  const sorted = [...new Set(ports)].sort((a, b) => a - b);
  const ranges: string[] = [];
  let start = sorted[0];
  let previous = sorted[0];
  for (const port of sorted.slice(1).concat([Number.NaN])) {
    if (port === previous + 1) {
      previous = port;
      continue;
    }
    if (start !== undefined) ranges.push(start === previous ? `${start}` : `${start}-${previous}`);
    start = port;
    previous = port;
  }
  return ranges;
}

/** GCE forwarding rules accept at most five individual ports; beyond that a range or all ports. */
export const MAX_FORWARDING_RULE_PORTS = 5;
