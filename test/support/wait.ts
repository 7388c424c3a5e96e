/** Polls a condition that has no event to await (GCE emulator state, metrics), within a bound. */
export async function eventually<T>(
  what: string | (() => string),
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 120_000,
  intervalMs = 200,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === "string" ? what : what()}`, {
        cause: lastError,
      });
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
