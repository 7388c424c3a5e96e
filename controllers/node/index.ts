// Public surface of the node controller for the daemon.

export { ComputeClient, ComputeError, computeClientFromConfig, type ComputeApi, type Instance } from "../../gce";
export { NODE_CONFIG_KEYS, parseNodeConfig, type NodeConfig } from "./config";
export { NodeController, type NodeControllerOptions, type RouteStatusSource } from "./controller";
export type { RouteStatus } from "./decide";
export { KubeNodeApi, type NodeApi } from "./kube";
