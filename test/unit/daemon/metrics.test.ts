/** daemon/metrics.ts: the heap gauges DccmHeapGrowing reads. */
import * as assert from "node:assert/strict";
import * as fc from "fast-check";
import * as prom from "prom-client";
import { HEAP_SAMPLES, HeapMetrics, heapGrowthPer1000Runs, type HeapSample } from "../../../daemon/metrics";

const MB = 1024 * 1024;

describe("heapGrowthPer1000Runs (least squares, bytes per 1,000 engine runs)", () => {
  const cases: { name: string; samples: HeapSample[]; want: number | undefined }[] = [
    { name: "no sample", samples: [], want: undefined },
    { name: "one sample", samples: [{ runs: 500, heapBytes: 80 * MB }], want: undefined },
    {
      name: "samples spanning fewer than 100 runs",
      samples: [
        { runs: 10, heapBytes: 70 * MB },
        { runs: 109, heapBytes: 90 * MB },
      ],
      want: undefined,
    },
    {
      name: "flat",
      samples: [
        { runs: 100, heapBytes: 70 * MB },
        { runs: 400, heapBytes: 70 * MB },
      ],
      want: 0,
    },
    {
      name: "30 KB per run: 30,000 KB per 1,000",
      samples: [
        { runs: 100, heapBytes: 70_000_000 },
        { runs: 200, heapBytes: 73_000_000 },
        { runs: 300, heapBytes: 76_000_000 },
      ],
      want: 30_000_000,
    },
    {
      name: "noise around a line: the fit, not the last two points",
      samples: [
        { runs: 0, heapBytes: 1_000 },
        { runs: 100, heapBytes: 3_000 },
        { runs: 200, heapBytes: 2_000 },
        { runs: 300, heapBytes: 4_000 },
      ],
      want: 8_000,
    },
  ];
  for (const { name, samples, want } of cases) it(name, () => assert.equal(heapGrowthPer1000Runs(samples), want));

  it("recovers the slope of any line over runs spanning 100 or more", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -1000, max: 1000 }),
        fc.integer({ min: 0, max: 1e8 }),
        fc.uniqueArray(fc.integer({ min: 0, max: 100_000 }), { minLength: 2, maxLength: 50 }),
        (bytesPerRun, base, runs) => {
          fc.pre(Math.max(...runs) - Math.min(...runs) >= 100);
          const growth = heapGrowthPer1000Runs(runs.map((r) => ({ runs: r, heapBytes: base + bytesPerRun * r })));
          assert.ok(
            growth !== undefined && Math.abs(growth - bytesPerRun * 1000) < 1e-3,
            `${growth} vs ${bytesPerRun * 1000}`,
          );
        },
      ),
    );
  });
});

describe("HeapMetrics", () => {
  async function values(registry: prom.Registry): Promise<Record<string, number[]>> {
    const out: Record<string, number[]> = {};
    for (const metric of await registry.getMetricsAsJSON())
      out[metric.name] = (metric.values as { value: number }[]).map((value) => value.value);
    return out;
  }

  it("the heap after the last major GC, and its growth once the samples span 100 runs (0 before)", async () => {
    const registry = new prom.Registry();
    const heap = new HeapMetrics(registry, () => Promise.resolve(0));
    heap.record({ runs: 0, heapBytes: 70_000_000 });
    heap.record({ runs: 50, heapBytes: 71_000_000 });
    assert.deepEqual(await values(registry), {
      dccm_heap_after_gc_bytes: [71_000_000],
      dccm_heap_growth_bytes_per_1000_runs: [0],
      dccm_heap_limit_bytes: [0],
    });
    heap.record({ runs: 100, heapBytes: 72_000_000 });
    assert.deepEqual(await values(registry), {
      dccm_heap_after_gc_bytes: [72_000_000],
      dccm_heap_growth_bytes_per_1000_runs: [20_000_000],
      dccm_heap_limit_bytes: [0],
    });
  });

  it(`fits the growth over the last ${HEAP_SAMPLES} samples: an old rise (start-up) no longer counts`, async () => {
    const registry = new prom.Registry();
    const heap = new HeapMetrics(registry, () => Promise.resolve(0));
    heap.record({ runs: 0, heapBytes: 10_000_000 });
    for (let i = 1; i <= HEAP_SAMPLES; i++) heap.record({ runs: i * 10, heapBytes: 70_000_000 });
    assert.deepEqual((await values(registry)).dccm_heap_growth_bytes_per_1000_runs, [0]);
  });
});
