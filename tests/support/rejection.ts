import { expect } from 'vitest';

/** What `p` rejects with, checked to be a `type`: a `p` that resolves fails the test. */
export async function rejection<E extends Error>(p: Promise<unknown>, type: abstract new (...args: never[]) => E): Promise<E> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(type);
  return err as E;
}
