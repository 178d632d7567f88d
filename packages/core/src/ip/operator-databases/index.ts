/** The operator's own IP databases (IP_DATABASES): MaxMind GeoIP2/GeoLite2 and IPinfo Lite records as free-tier votes. */
export {
  answerFromDatabases,
  CONNECTION_TRAFFIC,
  combineFacts,
  type DatabaseHit,
  OPERATOR_DATABASE_CONFIDENCE,
  type OperatorDatabaseOptions,
  sameFamily,
  USER_TYPE_TRAFFIC,
} from './answer-from-databases.ts';
export {
  detectDatabaseKind,
  KNOWN_DATABASE_PRODUCTS,
  type OperatorDatabaseKind,
  type OperatorDatabaseKindInfo,
  type OperatorDatabaseVendor,
} from './detect-database-kind.ts';
export { lookUpOperatorDatabases, type OperatorDatabase, type OperatorDatabaseLookup } from './look-up-operator-databases.ts';
export {
  type OperatorDatabaseFiles,
  type OperatorDatabases,
  type OperatorDatabasesOptions,
  openOperatorDatabases,
  parseIpDatabasesSetting,
} from './open-operator-databases.ts';
export { type AnonymizerFlag, type DatabaseFacts, hasFacts, readDatabaseRecord, registrableDomain } from './read-database-record.ts';
