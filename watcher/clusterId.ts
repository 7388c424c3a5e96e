/** The stock CCM's cluster ID lives in ConfigMap kube-system/ingress-uid. */
export const CLUSTER_ID_CONFIGMAP = { namespace: "kube-system", name: "ingress-uid" } as const;

export interface ConfigMapLike {
  metadata?: { name?: string; namespace?: string };
  data?: Record<string, string>;
}

export function clusterIdFromConfigMap(configMap: ConfigMapLike): string | undefined {
  if (
    configMap.metadata?.namespace !== CLUSTER_ID_CONFIGMAP.namespace ||
    configMap.metadata?.name !== CLUSTER_ID_CONFIGMAP.name
  )
    return undefined;
  const data = configMap.data ?? {};
  const value = data["provider-uid"] ?? data["uid"];
  return value === undefined || value === "" ? undefined : value;
}
