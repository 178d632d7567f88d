export { AFTER_WORK, TRACKER_WORKER_INTERVAL_MS } from './after-work.ts';
export { type BuiltDeps, buildDeps, connectConfiguredPostgres, type DepsChoices, type HostRuntime } from './build-deps.ts';
export { type Env, parseEnv } from './config.ts';
export { buildIpDeps, type IpDataSources, ipDepsFor } from './ip-deps.ts';
