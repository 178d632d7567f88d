import { createKeyring, generateApiKey, hmacSha256Hex, isWellFormedApiKey, keyPrefixOf, mintWebhookSecret } from '@sightline/core';
import { describe, expect, it } from 'vitest';

describe('API keys', () => {
  it('have a readable prefix, 32 random base62 characters and a 6-character checksum', () => {
    const key = generateApiKey();
    expect(key).toMatch(/^sl_[0-9A-Za-z]{38}$/);
    expect(isWellFormedApiKey(key)).toBe(true);
    expect(keyPrefixOf(key)).toBe(key.slice(0, 11));
  });

  it('are unique across many draws', () => {
    const keys = new Set(Array.from({ length: 5000 }, generateApiKey));
    expect(keys.size).toBe(5000);
  });

  it('fail the checksum when any single character is changed', () => {
    const key = generateApiKey();
    for (let i = 3; i < key.length; i++) {
      const c = key[i] === 'a' ? 'b' : 'a';
      expect(isWellFormedApiKey(key.slice(0, i) + c + key.slice(i + 1))).toBe(false);
    }
  });

  it('reject other shapes before any lookup', () => {
    for (const bad of ['', 'sl_', 'sk_live_abc', `${generateApiKey()}x`, generateApiKey().slice(0, -1), generateApiKey().replace('sl_', 'SL_')]) {
      expect(isWellFormedApiKey(bad)).toBe(false);
    }
  });
});

describe('keyring', () => {
  it('hashes keys deterministically under the pepper, differently under another secret', async () => {
    const a = await createKeyring('a'.repeat(40));
    const b = await createKeyring('b'.repeat(40));
    const key = generateApiKey();
    expect(await a.hashApiKey(key)).toBe(await a.hashApiKey(key));
    expect(await a.hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(await a.hashApiKey(key)).not.toBe(await b.hashApiKey(key));
  });

  it('seals secrets with a fresh nonce and opens them again; tampering or another secret fails', async () => {
    const k = await createKeyring('s'.repeat(40));
    const secret = mintWebhookSecret();
    const s1 = await k.seal(secret);
    const s2 = await k.seal(secret);
    expect(s1).not.toBe(s2);
    expect(s1).not.toContain(secret);
    expect(await k.open(s1)).toBe(secret);
    const tampered = s1.slice(0, -2) + (s1.endsWith('A') ? 'BB' : 'AA');
    await expect(k.open(tampered)).rejects.toThrow();
    await expect((await createKeyring('t'.repeat(40))).open(s1)).rejects.toThrow();
  });

  it('hashes identically with WebCrypto (Deno) and the Node host’s synchronous HMAC', async () => {
    const { nodeHmacSha256Hex } = await import('@sightline/host');
    const web = await createKeyring('c'.repeat(40));
    const node = await createKeyring('c'.repeat(40), { hmacSha256Hex: nodeHmacSha256Hex });
    for (let i = 0; i < 20; i++) {
      const key = generateApiKey();
      expect(await node.hashApiKey(key)).toBe(await web.hashApiKey(key));
    }
  });

  it('refuses a server secret shorter than 32 characters', async () => {
    await expect(createKeyring('short')).rejects.toThrow(/32/);
  });

  it('computes HMAC-SHA256 like the RFC 4231 test vector 2', async () => {
    expect(await hmacSha256Hex('Jefe', 'what do ya want for nothing?')).toBe('5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
  });
});
