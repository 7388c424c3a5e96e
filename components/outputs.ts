/**
 * The stack program's output contract: what a run of `declareStack` records besides its resources
 * (the desired-state hash, the cluster identity, a shortened stack's Service), the slice of the
 * desired state one stack declares, and the reading of those outputs.
 */
import { parseServiceStack, serviceStackName, type DesiredState, type Scope } from "../model";
import { isRecord } from "../runtime/guards";
import type { Adoption } from "./adoption";
import { declareStack, type StackOutputs } from "./stack";

export const HASH_OUTPUT = "dccmDesiredHash";

export const CLUSTER_UID_OUTPUT = "dccmClusterUid";

/** `<namespace>/<name>`, recorded by a Service stack whose shortened name does not say it (model/names.ts serviceStackName). */
export const SERVICE_KEY_OUTPUT = "dccmServiceKey";

/**
 * The daemon's inline program for one stack: declares the stack's part of `desired` and records the
 * desired-state hash and the cluster identity as outputs (dccm preview runs the very same program).
 * The identity is also the owner marker every resource it creates carries in its description.
 */
export function stackProgramOutputs(
  desired: DesiredState,
  scope: Scope,
  hash: string | undefined,
  clusterUid: string | undefined,
  adoption?: Adoption,
): Record<string, unknown> {
  const owner = clusterUid !== undefined ? { clusterId: desired.cluster.clusterId, clusterUid } : undefined;
  return {
    ...declareStack(desired, scope, adoption, owner).outputs,
    ...serviceKeyOutput(scope),
    ...(hash !== undefined ? { [HASH_OUTPUT]: hash } : {}),
    ...(clusterUid !== undefined ? { [CLUSTER_UID_OUTPUT]: clusterUid } : {}),
  };
}

/** Pure: `dccmServiceKey` for a Service stack whose shortened name does not say its Service; nothing for any other (their outputs as before). */
export function serviceKeyOutput(scope: Scope): Record<string, string> {
  if (scope.kind !== "service" || parseServiceStack(serviceStackName(scope.namespace, scope.name)) !== undefined)
    return {};
  return { [SERVICE_KEY_OUTPUT]: `${scope.namespace}/${scope.name}` };
}

/**
 * Pure: what a run of the scope's program needs of the desired state. A Service stack declares its
 * own Service and refers to the cluster's groups and health check by name: it needs neither the
 * other Services, nor the routes, nor the groups' members, nor the cluster's warnings (the cluster
 * stack logs those). Declaring from the slice gives exactly the resources the whole would give
 * (test/unit/components/stack-slice.test.ts).
 */
export function stackSlice(desired: DesiredState, scope: Scope): DesiredState {
  if (scope.kind !== "service") return desired;
  const key = `${scope.namespace}/${scope.name}`;
  // Its own NEGs' endpoints, which only a stack keeping them (the stack program from CI) declares.
  const own = (desired.networkEndpointGroups ?? []).filter((neg) => neg.service === key);
  return {
    cluster: {
      ...desired.cluster,
      routes: [],
      instanceGroups: desired.cluster.instanceGroups.map((group) => ({ ...group, instances: [] })),
    },
    services: desired.services.filter((service) => service.key === key),
    rejected: desired.rejected.filter((rejection) => rejection.service === key),
    warnings: [],
    ...(own.length > 0 ? { networkEndpointGroups: own } : {}),
  };
}

/** The outputs every run of the stack program records (components/stack.ts declareStack), whatever the scope. */
export const PROGRAM_OUTPUTS = [
  "loadBalancers",
  "instanceGroups",
  "routes",
] as const satisfies readonly (keyof StackOutputs)[];

/** Pure: whether a run's stack outputs hold what the program always returns. */
export function hasProgramOutputs(outputs: Record<string, unknown>): boolean {
  return PROGRAM_OUTPUTS.every((key) => isRecord(outputs[key]));
}

/** A Service stack's outputs, checked: the ingress IPs of its one load balancer (none when not of that shape). */
export function ingressOf(outputs: Record<string, unknown>, namespace: string, name: string): string[] {
  const loadBalancers = outputs.loadBalancers;
  if (!isRecord(loadBalancers)) return [];
  const entry = loadBalancers[`${namespace}/${name}`];
  const raw = isRecord(entry) ? entry.ingress : undefined;
  return Array.isArray(raw) ? raw.filter((ip): ip is string => typeof ip === "string") : [];
}

/** What a Service stack's outputs say about its IPv4 address, as last applied. */
export interface RecordedAddress {
  /** The stack holds `<lb>` (outputs `resources.address`). */
  holdsAddress: boolean;
  /** model/ruleShape.ts of the Service as last applied; undefined for a stack applied by a dccm that did not record it. */
  forwardingRuleShape?: string;
}

/** Pure: the RecordedAddress of a Service stack's outputs. */
export function recordedAddress(outputs: Record<string, unknown>, namespace: string, name: string): RecordedAddress {
  const loadBalancers = outputs.loadBalancers;
  const entry = isRecord(loadBalancers) ? loadBalancers[`${namespace}/${name}`] : undefined;
  if (!isRecord(entry)) return { holdsAddress: false };
  const resources = entry.resources;
  const shape = entry.forwardingRuleShape;
  return {
    holdsAddress: isRecord(resources) && typeof resources.address === "string",
    ...(typeof shape === "string" ? { forwardingRuleShape: shape } : {}),
  };
}
