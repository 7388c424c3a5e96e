/** Route status for the node controller, from the cluster stack's last run. */
import type { RouteStatus, RouteStatusSource } from "../node";
import type { ClusterOutputs } from "./plan";

export class ClusterRouteStatus implements RouteStatusSource {
  private routes: Record<string, string> = {};
  private failure: string | undefined;

  /** Nodes that should have a route (from the desired state): only they can be said to have failed. */
  constructor(private readonly wanted: () => ReadonlySet<string>) {}

  applied(outputs: ClusterOutputs): void {
    this.routes = outputs.routes;
    this.failure = undefined;
  }

  failed(message: string): void {
    this.failure = message;
  }

  routeStatus(nodeName: string): RouteStatus {
    if (this.routes[nodeName] !== undefined) return "created";
    if (this.failure !== undefined && this.wanted().has(nodeName)) return { failed: this.failure };
    return "pending";
  }
}
