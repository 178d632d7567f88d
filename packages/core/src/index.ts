/**
 * The core package's entry: each folder's public verbs and types, from the folder's own index.ts.
 * Layers, lowest first (docs/architecture.md; tests/core-layers.test.ts holds them): kernel (leaf
 * types and helpers), drivers (database and Redis), the domain folders, http, compose (the
 * composition of dependencies). A folder imports only from its own layer's files or lower ones.
 */

export * from './account/index.ts';
export * from './ai/index.ts';
export * from './auth/index.ts';
export * from './compose/index.ts';
export * from './drivers/index.ts';
export * from './http/index.ts';
export * from './icp/index.ts';
export * from './integrations/index.ts';
export * from './ip/index.ts';
export * from './kernel/index.ts';
export * from './ledger/index.ts';
export * from './lifecycle/index.ts';
export * from './messaging/index.ts';
export * from './operator/index.ts';
export * from './partner/index.ts';
export * from './payments/index.ts';
export * from './research/index.ts';
export * from './tracker/index.ts';
export * from './webhooks/index.ts';
