import path from 'node:path';
import { prepareSupabaseDeploy, SUPABASE_DIR } from './supabase-layout.ts';

/**
 * `npm run build:supabase`: prepares supabase/ for `supabase db push` and `supabase functions
 * deploy` (supabase-layout.ts). It changes committed files only when they were stale, and then says
 * so, because those changes belong in a commit rather than only in a deploy.
 */
const show = (file: string) => path.relative(process.cwd(), file) || '.';

try {
  const prepared = await prepareSupabaseDeploy();
  const out: string[] = [];
  if (prepared.changed.length === 0) out.push('supabase/functions entry points and config.toml: up to date');
  else out.push(`regenerated from functions/index.ts (commit these):`, ...prepared.changed.map((f) => `  ${show(path.join(SUPABASE_DIR, f))}`));
  out.push(`copied ${prepared.migrations.length} migrations to ${show(path.join(SUPABASE_DIR, 'migrations'))}`);
  for (const f of prepared.edgeData) out.push(`wrote ${show(f.file)} (${(f.bytes / 1e6).toFixed(1)} MB)`);
  process.stdout.write(`${out.join('\n')}\n`);
} catch (err) {
  process.stderr.write(`build:supabase: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
