import type { IpProvider, ProviderAnswer } from '../types.ts';

export interface ProviderFailure {
  provider: string;
  error: string;
}

export interface ProviderRun {
  answers: ProviderAnswer[];
  failures: ProviderFailure[];
}

/**
 * Asks every paid provider about `ip` at once, each under its own `AbortSignal.timeout(timeoutMs)`.
 *
 * Never rejects because of a provider: a timeout, an HTTP error (ProviderHttpError carries the
 * status) or any thrown value becomes one `failures` entry, and the others still answer. A provider
 * that ignores its signal is abandoned at the deadline all the same (its late answer is dropped), so
 * one slow adapter cannot hold the lookup past `timeoutMs`. A provider with nothing to say (null) is
 * neither an answer nor a failure. Each answer is stamped with its provider's `name`, the key consensus
 * weights by, so an adapter cannot borrow another provider's weight. Both lists follow the order of
 * `providers`.
 */
export async function queryProviders(providers: IpProvider[], ip: string, opts: { timeoutMs: number }): Promise<ProviderRun> {
  const { timeoutMs } = opts;
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new RangeError(`timeoutMs must be a positive integer, got ${timeoutMs}`);

  const outcomes = await Promise.all(providers.map((provider) => ask(provider, ip, timeoutMs)));
  const answers: ProviderAnswer[] = [];
  const failures: ProviderFailure[] = [];
  for (const outcome of outcomes) {
    if (outcome.kind === 'answer') answers.push(outcome.answer);
    else if (outcome.kind === 'failure') failures.push(outcome.failure);
  }
  return { answers, failures };
}

type Outcome = { kind: 'answer'; answer: ProviderAnswer } | { kind: 'none' } | { kind: 'failure'; failure: ProviderFailure };

async function ask(provider: IpProvider, ip: string, timeoutMs: number): Promise<Outcome> {
  const signal = AbortSignal.timeout(timeoutMs);
  const deadline = rejectOnAbort(signal);
  try {
    const answer = await Promise.race([Promise.resolve().then(() => provider.lookup(ip, signal)), deadline.promise]);
    return !answer ? { kind: 'none' } : { kind: 'answer', answer: { ...answer, provider: provider.name } };
  } catch (err) {
    const error = signal.aborted ? `timed out after ${timeoutMs} ms` : describe(err);
    return { kind: 'failure', failure: { provider: provider.name, error } };
  } finally {
    deadline.dispose();
  }
}

function rejectOnAbort(signal: AbortSignal): { promise: Promise<never>; dispose(): void } {
  let onAbort = (): void => {};
  const promise = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  // The race may be won by the provider; the losing deadline must not surface as an unhandled rejection.
  promise.catch(() => {});
  return { promise, dispose: () => signal.removeEventListener('abort', onAbort) };
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.message || err.name;
  return typeof err === 'string' ? err : 'provider failed with a non-error value';
}
