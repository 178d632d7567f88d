/**
 * Which of our source files a cached ip-to-company runs code in, on the Node host.
 *
 *   npx tsx bench/cached-lookup-files.ts [checkout] [requests]
 *
 * `checkout` defaults to this one; another (say `git archive <commit> | tar -x -C /tmp/before`, with
 * a node_modules whose @sightline links point into it) counts that version the same way.
 *
 * Starts the Node host in this process as `npm start` composes it (buildHostDeps: PGlite in a fresh
 * data directory, the shipped IP data, no Redis; createHostApp behind createNodeServer on
 * 127.0.0.1), creates an account with credits, looks 17.253.144.10 up once (the miss that fills the
 * cache) and a few times more (warm), waits for the write-behind flushes, then takes V8's precise
 * coverage (call counts, which the inspector resets at each take) around `requests` sequential
 * cached lookups over HTTP, right after three more (so the key is in the auth cache, and the
 * write-behind flush they arm falls after the window). A file counts when one of its functions was
 * called in that window; node_modules and Node's internals are not counted. An idle window of the
 * same length, taken just before, shows what runs with no request (should be nothing; on a loaded
 * machine a late flush may land in it, and the run is worth repeating).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(process.argv[2] ?? '.');
const requests = Number(process.argv[3] ?? 20);
const self = fileURLToPath(import.meta.url);
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });

type Coverage = { result: { url: string; functions: { functionName: string; ranges: { count: number }[] }[] }[] };
async function take(): Promise<Map<string, string[]>> {
  const { result } = (await session.post('Profiler.takePreciseCoverage')) as unknown as Coverage;
  const files = new Map<string, string[]>();
  for (const script of result) {
    if (!script.url.startsWith('file://')) continue;
    const file = fileURLToPath(script.url);
    if (!file.startsWith(`${root}/`) || file.includes('/node_modules/') || file === self) continue;
    const called = script.functions.filter((f) => (f.ranges[0]?.count ?? 0) > 0).map((f) => f.functionName || '(anonymous)');
    if (called.length) files.set(path.relative(root, file), called);
  }
  return files;
}

// Typed as this checkout's; the names used here are the same in the version counted before.
const core = (await import(pathToFileURL(`${root}/packages/core/src/index.ts`).href)) as typeof import('../packages/core/src/index.ts');
const host = (await import(pathToFileURL(`${root}/packages/host/src/index.ts`).href)) as typeof import('../packages/host/src/index.ts');
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'lookup-files-'));
const env = core.parseEnv({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', IP_DATA: '1', DEMO_PARTNER: '0' });
const deps = await host.buildHostDeps(env);
const app = host.createHostApp(deps);
const server = host.createNodeServer({ fetch: app.fetch, log: deps.log, allowedMethods: host.allowedMethodsAt });
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const port = (server.address() as { port: number }).port;
const account = (await host.runOperatorCommand(deps, 'create-account', { name: 'Lookup files', domain: 'lookup-files.example.com' })) as {
  account_id: string;
  key: string;
};
await host.runOperatorCommand(deps, 'grant-credits', { 'account-id': account.account_id, credits: '1000' });
const lookUp = async () => {
  const res = await fetch(`http://127.0.0.1:${port}/functions/v1/ip-to-company`, {
    method: 'POST',
    headers: { 'x-access-key': account.key, 'content-type': 'application/json' },
    body: JSON.stringify({ ip: '17.253.144.10' }),
  });
  return (await res.json()) as { cached?: boolean; domain?: string };
};
const first = await lookUp();
for (let i = 0; i < 50; i++) await lookUp();
await new Promise((r) => setTimeout(r, 2500));
await take();
const t0 = performance.now();
await new Promise((r) => setTimeout(r, 100));
const idle = await take();
// The flushes above may have invalidated the auth cache (a notification): a few lookups make the key
// one this process has seen again; their own flush is due a second later, after the window.
for (let i = 0; i < 3; i++) await lookUp();
await take();
const answers = [];
for (let i = 0; i < requests; i++) answers.push(await lookUp());
const busy = await take();
const ms = performance.now() - t0;
if (first.cached !== false || answers.some((a) => a.cached !== true || a.domain !== 'apple.com'))
  throw new Error(`not a cached answer: ${JSON.stringify(answers[0])}`);
const list = (m: Map<string, string[]>) => [...m].map(([f, fns]) => `  ${f}  (${fns.join(', ')})`).join('\n');
process.stdout.write(`idle window: ${idle.size} files\n${list(idle)}\n`);
process.stdout.write(`${requests} cached lookups (${ms.toFixed(0)} ms): ${busy.size} files\n${list(busy)}\n`);
server.close();
await deps.close();
await rm(dataDir, { recursive: true, force: true });
process.exit(0);
