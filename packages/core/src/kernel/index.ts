export { type AfterWorkTable, createAfterWork, startAfterWork } from './after-work.ts';
export { createBackgroundRunner } from './background.ts';
export { createBatchedRead } from './batched-read.ts';
export { type CoreDeps, type KeyRecord, type Logger, type PartnerCaller, type PartnerCtx, type RequestHeaders, silentLogger } from './context.ts';
export {
  createKeyring,
  generateApiKey,
  type HmacSha256Hex,
  hmacSha256Hex,
  isWellFormedApiKey,
  keyPrefixOf,
  mintWebhookSecret,
  randomBase62,
} from './crypto.ts';
export { AppError, ERROR_CODES, type ErrorCode, errorCodes, fromSqlError, genericCode, statusOf } from './errors.ts';
export {
  createMemoryRateLimiter,
  createRedisRateLimiter,
  createTrackerBudgets,
  type RateLimiter,
  type TrackerBudgetPolicy,
  type TrackerBudgets,
} from './limits.ts';
export { readBodyPrefix, readBodyTextPrefix } from './net/bounded-body.ts';
export { clientAddress, trustedProxies } from './net/client-address.ts';
export {
  forbiddenAddressClass,
  forbiddenIPv4Class,
  groupsToBigint,
  ipv4ToNumber,
  isLocalDevClass,
  type ParsedIp,
  parseCidr,
  parseIPv4,
  parseIPv6,
  parseIp,
} from './net/ip.ts';
export {
  type DestinationPolicy,
  describeNetworkError,
  parseWebhookUrl,
  RECEIVER_ANSWER_MAX_BYTES,
  refusedAddressReason,
  WEBHOOK_CONNECTION_WAIT_MS,
  type WebhookTransport,
} from './net/webhook-destination.ts';
export type { Database, Row, Sql, SqlValue } from './sql.ts';
export { findUnstorableText, isUnstorableText, sliceWhole, UNSTORABLE_TEXT_MESSAGE } from './storable-text.ts';
