/**
 * `npm run bench -- <name>`. Each bench is imported lazily so one bench's set-up (and failures)
 * never touch another's; adding a bench is one line in `benches`.
 */
const benches: Record<string, () => Promise<{ run(): Promise<void> }>> = {
  'pool-state': () => import('./pool-state.ts'),
  consume: () => import('./consume.ts'),
  webhooks: () => import('./webhooks.ts'),
  ip: () => import('./ip.ts'),
  caches: () => import('./caches.ts'),
  collect: () => import('./collect.ts'),
  visitors: () => import('./visitors.ts'),
};

async function main() {
  const name = process.argv[2];
  const load = name === undefined ? undefined : benches[name];
  if (!load) {
    const known = Object.keys(benches).join(', ');
    // A typo deserves one line, not a stack trace.
    process.stderr.write(name ? `bench: unknown bench "${name}" (known: ${known})\n` : `usage: npm run bench -- <name> (one of: ${known})\n`);
    process.exit(2);
  }
  await (await load()).run();
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
