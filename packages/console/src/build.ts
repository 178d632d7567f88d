import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { generatedModule } from '../../host/src/generated-module.ts';
import { consoleHtml } from './serve.ts';

/**
 * `npm run build:console`: bundles the console (app.tsx with Preact, styles.css) into one minified
 * script and one stylesheet, and writes them into assets.generated.ts, committed, so `npm start`
 * serves /console on a fresh clone without a build step (as the tracker's script is).
 * tests/console-build.test.ts fails when the committed module is not what this produces.
 *
 * `npm run build:console -- --out <dir> [--api <base_url>]` writes the same console as static
 * files (index.html, app.js, app.css) for any static host; `--api` is the one setting: where the
 * functions are (default `/functions/v1`, the same origin).
 */
export const BUILD_COMMAND = 'npm run build:console';
export const GENERATED_FILE = fileURLToPath(new URL('./assets.generated.ts', import.meta.url));
const ENTRY = fileURLToPath(new URL('./app.tsx', import.meta.url));
const STYLES = fileURLToPath(new URL('./styles.css', import.meta.url));

export interface ConsoleBundle {
  js: string;
  css: string;
}

export async function bundleConsole(): Promise<ConsoleBundle> {
  const common = { bundle: true, write: false, minify: true, legalComments: 'none', charset: 'utf8', logLevel: 'warning' } as const;
  const [script, style] = await Promise.all([
    build({
      ...common,
      entryPoints: [ENTRY],
      format: 'iife',
      // Browsers of the last few years: optional chaining, Intl, fetch.
      target: 'es2020',
      jsx: 'automatic',
      jsxImportSource: 'preact',
    }),
    build({ ...common, entryPoints: [STYLES], target: ['chrome100', 'firefox100', 'safari15'] }),
  ]);
  const js = script.outputFiles[0]?.text.trimEnd();
  const css = style.outputFiles[0]?.text.trimEnd();
  if (js === undefined || css === undefined) throw new Error('esbuild produced no output');
  return { js, css };
}

/** The generated module's text, formatted as `biome check` wants it. */
export async function generateConsoleModule(): Promise<string> {
  const { js, css } = await bundleConsole();
  return generatedModule({
    command: BUILD_COMMAND,
    from: 'packages/console/src',
    file: GENERATED_FILE,
    constants: [
      { doc: 'The console script, minified (Preact included).', name: 'CONSOLE_JS', value: js },
      { doc: 'The console stylesheet, minified.', name: 'CONSOLE_CSS', value: css },
    ],
  });
}

/** The console as static files in `dir`, talking to the functions at `apiBase`. */
export async function writeStaticConsole(dir: string, apiBase: string): Promise<string[]> {
  const { js, css } = await bundleConsole();
  await mkdir(dir, { recursive: true });
  const files = { 'index.html': consoleHtml({ apiBase, js, css }), 'app.js': js, 'app.css': css };
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, name), text);
  return Object.keys(files).map((f) => path.join(dir, f));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({ options: { out: { type: 'string' }, api: { type: 'string', default: '/functions/v1' } } });
  if (values.out) {
    const files = await writeStaticConsole(path.resolve(values.out), values.api);
    process.stdout.write(`wrote ${files.join(', ')}\n`);
  } else {
    await writeFile(GENERATED_FILE, await generateConsoleModule());
    process.stdout.write(`wrote ${GENERATED_FILE}\n`);
  }
}
