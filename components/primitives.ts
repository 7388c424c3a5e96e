/**
 * Resource declarations shared by the cluster and the Service components. Each ignores changes of
 * its description (components/ignored.ts): the owner marker is written at creation only.
 */
import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";
import type { DenyFirewallSpec, FirewallSpec, HttpHealthCheckSpec } from "../model";
import { ignoredChanges } from "./ignored";

const TIMINGS = ["checkIntervalSec", "timeoutSec", "healthyThreshold", "unhealthyThreshold"];

/**
 * Timings no annotation names are written at creation only: a repair keeps what an operator set by
 * hand (the stock CCM keeps longer hand-set timings, gce_loadbalancer_external.go
 * mergeHTTPHealthChecks); annotated ones are declared on every run (docs/guides/services.md#health-checks).
 */
export function healthCheckIgnoredChanges(
  type: "gcp:compute/regionHealthCheck:RegionHealthCheck" | "gcp:compute/httpHealthCheck:HttpHealthCheck",
  spec: Pick<HttpHealthCheckSpec, "timingsDeclared">,
): string[] {
  return [...ignoredChanges(type), ...(spec.timingsDeclared === true ? [] : TIMINGS)];
}

export function regionHealthCheck(
  name: string,
  project: string,
  region: string,
  spec: HttpHealthCheckSpec,
  opts: pulumi.CustomResourceOptions,
): gcp.compute.RegionHealthCheck {
  return new gcp.compute.RegionHealthCheck(
    name,
    {
      project,
      region,
      name: spec.name,
      description: spec.description,
      checkIntervalSec: spec.checkIntervalSec,
      timeoutSec: spec.timeoutSec,
      healthyThreshold: spec.healthyThreshold,
      unhealthyThreshold: spec.unhealthyThreshold,
      httpHealthCheck: { port: spec.port, requestPath: spec.requestPath },
    },
    { ...opts, ignoreChanges: healthCheckIgnoredChanges("gcp:compute/regionHealthCheck:RegionHealthCheck", spec) },
  );
}

/** Target pools accept only legacy HTTP health checks. */
export function legacyHealthCheck(
  name: string,
  project: string,
  spec: HttpHealthCheckSpec,
  opts: pulumi.CustomResourceOptions,
): gcp.compute.HttpHealthCheck {
  return new gcp.compute.HttpHealthCheck(
    name,
    {
      project,
      name: spec.name,
      description: spec.description,
      port: spec.port,
      requestPath: spec.requestPath,
      checkIntervalSec: spec.checkIntervalSec,
      timeoutSec: spec.timeoutSec,
      healthyThreshold: spec.healthyThreshold,
      unhealthyThreshold: spec.unhealthyThreshold,
    },
    { ...opts, ignoreChanges: healthCheckIgnoredChanges("gcp:compute/httpHealthCheck:HttpHealthCheck", spec) },
  );
}

/** What the allow and the deny rules share: an ingress rule from the spec's sources to its targets. */
function ingressRule(
  name: string,
  project: string,
  network: string,
  spec: FirewallSpec | DenyFirewallSpec,
  rule: Pick<gcp.compute.FirewallArgs, "allows" | "denies" | "destinationRanges">,
  opts: pulumi.CustomResourceOptions,
): gcp.compute.Firewall {
  return new gcp.compute.Firewall(
    name,
    {
      project,
      name: spec.name,
      network,
      description: spec.description,
      direction: "INGRESS",
      sourceRanges: spec.sourceRanges,
      targetTags: spec.targetTags,
      priority: spec.priority,
      ...rule,
    },
    { ...opts, ignoreChanges: ignoredChanges("gcp:compute/firewall:Firewall") },
  );
}

/**
 * An allow rule. `destinationIP` is the load balancer's IP its spec's destination resolves to
 * (undefined: every IP of the target nodes). `destinationRanges` and `priority` are updated in place,
 * never a replacement (terraform-provider-google resource_compute_firewall.go: neither is ForceNew;
 * `destination_ranges` is Optional+Computed, `priority` Optional with Default 1000), so existing
 * firewalls keep their name and their traffic when they gain them.
 */
export function firewall(
  name: string,
  project: string,
  network: string,
  spec: FirewallSpec,
  opts: pulumi.CustomResourceOptions,
  destinationIP?: pulumi.Input<string>,
): gcp.compute.Firewall {
  const allows = spec.allows.map((allow) => ({ protocol: allow.protocol, ports: allow.ports }));
  return ingressRule(
    name,
    project,
    network,
    spec,
    { allows, ...(destinationIP !== undefined ? { destinationRanges: [destinationIP] } : {}) },
    opts,
  );
}

/** A deny rule of every protocol towards `destinationIP` (the stock CCM's `Denied: [{IPProtocol: "all"}]`). */
export function denyFirewall(
  name: string,
  project: string,
  network: string,
  spec: DenyFirewallSpec,
  opts: pulumi.CustomResourceOptions,
  destinationIP: pulumi.Input<string>,
): gcp.compute.Firewall {
  return ingressRule(
    name,
    project,
    network,
    spec,
    { denies: [{ protocol: "all" }], destinationRanges: [destinationIP] },
    opts,
  );
}
