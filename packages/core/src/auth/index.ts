export { AUTH_CHANGED_CHANNEL, AUTH_PROBE_PREFIX, createAuthCache, listenAuthCache } from './auth-cache.ts';
export { authenticateKey, findKeyRecord } from './authenticate.ts';
