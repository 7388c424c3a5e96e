/** Reading the daemon's Prometheus metrics in tests, unit and end-to-end alike. */
import type * as prom from "prom-client";

/** The value of `metric` at the series whose labels include `labels`; 0 when that series was never touched. */
export async function counter(
  registry: prom.Registry,
  metric: string,
  labels: Record<string, string>,
): Promise<number> {
  const found = registry.getSingleMetric(metric);
  if (found === undefined) throw new Error(`no metric ${metric}`);
  const data = await found.get();
  const entry = data.values.find((value) =>
    Object.entries(labels).every(([key, wanted]) => String(value.labels[key]) === wanted),
  );
  return entry?.value ?? 0;
}
