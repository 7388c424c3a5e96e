/**
 * Optimistic concurrency, once: read, compute, write with the resourceVersion read; on a conflict
 * (409) read again and recompute, a bounded number of times (client-go's retry.RetryOnConflict).
 */

export class ConflictRetriesExhaustedError extends Error {
  override readonly name = "ConflictRetriesExhaustedError";
}

export type ConflictAttempt<T> = { kind: "done"; value: T } | { kind: "conflict"; error: unknown };

/**
 * Runs `attempt` until it is done, at most `attempts` times. `attempt` reads the object itself, so
 * every retry starts from what the apiserver holds now. `what` names the write in the error.
 */
export async function retryOnConflict<T>(
  what: string,
  attempts: number,
  attempt: (attempt: number) => Promise<ConflictAttempt<T>>,
): Promise<T> {
  let last: unknown;
  for (let number = 1; number <= attempts; number++) {
    const outcome = await attempt(number);
    if (outcome.kind === "done") return outcome.value;
    last = outcome.error;
  }
  throw new ConflictRetriesExhaustedError(`${what}: conflicts on ${attempts} attempts`, { cause: last });
}
