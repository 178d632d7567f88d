import { AppError, ERROR_CODES, type ErrorCode, errorCodes, fromSqlError, genericCode, statusOf } from '@sightline/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, createTestEnv, type TestEnv } from './support/app.ts';
import { seedDirectAccount } from './support/seed.ts';

/**
 * Every error carries a stable `code` beside its message, so a program branches on the code and
 * never parses English. A verb raises a reason; one table (errors.ts) gives each reason its status.
 */
describe('the table of reasons', () => {
  it('gives every reason one error status, and every code is snake_case', () => {
    for (const code of errorCodes) {
      expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
      expect(statusOf(code) >= 400 && statusOf(code) <= 599, code).toBe(true);
    }
  });

  it('names, for a status several reasons share, the generic one first', () => {
    expect(genericCode(400)).toBe('invalid_request');
    expect(genericCode(402)).toBe('insufficient_credits');
    expect(genericCode(409)).toBe('conflict');
    expect(genericCode(429)).toBe('rate_limited');
    expect(genericCode(503)).toBe('database_unavailable');
    expect(genericCode(418)).toBeUndefined();
  });

  it('is what an AppError’s status comes from', () => {
    for (const code of Object.keys(ERROR_CODES) as ErrorCode[]) expect(new AppError(code, 'm').status).toBe(ERROR_CODES[code].status);
  });
});

describe('a deliberate SQL failure (SQLSTATE SL<status>)', () => {
  const sqlError = (state: string, detail?: string) => Object.assign(new Error('from SQL'), { code: state, ...(detail ? { detail } : {}) });

  it('is its status’s generic reason, with the DETAIL’s fields, unless the verb says which reason it means', () => {
    const generic = fromSqlError(sqlError('SL402', '{"credits_required":5}'));
    expect(generic).toBeInstanceOf(AppError);
    expect(generic).toMatchObject({ code: 'insufficient_credits', status: 402, message: 'from SQL', extra: { credits_required: 5 } });
    expect(fromSqlError(sqlError('SL402'), { 402: 'insufficient_topup' })).toMatchObject({ code: 'insufficient_topup', status: 402 });
    expect(fromSqlError(sqlError('SL429'), { 429: 'rotation_limit' })).toMatchObject({ code: 'rotation_limit', status: 429 });
    // A reason given for another status does not apply to this one.
    expect(fromSqlError(sqlError('SL404'), { 402: 'insufficient_ids' })).toMatchObject({ code: 'not_found', status: 404 });
  });

  it('of a status no reason has, or any other SQL error, stays an unexpected error', () => {
    for (const state of ['SL418', '23505', 'XX000']) {
      const err = sqlError(state);
      expect(fromSqlError(err)).toBe(err);
    }
  });
});

describe('over HTTP', () => {
  let env: TestEnv;
  beforeAll(async () => {
    env = await createTestEnv();
  });
  afterAll(() => env.close());

  it('an error leaves as { success: false, error, code } with the status its code has', async () => {
    const res = await call(env, 'partner-pool-state', { method: 'GET' });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ success: false, error: 'missing x-access-key header', code: 'unauthorized' });
  });

  it('an IP lookup where IP identification is not set up answers 503 ip_data_unavailable, not database_unavailable', async () => {
    const account = await seedDirectAccount(env.deps);
    for (const [name, body] of [
      ['ip-to-company', { ip: '81.2.69.143' }],
      ['ip-to-best-fit', { ip_address: '81.2.69.143' }],
    ] as const) {
      const res = await call(env, name, { key: account.key, body });
      expect(res.status).toBe(503);
      expect(res.body).toMatchObject({ success: false, code: 'ip_data_unavailable' });
    }
  });
});
