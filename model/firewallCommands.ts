/**
 * The firewall rules dccm would have written, rendered for whoever writes them in its place
 * (`firewallManagement: manual`, or `auto` after a 403): the `gcloud compute firewall-rules`
 * commands of the Event `LoadBalancerManualChange`, `dccm preview` and `dccm firewalls`, and a
 * Terraform snippet for a network team that keeps its rules in code (docs/guides/shared-vpc.md).
 *
 * The command shape follows the stock CCM's (cloud-provider-gcp v0.28.2 providers/gce/gce_util.go
 * `FirewallToGCloudCreateCmd`, `FirewallToGCloudUpdateCmd`, `FirewallToGCloudDeleteCmd` and
 * `firewallToGcloudArgs`): create names the network, update does not, every list is sorted so the
 * same rule always renders the same text, and `--project` is the network project. Where it differs,
 * on purpose: values are shell-quoted with single quotes (Go's `%q` leaves `$` and backquotes for the
 * shell to expand), an allow without ports renders as the bare protocol (the stock CCM drops it), and
 * the destination ranges, the priority and the deny action are rendered, since dccm's rules have them
 * and a command without them would make a different rule.
 */
import type { DenyFirewallSpec, FirewallSpec } from "./types";

/** One rule as dccm would write it, its destination resolved to IPs (none: every IP of the targets). */
export type PublishedFirewall =
  | { readonly action: "allow"; readonly spec: FirewallSpec; readonly destinationRanges: readonly string[] }
  | { readonly action: "deny"; readonly spec: DenyFirewallSpec; readonly destinationRanges: readonly string[] };

/** What a network team must do to one rule: make it, make it match, or remove it. */
export type FirewallChange =
  | { readonly kind: "create"; readonly rule: PublishedFirewall }
  | { readonly kind: "update"; readonly rule: PublishedFirewall }
  | { readonly kind: "delete"; readonly name: string };

const SHELL_SAFE = /^[A-Za-z0-9_.:,/=@+-]+$/;

