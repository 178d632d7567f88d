import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build, type Plugin } from 'esbuild';

/**
 * `npm run build`: the Node host as plain JavaScript, for production. `npm start` runs the sources
 * through tsx, whose loader thread and on-the-fly compilation cost about 40 MB of memory and a
 * slower start; `npm run serve` runs this output with plain `node`. Our own packages are bundled in
 * (they are TypeScript); every npm dependency stays an ordinary import from node_modules, except
 * postgres.js, bundled with its queue replaced (postgres-queue.ts says why).
 */
export const DIST_DIR = fileURLToPath(new URL('../dist/', import.meta.url));
const REPO_ROOT = new URL('../../../', import.meta.url);

const POSTGRES_QUEUE = fileURLToPath(new URL('./postgres-queue.ts', import.meta.url));

/** postgres.js's `./queue.js`, imported by its pool and its connections, becomes postgres-queue.ts. */
const postgresQueue: Plugin = {
  name: 'postgres-queue',
  setup(b) {
    b.onResolve({ filter: /^\.\/queue\.js$/ }, (args) =>
      /[\\/]node_modules[\\/]postgres[\\/]src[\\/]/.test(args.importer) ? { path: POSTGRES_QUEUE } : undefined,
    );
  },
};

export async function buildHost(
  entries: Record<string, string> = { main: 'packages/host/src/main.ts', admin: 'packages/host/src/admin.ts' },
  outdir = DIST_DIR,
): Promise<string[]> {
  const pkg = JSON.parse(await readFile(new URL('package.json', REPO_ROOT), 'utf8')) as {
    dependencies?: Record<string, string>;
    devDependencies?: Record<string, string>;
  };
  const external = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies })
    .filter((name) => name !== 'postgres')
    .flatMap((name) => [name, `${name}/*`]);
  const root = fileURLToPath(REPO_ROOT);
  const result = await build({
    absWorkingDir: root,
    entryPoints: Object.fromEntries(Object.entries(entries).map(([name, file]) => [name, file])),
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external,
    sourcemap: 'linked',
    metafile: true,
    logLevel: 'warning',
    plugins: [postgresQueue],
  });
  return Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.mjs'));
}

// Run as a script (npm run build), not when bundled into something that imports it (a bundle's
// import.meta.url is the bundle, which would match its own argv[1]).
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1] && import.meta.url.endsWith('/build.ts')) {
  buildHost().then(
    (files) => process.stdout.write(`built ${files.join(', ')}\n`),
    (err: unknown) => {
      process.stderr.write(`build: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}
