/**
 * What must hold once the daemon has settled, whatever was killed or deleted on the way (issue
 * 8): pure checks over what the cluster, GCE and the backend hold, each returning the violations
 * as sentences (empty: it holds).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type * as k8s from "@kubernetes/client-node";
import { loadBalancerName, serviceDescription } from "../../../model";
import type { ResourceListing } from "../../../emulator/gce";
import { specOfToken } from "../../../emulator/gce/kinds";
import { GcsClient, gcsLocation } from "../../../stacks/gcs";
import type { TestEnv } from "./env";

export const LB_FINALIZER = "service.kubernetes.io/load-balancer-cleanup";

/** GCE resources that belong to one Service: named after its load balancer or describing it. */
export function serviceLeftovers(
  resources: readonly ResourceListing[],
  namespace: string,
  name: string,
  uid: string,
): string[] {
  const description = serviceDescription(`${namespace}/${name}`);
  const lb = uid === "" ? undefined : loadBalancerName(uid);
  return resources
    .filter(
      (resource) => resource.properties.description === description || (lb !== undefined && resource.name.includes(lb)),
    )
    .map((resource) => `${resource.kind} ${resource.name}`);
}

/** Every LoadBalancer Service has an ingress IP and our finalizer; none is stuck Terminating. */
export function serviceViolations(services: readonly k8s.V1Service[]): string[] {
  const violations: string[] = [];
  for (const service of services) {
    if (service.spec?.type !== "LoadBalancer") continue;
    const key = `${service.metadata?.namespace}/${service.metadata?.name}`;
    if (service.metadata?.deletionTimestamp !== undefined && service.metadata.deletionTimestamp !== null) {
      violations.push(
        `${key} is stuck Terminating with finalizers ${JSON.stringify(service.metadata.finalizers ?? [])}`,
      );
      continue;
    }
    if ((service.status?.loadBalancer?.ingress ?? []).length === 0) violations.push(`${key} has no ingress`);
    if (!(service.metadata?.finalizers ?? []).includes(LB_FINALIZER))
      violations.push(`${key} has no ${LB_FINALIZER} finalizer`);
  }
  return violations;
}

interface CheckpointResource {
  type?: string;
  custom?: boolean;
  outputs?: { name?: unknown };
  inputs?: { name?: unknown };
}

/** `kind name` of every GCE resource the stacks of a file backend record. */
export function declaredResources(backendDir: string): string[] {
  const root = path.join(backendDir, ".pulumi", "stacks");
  if (!fs.existsSync(root)) return [];
  const files = (fs.readdirSync(root, { recursive: true }) as string[]).filter((file) => file.endsWith(".json"));
  return declaredIn(files.map((file) => fs.readFileSync(path.join(root, file), "utf8")));
}

/** declaredResources of the environment's backend, file:// or gs:// (its `.json` checkpoints). */
export async function declaredResourcesOf(env: TestEnv): Promise<string[]> {
  if (env.backend === "file") return declaredResources(env.backendUrl.slice("file://".length));
  const location = gcsLocation(env.backendUrl);
  if (location === undefined) throw new Error(`declaredResourcesOf: ${env.backendUrl} is not a gs:// backend`);
  const client = new GcsClient({ env: env.pulumiEnv });
  const names = (await client.list(location.bucket, `${location.prefix}.pulumi/stacks/`)).filter((name) =>
    name.endsWith(".json"),
  );
  const texts = await Promise.all(
    names.map(async (name) => (await client.get(location.bucket, name))?.toString("utf8") ?? "{}"),
  );
  return declaredIn(texts);
}

function declaredIn(checkpoints: readonly string[]): string[] {
  const declared: string[] = [];
  for (const text of checkpoints) {
    const checkpoint = JSON.parse(text) as { checkpoint?: { latest?: { resources?: CheckpointResource[] } } };
    for (const resource of checkpoint.checkpoint?.latest?.resources ?? []) {
      const spec = resource.custom === true && resource.type !== undefined ? specOfToken(resource.type) : undefined;
      const name = resource.outputs?.name ?? resource.inputs?.name;
      if (spec !== undefined && typeof name === "string") declared.push(`${spec.kind} ${name}`);
    }
  }
  return declared.sort();
}

/** GCE holds exactly what the stacks declare (instances are the test's, not dccm's). */
export function gceViolations(resources: readonly ResourceListing[], declared: readonly string[]): string[] {
  const held = resources
    .filter((resource) => resource.kind !== "instances")
    .map((resource) => `${resource.kind} ${resource.name}`);
  const wanted = new Set(declared);
  const have = new Set(held);
  return [
    ...held
      .filter((entry) => !wanted.has(entry))
      .map((entry) => `GCE holds ${entry}, which no stack declares (a leak)`),
    ...declared
      .filter((entry) => !have.has(entry))
      .map((entry) => `a stack declares ${entry}, which GCE does not hold`),
  ];
}