/** POSIX shell quoting: bare when nothing in it is special to the shell, else single-quoted. */
export function shellQuote(value: string): string {
  if (SHELL_SAFE.test(value)) return value;
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

function sorted(values: readonly string[]): string[] {
  return [...values].sort();
}

/** `tcp:80`, `tcp:8000-8080`, or `icmp` for an allow without ports, sorted as the stock CCM sorts them. */
export function allowRules(spec: FirewallSpec): string[] {
  return sorted(
    spec.allows.flatMap((allow) =>
      allow.ports.length === 0 ? [allow.protocol] : allow.ports.map((port) => `${allow.protocol}:${port}`),
    ),
  );
}

/** The flags create and update share, in the stock CCM's order, then dccm's own. */
function ruleFlags(rule: PublishedFirewall, project: string): string[] {
  const { spec } = rule;
  const flags = ["--description", shellQuote(spec.description)];
  if (rule.action === "allow") flags.push("--allow", allowRules(rule.spec).join(","));
  else flags.push("--rules", "all");
  flags.push("--source-ranges", sorted(spec.sourceRanges).join(","));
  flags.push("--target-tags", sorted(spec.targetTags).join(","));
  if (rule.destinationRanges.length > 0) flags.push("--destination-ranges", sorted(rule.destinationRanges).join(","));
  flags.push("--priority", String(spec.priority), "--project", shellQuote(project));
  return flags;
}

/** The gcloud command of one change, for the network project `project` and network name `network`. */
export function gcloudCommand(change: FirewallChange, project: string, network: string): string {
  switch (change.kind) {
    case "create": {
      const action = change.rule.action === "deny" ? ["--action", "deny"] : [];
      return [
        "gcloud compute firewall-rules create",
        change.rule.spec.name,
        "--network",
        shellQuote(network),
        "--direction",
        "ingress",
        ...action,
        ...ruleFlags(change.rule, project),
      ].join(" ");
    }
    case "update":
      return ["gcloud compute firewall-rules update", change.rule.spec.name, ...ruleFlags(change.rule, project)].join(
        " ",
      );
    case "delete":
      return `gcloud compute firewall-rules delete ${change.name} --project ${shellQuote(project)}`;
  }
}

/** The message of the Event `LoadBalancerManualChange`, worded as the stock CCM's `raiseFirewallChangeNeededEvent`. */
export function manualChangeMessage(command: string): string {
  return `Firewall change required by security admin: \`${command}\``;
}

function hclString(value: string): string {
  // HCL interpolates `${` and `%{` even in a quoted string; doubling the sigil makes it literal.
  return JSON.stringify(value).replace(/([$%])\{/g, (_match, sigil: string) => `${sigil}${sigil}{`);
}

function hclList(values: readonly string[]): string {
  return `[${sorted(values).map(hclString).join(", ")}]`;
}

/** The Terraform resource name of a rule: its GCE name, which is already a valid identifier once dashes become underscores. */
function terraformAddress(name: string): string {
  return name.replace(/-/g, "_");
}

/**
 * A `google_compute_firewall` resource of one rule (terraform-provider-google; the same fields as
 * the rule dccm would write through @pulumi/gcp's `gcp.compute.Firewall`).
 */
export function terraformSnippet(rule: PublishedFirewall, project: string, network: string): string {
  const { spec } = rule;
  const lines = [
    `resource "google_compute_firewall" ${hclString(terraformAddress(spec.name))} {`,
    `  project       = ${hclString(project)}`,
    `  name          = ${hclString(spec.name)}`,
    `  network       = ${hclString(network)}`,
    `  description   = ${hclString(spec.description)}`,
    `  direction     = "INGRESS"`,
    `  priority      = ${spec.priority}`,
    `  source_ranges = ${hclList(spec.sourceRanges)}`,
    `  target_tags   = ${hclList(spec.targetTags)}`,
  ];
  if (rule.destinationRanges.length > 0) lines.push(`  destination_ranges = ${hclList(rule.destinationRanges)}`);
  if (rule.action === "deny") lines.push(`  deny {`, `    protocol = "all"`, `  }`);
  else
    for (const allow of [...rule.spec.allows].sort((a, b) => a.protocol.localeCompare(b.protocol))) {
      lines.push(`  allow {`, `    protocol = ${hclString(allow.protocol)}`);
      if (allow.ports.length > 0) lines.push(`    ports    = ${hclList(allow.ports)}`);
      lines.push(`  }`);
    }
  lines.push(`}`);
  return lines.join("\n");
}

/**
 * Whether dccm writes a Service's firewalls or publishes them: `manual` always publishes, `auto`
 * publishes once GCE refused a firewall write of that Service (403), `managed` always writes
 * (a 403 then fails the run, as every other GCE error).
 */
export function firewallsPublished(
  management: "managed" | "manual" | "auto" | undefined,
  refusedByGce: boolean,
): boolean {
  if (management === "manual") return true;
  return management === "auto" && refusedByGce;
}

/**
 * The changes that make the live rules (by name; undefined when they could not be read) what dccm
 * would write: a missing rule is created, a differing one updated, and a live rule dccm made before
 * (`ownedLive`) that it no longer wants is deleted. Rules dccm cannot prove it made are never listed
 * for deletion. Equal means the same rendered update command, which carries every field dccm sets.
 */
export function firewallChanges(
  wanted: readonly PublishedFirewall[],
  live: ReadonlyMap<string, PublishedFirewall> | undefined,
  ownedLive: readonly string[],
): FirewallChange[] {
  const changes: FirewallChange[] = [];
  const wantedNames = new Set(wanted.map((rule) => rule.spec.name));
  for (const rule of [...wanted].sort((a, b) => a.spec.name.localeCompare(b.spec.name))) {
    const current = live?.get(rule.spec.name);
    if (current === undefined) changes.push({ kind: "create", rule });
    else if (
      gcloudCommand({ kind: "update", rule: current }, "", "") !== gcloudCommand({ kind: "update", rule }, "", "")
    )
      changes.push({ kind: "update", rule });
  }
  for (const name of sorted(ownedLive))
    if (!wantedNames.has(name) && (live === undefined || live.has(name))) changes.push({ kind: "delete", name });
  return changes;
}
