/**
 * `npm run bench -- <name>` runs one bench. Each bench is imported lazily so one bench's set-up (and
 * failures) never touch another's; adding a bench is one line in `benches`.
 *
 * `npm run bench` (no argument) runs every bench, each in a process of its own, and writes
 * bench/REPORT.md from the figures they print (see report.ts).
 */
const benches: Record<string, () => Promise<{ run(): Promise<void> }>> = {
  'pool-state': () => import('./pool-state.ts'),
  'ip-to-company': () => import('./ip-to-company.ts'),
  consume: () => import('./consume.ts'),
  webhooks: () => import('./webhooks.ts'),
  ip: () => import('./ip.ts'),
  caches: () => import('./caches.ts'),
  collect: () => import('./collect.ts'),
  visitors: () => import('./visitors.ts'),
  'identification-list': () => import('./identification-list.ts'),
  rollover: () => import('./rollover.ts'),
  startup: () => import('./startup.ts'),
  soak: () => import('./soak.ts'),
  storage: () => import('./storage.ts'),
  identification: () => import('./identification.ts'),
};

async function main() {
  const name = process.argv[2];
  if (name === undefined) {
    const { runAll } = await import('./report.ts');
    process.exitCode = await runAll(Object.keys(benches));
    return;
  }
  const load = benches[name];
  if (!load) {
    // A typo deserves one line, not a stack trace.
    process.stderr.write(`bench: unknown bench "${name}" (known: ${Object.keys(benches).join(', ')})\n`);
    process.exit(2);
  }
  await (await load()).run();
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
