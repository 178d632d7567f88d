export { type Migration, migrate, type Schema } from './db.ts';
export { connectPostgres } from './db-postgres.ts';
export { connectRedis, REDIS_TIMEOUTS, rateLimiterFor, type SharedRedis } from './redis.ts';
export { checksumOf, type Definition, definedObjects, definitionOrder, dropAllDefinitionsSql, requiredDefinitions } from './schema-definitions.ts';
export { createWriteBehind } from './write-behind.ts';
