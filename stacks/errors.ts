/** The errors a stack run ends with that callers tell apart. */

/** A stack recording another cluster's identity: this daemon is pointed at the wrong cluster. */
export class ForeignStackError extends Error {
  constructor(stack: string, recorded: string, ours: string) {
    super(
      `stack ${stack} belongs to the cluster whose kube-system Namespace has UID ${recorded}, and this cluster's is ${ours}: ` +
        "refusing to touch it (check --kubeconfig, clusterId and the backend)",
    );
    this.name = "ForeignStackError";
  }
}

/** A run cancelled by its deadline (the operation timeout), told apart from a shutdown. */
export class OperationTimeoutError extends Error {
  constructor(stack: string, operation: string, ms: number, options: { cause: unknown }) {
    super(`${operation} of stack ${stack} did not finish within ${Math.round(ms / 1000)} s and was cancelled`, options);
    this.name = "OperationTimeoutError";
  }
}

export class StackBusyError extends Error {
  constructor(stack: string, options: { cause: unknown }) {
    super(`stack ${stack} is locked by another update`, options);
    this.name = "StackBusyError";
  }
}
