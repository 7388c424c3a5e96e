/** The Service writes the daemon makes: finalizer and load balancer status. */
import * as k8s from "@kubernetes/client-node";
import { kubeStatusCode } from "../../runtime/kube";
import { retryOnConflict, type ConflictAttempt } from "../../runtime/retry";
import { LB_FINALIZER } from "../../model";

/** Each attempt reads the Service again: 5 writes losing the race in a row means a hot object. */
const FINALIZER_ATTEMPTS = 5;

const mergePatch = (): ReturnType<typeof k8s.setHeaderOptions> =>
  k8s.setHeaderOptions("Content-Type", k8s.PatchStrategy.MergePatch);

export class ServiceWriter {
  constructor(private readonly core: k8s.CoreV1Api) {}

  /** The live Service; undefined when it no longer exists. */
  private async read(namespace: string, name: string): Promise<k8s.V1Service | undefined> {
    try {
      return await this.core.readNamespacedService({ name, namespace });
    } catch (error) {
      if (kubeStatusCode(error) === 404) return undefined;
      throw new Error(`reading Service ${namespace}/${name}`, { cause: error });
    }
  }

  /**
   * Adds or removes our finalizer with the object's resourceVersion, so a concurrent edit of the
   * list makes the patch fail (409) instead of dropping someone else's finalizer. Returns false
   * when the Service no longer exists.
   */
  async setFinalizer(namespace: string, name: string, present: boolean): Promise<boolean> {
    const what = `${present ? "adding" : "removing"} finalizer ${LB_FINALIZER} on Service ${namespace}/${name}`;
    return this.patchMetadata(namespace, name, what, (metadata) => {
      const finalizers = metadata.finalizers ?? [];
      if (finalizers.includes(LB_FINALIZER) === present) return undefined;
      return {
        finalizers: present
          ? [...finalizers, LB_FINALIZER]
          : finalizers.filter((finalizer) => finalizer !== LB_FINALIZER),
      };
    });
  }

  /** Removes other controllers' finalizers (the stock CCM's, once dccm adopted the load balancer), as setFinalizer does. */
  async removeFinalizers(namespace: string, name: string, finalizers: readonly string[]): Promise<boolean> {
    const what = `removing finalizers ${finalizers.join(", ")} from Service ${namespace}/${name}`;
    return this.patchMetadata(namespace, name, what, (metadata) => {
      const current = metadata.finalizers ?? [];
      const next = current.filter((finalizer) => !finalizers.includes(finalizer));
      return next.length === current.length ? undefined : { finalizers: next };
    });
  }

  /** Sets one annotation, with the object's resourceVersion. */
  async setAnnotation(namespace: string, name: string, key: string, value: string): Promise<boolean> {
    const what = `setting annotation ${key}=${value} on Service ${namespace}/${name}`;
    return this.patchMetadata(namespace, name, what, (metadata) =>
      metadata.annotations?.[key] === value ? undefined : { annotations: { [key]: value } },
    );
  }

  /**
   * A JSON merge patch of the metadata `change` computes from the live Service (undefined: nothing
   * to write), carrying the resourceVersion just read; a 409 reads again (retryOnConflict).
   */
  private async patchMetadata(
    namespace: string,
    name: string,
    what: string,
    change: (metadata: k8s.V1ObjectMeta) => Record<string, unknown> | undefined,
  ): Promise<boolean> {
    return retryOnConflict(what, FINALIZER_ATTEMPTS, async (): Promise<ConflictAttempt<boolean>> => {
      const service = await this.read(namespace, name);
      if (service === undefined) return { kind: "done", value: false };
      const body = change(service.metadata ?? {});
      if (body === undefined) return { kind: "done", value: true };
      try {
        await this.core.patchNamespacedService(
          { name, namespace, body: { metadata: { ...body, resourceVersion: service.metadata?.resourceVersion } } },
          mergePatch(),
        );
        return { kind: "done", value: true };
      } catch (error) {
        if (kubeStatusCode(error) === 404) return { kind: "done", value: false };
        if (kubeStatusCode(error) === 409) return { kind: "conflict", error };
        throw new Error(what, { cause: error });
      }
    });
  }

  /**
   * Writes status.loadBalancer.ingress through the status subresource, after reading the Service
   * again: the cache may be behind a change of type (the apiserver refuses a load balancer status on
   * a ClusterIP Service) or a delete and re-create under the same name (another `uid`). Returns
   * whether it wrote.
   */
  async setIngress(namespace: string, name: string, ips: string[], uid: string): Promise<boolean> {
    const service = await this.read(namespace, name);
    if (service === undefined || service.metadata?.uid !== uid) return false;
    if (ips.length > 0 && service.spec?.type !== "LoadBalancer") return false;
    if ((service.status?.loadBalancer?.ingress ?? []).length === 0 && ips.length === 0) return false;
    try {
      await this.core.patchNamespacedServiceStatus(
        {
          name,
          namespace,
          body: {
            metadata: { uid },
            status: { loadBalancer: { ingress: ips.length > 0 ? ips.map((ip) => ({ ip, ipMode: "VIP" })) : null } },
          },
        },
        mergePatch(),
      );
      return true;
    } catch (error) {
      if (kubeStatusCode(error) === 404) return false;
      throw new Error(`writing status.loadBalancer of Service ${namespace}/${name}`, { cause: error });
    }
  }
}
