export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` every `everyMs` until it holds; past `timeoutMs`, fails naming `what`. */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  { timeoutMs = 8_000, everyMs = 25 }: { timeoutMs?: number; everyMs?: number } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/**
 * Limits count per wall-clock minute: a test that fills a window and expects the next request to
 * be refused starts clear of a window's end, so the window cannot change under it.
 */
export async function clearOfWindowEnd(needMs = 5_000): Promise<void> {
  const intoMinute = Date.now() % 60_000;
  if (60_000 - intoMinute < needMs) await sleep(60_000 - intoMinute + 100);
}
