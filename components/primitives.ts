/**
 * Resource declarations shared by the cluster and the Service components. Each ignores changes of
 * its description (components/ignored.ts): the owner marker is written at creation only.
 */
import * as gcp from "@pulumi/gcp";
import * as pulumi from "@pulumi/pulumi";
import type { FirewallSpec, HttpHealthCheckSpec } from "../model";
import { ignoredChanges } from "./ignored";

export function regionHealthCheck(name: string, project: string, region: string, spec: HttpHealthCheckSpec, opts: pulumi.CustomResourceOptions): gcp.compute.RegionHealthCheck {
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
    { ...opts, ignoreChanges: ignoredChanges("gcp:compute/regionHealthCheck:RegionHealthCheck") },
  );
}

/** Target pools accept only legacy HTTP health checks. */
export function legacyHealthCheck(name: string, project: string, spec: HttpHealthCheckSpec, opts: pulumi.CustomResourceOptions): gcp.compute.HttpHealthCheck {
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
    { ...opts, ignoreChanges: ignoredChanges("gcp:compute/httpHealthCheck:HttpHealthCheck") },
  );
}

export function firewall(name: string, project: string, network: string, spec: FirewallSpec, opts: pulumi.CustomResourceOptions): gcp.compute.Firewall {
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
      allows: spec.allows.map((allow) => ({ protocol: allow.protocol, ports: allow.ports })),
    },
    { ...opts, ignoreChanges: ignoredChanges("gcp:compute/firewall:Firewall") },
  );
}
