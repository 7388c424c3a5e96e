/**
 * dccm installed in a cluster, declared with @pulumi/kubernetes: exactly the objects
 * deploy/manifests.ts builds (the same ones `dccm manifests` prints), one child each.
 */
import * as k8s from "@pulumi/kubernetes";
import * as pulumi from "@pulumi/pulumi";
import { deployObjects, SYSTEM_NAMESPACE, type DeployArgs, type KubeObject } from "./manifests";

export const DCCM_DEPLOYMENT_TYPE = "dccm:kubernetes:DccmDeployment";

/** A child's Pulumi name: the component's name, the kind, the object's name (":" of RBAC names made "-"). */
export function childName(name: string, object: KubeObject): string {
  return `${name}-${object.kind.toLowerCase()}-${(object.metadata?.name ?? "").replace(/:/g, "-")}`;
}

/**
 * An object's field as @pulumi/kubernetes input. The objects are plain JSON (manifests.ts sets no
 * Date and no Output), which is what both type systems describe; client-node's types only differ
 * in declaring timestamps as Date.
 */
function input<T>(value: unknown): T {
  return JSON.parse(JSON.stringify(value ?? null)) as T;
}

type Meta = k8s.types.input.meta.v1.ObjectMeta;

function declare(name: string, object: KubeObject, opts: pulumi.CustomResourceOptions): pulumi.CustomResource {
  const metadata = input<Meta>(object.metadata);
  switch (object.kind) {
    case "ServiceAccount":
      return new k8s.core.v1.ServiceAccount(name, { metadata }, opts);
    case "ClusterRole":
      return new k8s.rbac.v1.ClusterRole(
        name,
        { metadata, rules: input<k8s.types.input.rbac.v1.PolicyRule[]>(object.rules) },
        opts,
      );
    case "ClusterRoleBinding":
      return new k8s.rbac.v1.ClusterRoleBinding(
        name,
        {
          metadata,
          roleRef: input<k8s.types.input.rbac.v1.RoleRef>(object.roleRef),
          subjects: input<k8s.types.input.rbac.v1.Subject[]>(object.subjects),
        },
        opts,
      );
    case "Role":
      return new k8s.rbac.v1.Role(
        name,
        { metadata, rules: input<k8s.types.input.rbac.v1.PolicyRule[]>(object.rules) },
        opts,
      );
    case "RoleBinding":
      return new k8s.rbac.v1.RoleBinding(
        name,
        {
          metadata,
          roleRef: input<k8s.types.input.rbac.v1.RoleRef>(object.roleRef),
          subjects: input<k8s.types.input.rbac.v1.Subject[]>(object.subjects),
        },
        opts,
      );
    case "ConfigMap":
      return new k8s.core.v1.ConfigMap(name, { metadata, data: object.data }, opts);
    case "Deployment":
      return new k8s.apps.v1.Deployment(
        name,
        { metadata, spec: input<k8s.types.input.apps.v1.DeploymentSpec>(object.spec) },
        opts,
      );
    case "PodDisruptionBudget":
      return new k8s.policy.v1.PodDisruptionBudget(
        name,
        { metadata, spec: input<k8s.types.input.policy.v1.PodDisruptionBudgetSpec>(object.spec) },
        opts,
      );
  }
}

export class DccmDeployment extends pulumi.ComponentResource {
  /** Namespace of the ServiceAccount, ConfigMap, Deployment and PodDisruptionBudget. */
  readonly namespace: string;
  /** Every child, in apply order. */
  readonly objects: pulumi.CustomResource[];

  constructor(name: string, args: DeployArgs, opts?: pulumi.ComponentResourceOptions) {
    super(DCCM_DEPLOYMENT_TYPE, name, {}, opts);
    const built = deployObjects(args);
    this.namespace = args.namespace ?? SYSTEM_NAMESPACE;
    const objects: pulumi.CustomResource[] = [];
    for (const object of built) {
      // The pods start only once their RBAC and config exist: a daemon starting without them logs `forbidden` and restarts.
      const dependsOn = object.kind === "Deployment" ? [...objects] : [];
      objects.push(
        declare(childName(name, object), object, { parent: this, ...(dependsOn.length > 0 ? { dependsOn } : {}) }),
      );
    }
    this.objects = objects;
    this.registerOutputs({
      namespace: this.namespace,
      objects: built.map(
        (object) => `${object.kind} ${object.metadata?.namespace ?? ""}/${object.metadata?.name ?? ""}`,
      ),
    });
  }
}
