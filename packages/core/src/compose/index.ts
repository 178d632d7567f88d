export { type BuiltDeps, buildDeps, connectConfiguredPostgres } from './build-deps.ts';
export { type Env, parseEnv } from './config.ts';
export { createCoreDeps } from './deps.ts';
export { buildIpDeps, type IpDataSources, ipDepsFor } from './ip-deps.ts';
