import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['tests/**/*.test.ts'],
    exclude: ['tests/deno/**', 'node_modules/**'],
    // Answers fetched from the servers tests start are held to the OpenAPI document too.
    setupFiles: ['tests/support/fetch-check.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // PGlite boots a WASM Postgres per suite; two workers match the two cores we have.
    maxWorkers: 2,
  },
});
