export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

export function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}

export function elapsedMs(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** A bench file run on its own (`node dist/bench/<file>.js`): its figures as one JSON line, a failure as exit 1. */
export function runAlone(bench: () => Promise<object>): void {
  bench().then(
    (figures) => process.stdout.write(`${JSON.stringify(figures)}\n`),
    (error: unknown) => {
      process.stderr.write(
        `bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      );
      process.exitCode = 1;
    },
  );
}
