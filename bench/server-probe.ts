import { renameSync, writeFileSync } from 'node:fs';
import v8 from 'node:v8';

/**
 * Loaded with `--import` into a server an HTTP bench measures (ours and the processes it is compared
 * with alike), so each side's cost per request comes from the process itself: SIGUSR2 opens a
 * window, the next SIGUSR2 closes it and writes the window's CPU time (every thread of the process:
 * the main thread, the collector's helpers, libuv's pool) and the bytes the V8 heap allocated to
 * BENCH_PROBE_FILE. Without BENCH_PROBE_FILE it does nothing, and while no window is open it costs
 * nothing; inside one, the only work it adds is the GC profiler's record of each collection.
 *
 * V8 gives no allocation counter, so allocation is read from the collections: the heap only grows
 * by allocation between two collections, so the bytes allocated in a window are each collection's
 * used heap before it minus the previous one's after it (the window's start for the first), plus
 * the growth since the last. Buffers' backing stores live outside the heap and are not counted.
 */
interface Window {
  cpu: NodeJS.CpuUsage;
  used: number;
  profiler: v8.GCProfiler;
}

/** The runtime's heap statistics in a GC profile are camelCase, whatever @types/node says. */
const usedOf = (h: unknown): number => {
  const s = h as { usedHeapSize?: number; used_heap_size?: number };
  return s.usedHeapSize ?? s.used_heap_size ?? 0;
};

const file = process.env.BENCH_PROBE_FILE;
if (file) {
  let seq = 0;
  let open: Window | undefined;
  // Written whole and renamed, so the bench never reads half a file.
  const write = (data: Record<string, unknown>) => {
    writeFileSync(`${file}.tmp`, JSON.stringify({ seq: ++seq, ...data }));
    renameSync(`${file}.tmp`, file);
  };
  process.on('SIGUSR2', () => {
    if (!open) {
      const profiler = new v8.GCProfiler();
      profiler.start();
      open = { cpu: process.cpuUsage(), used: v8.getHeapStatistics().used_heap_size, profiler };
      write({ open: true });
      return;
    }
    const { cpu, used, profiler } = open;
    open = undefined;
    const spent = process.cpuUsage(cpu);
    const { statistics } = profiler.stop();
    let allocated = 0;
    let last = used;
    for (const gc of statistics) {
      allocated += usedOf(gc.beforeGC.heapStatistics) - last;
      last = usedOf(gc.afterGC.heapStatistics);
    }
    allocated += v8.getHeapStatistics().used_heap_size - last;
    write({ open: false, cpuMicros: spent.user + spent.system, allocatedBytes: allocated, collections: statistics.length });
  });
}
