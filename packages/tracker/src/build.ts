import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { generatedModule } from '../../host/src/generated-module.ts';

/**
 * `npm run build:tracker`: bundles tracker.ts into one minified IIFE and writes it into core as a
 * generated module, committed, so `npm start` and the Deno edge functions serve it without a build
 * step. tests/tracker-script.test.ts fails when the committed module is not what this produces.
 *
 * The script reads its configuration from one free identifier, CONFIG_PLACEHOLDER, which the
 * minifier leaves alone; the module exports the text before and after it, and the server puts the
 * configuration's JSON between the two (core/src/tracker/serve-script.ts).
 */
export const BUILD_COMMAND = 'npm run build:tracker';
export const CONFIG_PLACEHOLDER = '__SIGHTLINE_CONFIG__';
export const GENERATED_FILE = fileURLToPath(new URL('../../core/src/tracker/script.generated.ts', import.meta.url));
const SOURCE = fileURLToPath(new URL('./tracker.ts', import.meta.url));

/** The browser script, minified, with the placeholder where the configuration goes. */
export async function bundleTracker(): Promise<string> {
  const result = await build({
    entryPoints: [SOURCE],
    bundle: true,
    write: false,
    minify: true,
    format: 'iife',
    // keepalive fetch, optional chaining: every browser that has the one has the other.
    target: 'es2020',
    legalComments: 'none',
    charset: 'ascii',
    logLevel: 'warning',
  });
  const [out] = result.outputFiles;
  if (!out) throw new Error('esbuild produced no output');
  return out.text.trimEnd();
}

/** The generated module's text, formatted as `biome check` wants it (so the lint passes on it). */
export async function generateTrackerModule(): Promise<string> {
  const script = await bundleTracker();
  const parts = script.split(CONFIG_PLACEHOLDER);
  if (parts.length !== 2) throw new Error(`the bundle must name ${CONFIG_PLACEHOLDER} exactly once; it does ${parts.length - 1} times`);
  const [head, tail] = parts as [string, string];
  return generatedModule({
    command: BUILD_COMMAND,
    from: 'packages/tracker/src/tracker.ts',
    file: GENERATED_FILE,
    constants: [
      { doc: 'The minified tracker up to where its configuration goes.', name: 'TRACKER_SCRIPT_HEAD', value: head },
      { doc: 'The minified tracker after its configuration.', name: 'TRACKER_SCRIPT_TAIL', value: tail },
    ],
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await writeFile(GENERATED_FILE, await generateTrackerModule());
  process.stdout.write(`wrote ${GENERATED_FILE}\n`);
}
