/** A one-shot read of the live cluster, for the stack program run from CI without a snapshot file. */
import * as k8s from "@kubernetes/client-node";
import { kubeStatusCode } from "../runtime/kube";
import type { ClusterSnapshot } from "../model";
import { CLUSTER_ID_CONFIGMAP, clusterIdFromConfigMap } from "./clusterId";
import type { DumpContents } from "./kubectlDump";
import { trimNode, trimService } from "./trim";

export function loadKubeConfig(kubeconfigPath?: string): k8s.KubeConfig {
  const kubeConfig = new k8s.KubeConfig();
  if (kubeconfigPath !== undefined && kubeconfigPath !== "") kubeConfig.loadFromFile(kubeconfigPath);
  else kubeConfig.loadFromDefault();
  return kubeConfig;
}

export async function readClusterId(core: k8s.CoreV1Api): Promise<string | undefined> {
  try {
    const configMap = await core.readNamespacedConfigMap(CLUSTER_ID_CONFIGMAP);
    return clusterIdFromConfigMap(configMap);
  } catch (error) {
    if (kubeStatusCode(error) === 404) return undefined;
    throw new Error(`reading ConfigMap ${CLUSTER_ID_CONFIGMAP.namespace}/${CLUSTER_ID_CONFIGMAP.name}`, {
      cause: error,
    });
  }
}

export async function listCluster(kubeConfig: k8s.KubeConfig): Promise<DumpContents> {
  const core = kubeConfig.makeApiClient(k8s.CoreV1Api);
  try {
    const [nodes, services, clusterId] = await Promise.all([
      core.listNode(),
      core.listServiceForAllNamespaces(),
      readClusterId(core),
    ]);
    const snapshot: ClusterSnapshot = { nodes: nodes.items.map(trimNode), services: services.items.map(trimService) };
    return { snapshot, ...(clusterId !== undefined ? { clusterId } : {}) };
  } catch (error) {
    throw new Error(`listing Nodes and Services from ${kubeConfig.getCurrentCluster()?.server ?? "the cluster"}`, {
      cause: error,
    });
  }
}
