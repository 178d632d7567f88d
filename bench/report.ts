import { execFileSync, spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { type Figure, machineLine, meetsGoal, setting } from './lib.ts';

/**
 * `npm run bench` with no argument: every bench in a process of its own (one bench's heap, pools
 * and leftovers never weigh on the next), BENCH_RUNS times over (default 1), its output shown as it
 * runs and its figures (the JSON lines it prints last) collected into bench/REPORT.md, each beside
 * its baseline from the same run. The HTTP benches that can run on the embedded default run a
 * second time without DATABASE_URL, which is where `npm start`'s figures come from.
 */
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const REPORT = fileURLToPath(new URL('./REPORT.md', import.meta.url));
/** Where the hand-written findings start in REPORT.md; everything from it on survives a new run. */
const FINDINGS_HEADING = '## Findings behind the figures';
/** Benches whose server can be `npm start` on the embedded default as well. */
const ALSO_EMBEDDED = new Set(['pool-state', 'ip-to-company']);

interface BenchRun {
  bench: string;
  database: 'postgres' | 'embedded';
  run: number;
  code: number | null;
  seconds: number;
  figures: Figure[];
  tail: string;
}

function runOne(bench: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; seconds: number; figures: Figure[]; tail: string }> {
  const t0 = performance.now();
  const proc = spawn(process.execPath, ['--import', 'tsx', 'bench/run.ts', bench], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    process.stdout.write(d);
  });
  proc.stderr.on('data', (d: Buffer) => {
    err += d.toString();
    process.stderr.write(d);
  });
  return new Promise((resolve, reject) => {
    proc.once('error', reject);
    proc.once('close', (code) => {
      const figures = out
        .split('\n')
        .filter((l) => l.startsWith('{"bench"'))
        .map((l) => JSON.parse(l) as Figure);
      resolve({ code, seconds: (performance.now() - t0) / 1000, figures, tail: err.trim().split('\n').slice(-3).join('\n') });
    });
  });
}

const fmt = (n: number | null) =>
  n === null || !Number.isFinite(n) ? '—' : Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 10 ? n.toFixed(1) : n.toFixed(2);
const cell = (f: Figure | undefined) => {
  if (!f) return 'not measured';
  const met = meetsGoal(f);
  const mark = met === undefined ? '' : met ? ' ✓' : ' ✗';
  return f.baseline === null
    ? `${fmt(f.ours)}${mark}`
    : `${fmt(f.ours)} vs ${fmt(f.baseline)} (${f.ratio === null ? '—' : `${fmt(f.ratio)}×`})${mark}`;
};

