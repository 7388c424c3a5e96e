/**
 * The Pulumi project dccm's stacks live in: the one name every reader and runner of the backend
 * must agree on, or they would see each other's backend as empty.
 */

export const PROJECT_NAME = "dccm";

/**
 * The daemon's Pulumi project is per cluster: a daemon pointed at the wrong cluster with a shared
 * backend then sees no stacks of the other cluster, so it can never destroy them as orphans.
 */
export function clusterProjectName(clusterId: string): string {
  return `${PROJECT_NAME}-${clusterId}`;
}
