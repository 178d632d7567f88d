export * from './db-pglite.ts';
export * from './deps.ts';
export * from './logger.ts';
export * from './migrations.ts';
export * from './operator-commands.ts';
export * from './server.ts';
export * from './webhook-transport.ts';
export * from './scheduler.ts';
