import type { Keyring } from './crypto.ts';
import type { Sql } from './db.ts';
import type { WebhookTransport } from './net/webhook-destination.ts';

export interface Logger {
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

/** Everything a verb may touch, built once at the entry point and injected. */
export interface CoreDeps {
  db: Sql;
  keyring: Keyring;
  webhooks: WebhookTransport;
  allowPrivateWebhooks: boolean;
  log: Logger;
}

/** The authenticated key behind a request. */
export interface Caller {
  apiKeyId: string;
  accountId: string;
  status: 'active' | 'suspended' | 'revoked';
  isPartner: boolean;
  isPartnerMaster: boolean;
  parentApiKeyId: string | null;
}

/** The one verb signature: `verb({ ctx, input })`. */
export interface VerbArgs<I, C = CoreDeps> {
  ctx: C;
  input: I;
}

export type PartnerCtx = CoreDeps & { caller: Caller };

export const silentLogger: Logger = { info() {}, warn() {}, error() {} };
