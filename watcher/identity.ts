/**
 * The cluster's identity: the UID of its kube-system Namespace, which no copied config file carries
 * (every stack records it; a daemon pointed at another cluster refuses the stacks).
 */
import * as k8s from "@kubernetes/client-node";
import { DEFAULT_REQUEST_TIMEOUT_MS, KeepAliveAgents } from "../runtime/kube";

/**
 * Reads the UID over its own connection with a deadline: start-up waits for it, and a read on a
 * blackholed connection (no RST) would otherwise never return and hold the start forever.
 */
export async function readClusterUid(
  kubeConfig: k8s.KubeConfig,
  timeoutMs = DEFAULT_REQUEST_TIMEOUT_MS,
): Promise<string> {
  const agents = new KeepAliveAgents(kubeConfig, { requestTimeoutMs: timeoutMs });
  let namespace: k8s.V1Namespace;
  try {
    namespace = await agents.makeApiClient(k8s.CoreV1Api).readNamespace({ name: "kube-system" });
  } catch (error) {
    throw new Error("reading Namespace kube-system (its UID identifies the cluster the stacks belong to)", {
      cause: error,
    });
  } finally {
    agents.destroy();
  }
  const uid = namespace.metadata?.uid;
  if (uid === undefined || uid === "") throw new Error("Namespace kube-system has no metadata.uid");
  return uid;
}
