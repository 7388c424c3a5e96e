/**
 * The Pulumi resource ID of a named GCE resource, as @pulumi/gcp writes it
 * (`projects/<p>/regions/<r>/forwardingRules/<name>`): derivable from the inputs alone.
 */
const COLLECTIONS: Record<string, { scope: "region" | "zone" | "global"; collection: string }> = {
  "gcp:compute/address:Address": { scope: "region", collection: "addresses" },
  "gcp:compute/forwardingRule:ForwardingRule": { scope: "region", collection: "forwardingRules" },
  "gcp:compute/regionBackendService:RegionBackendService": { scope: "region", collection: "backendServices" },
  "gcp:compute/targetPool:TargetPool": { scope: "region", collection: "targetPools" },
  "gcp:compute/regionHealthCheck:RegionHealthCheck": { scope: "region", collection: "healthChecks" },
  "gcp:compute/httpHealthCheck:HttpHealthCheck": { scope: "global", collection: "httpHealthChecks" },
  "gcp:compute/instanceGroup:InstanceGroup": { scope: "zone", collection: "instanceGroups" },
  "gcp:compute/firewall:Firewall": { scope: "global", collection: "firewalls" },
  "gcp:compute/route:Route": { scope: "global", collection: "routes" },
};

function text(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

/** undefined for a type dccm does not declare or inputs that lack the name, project or location. */
export function gceResourceId(type: string, inputs: Record<string, unknown>): string | undefined {
  const place = COLLECTIONS[type];
  const name = text(inputs.name);
  const project = text(inputs.project);
  if (place === undefined || name === undefined || project === undefined) return undefined;
  let where: string | undefined = "global";
  if (place.scope === "region") where = text(inputs.region) === undefined ? undefined : `regions/${text(inputs.region)}`;
  if (place.scope === "zone") where = text(inputs.zone) === undefined ? undefined : `zones/${text(inputs.zone)}`;
  return where === undefined ? undefined : `projects/${project}/${where}/${place.collection}/${name}`;
}
