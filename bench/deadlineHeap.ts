/**
 * What a call's deadline keeps after it is over, under one long-lived signal (the daemon's): the
 * live heap after GC over DCCM_BENCH_DEADLINE_CALLS calls (320,000) made with
 * AbortSignal.any([signal, AbortSignal.timeout]) and with runtime/deadline.ts, as bytes per call.
 * Usage: node --expose-gc dist/bench/deadlineHeap.js
 */
import { deadline } from "../runtime/deadline";
import { round, runAlone } from "./stats";

async function settledHeap(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error("bench: run node with --expose-gc");
  // Finalizers and timers of the calls run between collections.
  for (let i = 0; i < 3; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    gc();
  }
  return process.memoryUsage().heapUsed;
}

/** The long-lived signals of the measures, kept reachable as a daemon's is until it stops. */
const daemons: AbortController[] = [];

async function bytesPerCall(calls: number, call: (signal: AbortSignal) => void): Promise<number> {
  const daemon = new AbortController();
  daemons.push(daemon);
  const before = await settledHeap();
  for (let i = 0; i < calls; i++) {
    call(daemon.signal);
    // Let the event loop turn now and then, as calls of a daemon do.
    if (i % 1000 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  return ((await settledHeap()) - before) / calls;
}

export async function benchDeadlineHeap(
  calls = Number(process.env.DCCM_BENCH_DEADLINE_CALLS ?? 320_000),
): Promise<Record<string, number>> {
  const any = await bytesPerCall(calls, (signal) => {
    // The call is over at once: whatever stays is what the source signal keeps.
    AbortSignal.any([signal, AbortSignal.timeout(60_000)]);
  });
  const ours = await bytesPerCall(calls, (signal) => deadline(signal, 60_000).done());
  return {
    deadline_calls: calls,
    deadline_abortSignalAnyBytesPerCall: round(any, 1),
    deadline_ownBytesPerCall: round(ours, 1),
  };
}

if (require.main === module) runAlone(() => benchDeadlineHeap());
