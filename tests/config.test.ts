import { parseEnv } from '@sightline/core';
import { describe, expect, it } from 'vitest';

describe('configuration', () => {
  it('defaults to the embedded database on port 8787', () => {
    const env = parseEnv({});
    expect(env).toMatchObject({ PORT: 8787, DATA_DIR: '.data', ALLOW_PRIVATE_WEBHOOKS: false, DATABASE_PREPARE: true });
    expect(env.DATABASE_URL).toBeUndefined();
    expect(env.REDIS_URL).toBeUndefined();
  });

  it('treats empty variables as unset', () => {
    const env = parseEnv({ DATABASE_URL: '', REDIS_URL: '' });
    expect(env.DATABASE_URL).toBeUndefined();
    expect(env.REDIS_URL).toBeUndefined();
  });

  it('reads flags as 0/1 or true/false', () => {
    expect(parseEnv({ ALLOW_PRIVATE_WEBHOOKS: '1', DATABASE_PREPARE: '0' })).toMatchObject({ ALLOW_PRIVATE_WEBHOOKS: true, DATABASE_PREPARE: false });
  });

  it('reads consensus weights by provider name', () => {
    expect(parseEnv({ PROVIDER_WEIGHTS: 'ipinfo=1,ipapi_is=0.8,snitcher=1.2' }).PROVIDER_WEIGHTS).toEqual({
      ipinfo: 1,
      ipapi_is: 0.8,
      snitcher: 1.2,
    });
    expect(parseEnv({}).PROVIDER_WEIGHTS).toEqual({});
    expect(() => parseEnv({ PROVIDER_WEIGHTS: 'ipinfo:1' })).toThrow(/PROVIDER_WEIGHTS/);
    expect(() => parseEnv({ PAYMENTS_PROVIDER: 'stripe' })).toThrow(/STRIPE_SECRET_KEY is required/);
  });

  it('names every bad setting at once', () => {
    expect(() => parseEnv({ PORT: 'eighty', DATABASE_URL: 'mysql://x', SIGHTLINE_SECRET: 'short' })).toThrow(
      /PORT[\s\S]*DATABASE_URL must be a postgres:\/\/ URL[\s\S]*SIGHTLINE_SECRET must be at least 32/,
    );
  });
});