export function renderReport(runs: BenchRun[], meta: { machine: string; date: string; commit: string; postgres: string; runs: number }): string {
  const lines = [
    '# Benchmark report',
    '',
    `Written by \`npm run bench\` (${[...new Set(runs.map((r) => r.bench))].join(', ')}; ${meta.runs} run${meta.runs === 1 ? '' : 's'} each) on ${meta.date}, commit ${meta.commit}.`,
    '',
    `- Machine: ${meta.machine}`,
    `- Database: ${meta.postgres}; the embedded rows are \`npm start\` on PGlite.`,
    '- Each cell: ours vs the baseline measured in the same run, and their ratio; ✓ / ✗ against the goal. Units per row.',
    '',
  ];
  const keys = [...new Set(runs.map((r) => `${r.bench}\u0000${r.database}`))];
  for (const key of keys) {
    const [bench, database] = key.split('\u0000') as [string, BenchRun['database']];
    const mine = runs.filter((r) => r.bench === bench && r.database === database).sort((a, b) => a.run - b.run);
    lines.push(`## ${bench}${database === 'embedded' ? ' (embedded default)' : ''}`, '');
    const failed = mine.filter((r) => r.code !== 0);
    for (const r of failed) lines.push(`Run ${r.run} exited with ${r.code}: \`${r.tail.replace(/`/g, "'").replace(/\n/g, ' ⏎ ')}\``, '');
    const metrics = [...new Set(mine.flatMap((r) => r.figures.map((f) => f.metric)))];
    if (!metrics.length) {
      lines.push('No figures.', '');
      continue;
    }
    lines.push(
      `| metric | unit | goal | ${mine.map((r) => `run ${r.run}`).join(' | ')} | goal met |`,
      `|---|---|---|${mine.map(() => '---|').join('')}---|`,
    );
    for (const metric of metrics) {
      const figs = mine.map((r) => r.figures.find((f) => f.metric === metric));
      const any = figs.find((f) => f !== undefined) as Figure;
      const judged = figs.filter((f): f is Figure => f !== undefined && meetsGoal(f) !== undefined);
      const met = judged.length ? `${judged.filter((f) => meetsGoal(f)).length} of ${judged.length}` : '—';
      lines.push(`| ${metric} | ${any.unit} | ${any.goal ? `\`${any.goal}\`` : 'reported'} | ${figs.map(cell).join(' | ')} | ${met} |`);
    }
    lines.push('', `Wall time per run: ${mine.map((r) => `${r.seconds.toFixed(0)} s`).join(', ')}.`, '');
  }
  return `${lines.join('\n')}\n`;
}

/** The machine's CPU time so far, busy and idle (iowait counts as idle: nothing ran), from /proc/stat. */
async function cpuTimes(): Promise<{ busy: number; idle: number } | undefined> {
  const line = (await readFile('/proc/stat', 'utf8').catch(() => '')).split('\n')[0] ?? '';
  const f = line.split(/\s+/).slice(1, 9).map(Number);
  if (f.length < 8 || f.some((n) => !Number.isFinite(n))) return undefined;
  const idle = (f[3] ?? 0) + (f[4] ?? 0);
  return { busy: f.reduce((a, b) => a + b, 0) - idle, idle };
}

/**
 * Before each bench: what the previous one left behind is not billed to the next. Postgres writes
 * out the previous bench's dirty pages now (CHECKPOINT; otherwise the checkpointer spreads them
 * over the next minutes, beside the next bench's measurement), then this waits until the machine
 * has been at least 85% idle for a second, at most 30 s, and says how long it took.
 */
async function settleMachine(): Promise<string> {
  const started = Date.now();
  const { default: postgresJs } = await import('postgres');
  const sql = postgresJs(process.env.DATABASE_URL as string, { max: 1, onnotice: () => {} });
  try {
    await sql`checkpoint`;
  } finally {
    await sql.end();
  }
  let idleShare = 0;
  while (Date.now() - started < 30_000) {
    const before = await cpuTimes();
    await new Promise((r) => setTimeout(r, 1000));
    const after = await cpuTimes();
    if (!before || !after) return 'settle: /proc/stat unreadable; checkpoint only';
    const idle = after.idle - before.idle;
    idleShare = idle / Math.max(1, idle + after.busy - before.busy);
    if (idleShare >= 0.85)
      return `settle: checkpoint, then quiet (${(idleShare * 100).toFixed(0)}% idle) after ${((Date.now() - started) / 1000).toFixed(1)} s`;
  }
  return `settle: still busy after 30 s (${(idleShare * 100).toFixed(0)}% idle over the last second); measuring anyway`;
}

export async function runAll(names: string[]): Promise<number> {
  if (!process.env.DATABASE_URL) {
    process.stderr.write('npm run bench (every bench) measures on Postgres: set DATABASE_URL (the embedded default is measured beside it)\n');
    return 2;
  }
  const count = setting('BENCH_RUNS', 1);
  const only = process.env.BENCH_ONLY ? process.env.BENCH_ONLY.split(',').map((n) => n.trim()) : names;
  const unknown = only.filter((n) => !names.includes(n));
  if (unknown.length) {
    process.stderr.write(`BENCH_ONLY names unknown benches: ${unknown.join(', ')} (known: ${names.join(', ')})\n`);
    return 2;
  }
  const started = new Date();
  const machine = machineLine();
  const commit = (() => {
    try {
      return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    } catch {
      return 'unknown';
    }
  })();
  const postgres = await (async () => {
    const { default: postgresJs } = await import('postgres');
    const sql = postgresJs(process.env.DATABASE_URL as string, { max: 1, onnotice: () => {} });
    try {
      const [v] = await sql<{ v: string }[]>`select current_setting('server_version') as v`;
      return `Postgres ${v?.v ?? '?'} on the same machine`;
    } finally {
      await sql.end();
    }
  })();
  const meta = { machine, date: `${started.toISOString().slice(0, 16).replace('T', ' ')} UTC`, commit, postgres, runs: count };
  const runs: BenchRun[] = [];
  // The narrative under FINDINGS_HEADING is written by people, not by a run: every rewrite keeps it.
  const previous = await readFile(REPORT, 'utf8').catch(() => '');
  const findingsAt = previous.indexOf(FINDINGS_HEADING);
  const findings = findingsAt >= 0 ? `\n${previous.slice(findingsAt)}` : '';
  for (let run = 1; run <= count; run++) {
    for (const bench of only) {
      const targets: BenchRun['database'][] = ALSO_EMBEDDED.has(bench) ? ['postgres', 'embedded'] : ['postgres'];
      for (const database of targets) {
        process.stdout.write(`\n=== ${bench} (${database}), run ${run} of ${count} ===\n`);
        process.stdout.write(`${await settleMachine()}\n`);
        const env = { ...process.env };
        if (database === 'embedded') delete env.DATABASE_URL;
        runs.push({ bench, database, run, ...(await runOne(bench, env)) });
        // Written after every bench, so an interrupted run keeps what it measured.
        await writeFile(REPORT, `${renderReport(runs, meta).trimEnd()}\n${findings}`);
      }
    }
  }
  process.stdout.write(`\nwrote ${REPORT}\n`);
  return runs.some((r) => r.code !== 0) ? 1 : 0;
}
