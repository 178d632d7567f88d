import { createLogger, didNothing, type ScheduledJob, startScheduler } from '@sightline/host';
import { describe, expect, it, vi } from 'vitest';
import { capturingLogger } from './support/log.ts';

/**
 * The log speaks when something happened: a scheduled job that found nothing to do logs at debug
 * (shown only with LOG_LEVEL=debug), one that did work at info, one that failed at error.
 */

/** Runs each job once through the scheduler and returns what it logged. */
async function logOfOneRun(results: unknown[]) {
  const { log, lines } = capturingLogger();
  vi.useFakeTimers();
  try {
    const jobs: ScheduledJob[] = results.map((result, i) => ({
      name: `job-${i}`,
      everyMs: 60_000,
      run: async () => {
        if (result instanceof Error) throw result;
        return result;
      },
    }));
    const scheduler = startScheduler(jobs, log, 10);
    await vi.advanceTimersByTimeAsync(10);
    await scheduler.stop();
  } finally {
    vi.useRealTimers();
  }
  return lines;
}

describe('a scheduled job’s log line', () => {
  it('is debug when the job did nothing: every count 0, every list empty, at any depth', async () => {
    const nothing = [{ children: 0, pools: 0 }, { visits: { claimed: 0, events: [] }, identifications: { settled: 0 } }, undefined];
    const lines = await logOfOneRun(nothing);
    expect(lines.map((l) => [l.level, l.msg])).toEqual(nothing.map(() => ['debug', 'scheduled job finished']));
    expect(lines[0]?.fields).toMatchObject({ job: 'job-0', result: { children: 0, pools: 0 } });
  });

  it('is info when the job did work, however deep the count, and error when it failed', async () => {
    const lines = await logOfOneRun([{ children: 1, pools: 0 }, { visits: { claimed: 0 }, identifications: { settled: 3 } }, new Error('boom')]);
    expect(lines.map((l) => [l.fields?.job, l.level])).toEqual([
      ['job-0', 'info'],
      ['job-1', 'info'],
      ['job-2', 'error'],
    ]);
  });

  it('decides “nothing” from the result alone', () => {
    expect(didNothing({ a: 0, b: [], c: { d: 0, e: false }, name: 'x' })).toBe(true);
    expect(didNothing({ a: 0, b: [1] })).toBe(false);
    expect(didNothing({ a: { b: { c: 2 } } })).toBe(false);
    expect(didNothing(true)).toBe(false);
  });
});

describe('the host logger', () => {
  it('writes debug lines only at LOG_LEVEL=debug', () => {
    const written: string[] = [];
    createLogger('info', (l) => written.push(l)).debug('quiet', { n: 0 });
    expect(written).toEqual([]);
    createLogger('debug', (l) => written.push(l)).debug('spoken', { n: 0 });
    expect(written.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
      { time: expect.any(String) as unknown, level: 'debug', msg: 'spoken', n: 0 },
    ]);
  });
});
