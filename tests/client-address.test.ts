import { clientAddress, parseEnv, trustedProxies } from '@sightline/core';
import { describe, expect, it } from 'vitest';

/**
 * Whose address a visitor has: the socket's peer, unless that peer is a proxy we trust, and then
 * the first untrusted hop from the right of X-Forwarded-For. The leftmost entry is whatever the
 * client wrote; taking it (as Plausible and Umami do) lets anyone choose their address.
 */
const none = trustedProxies([]);
const lb = trustedProxies(['10.0.0.0/8', '2001:db8::/32']);

describe('clientAddress', () => {
  it('is the socket peer when no proxy is trusted, whatever X-Forwarded-For says', () => {
    expect(clientAddress('203.0.113.9', '1.2.3.4', none)).toBe('203.0.113.9');
    expect(clientAddress('::ffff:203.0.113.9', undefined, none)).toBe('203.0.113.9');
  });

  it('is the socket peer when the peer is not a trusted proxy', () => {
    expect(clientAddress('198.51.100.1', '1.2.3.4', lb)).toBe('198.51.100.1');
  });

  it('walks X-Forwarded-For from the right through trusted hops to the first untrusted one', () => {
    // The client wrote 198.51.100.7 itself; our load balancer saw 203.0.113.50 connect.
    expect(clientAddress('10.0.0.5', '198.51.100.7, 203.0.113.50, 10.0.0.9', lb)).toBe('203.0.113.50');
    expect(clientAddress('10.0.0.5', '203.0.113.50', lb)).toBe('203.0.113.50');
    expect(clientAddress('2001:db8::1', '[2001:db8::2], 2a00:1450::1', lb)).toBe('2a00:1450::1');
  });

  it('stops at a malformed hop: the last trusted address is all we can vouch for', () => {
    expect(clientAddress('10.0.0.5', '203.0.113.50, not-an-ip', lb)).toBe('10.0.0.5');
    expect(clientAddress('10.0.0.5', '203.0.113.50, unknown, 10.0.0.9', lb)).toBe('10.0.0.9');
  });

  it('is the innermost proxy when every hop is trusted, and null without a usable socket address', () => {
    expect(clientAddress('10.0.0.5', '10.1.1.1, 10.0.0.9', lb)).toBe('10.1.1.1');
    expect(clientAddress(undefined, '203.0.113.50', lb)).toBeNull();
    expect(clientAddress('garbage', undefined, none)).toBeNull();
  });
});

describe('TRUSTED_PROXIES', () => {
  it('is empty by default and takes comma-separated CIDRs', () => {
    expect(parseEnv({}).TRUSTED_PROXIES).toEqual([]);
    expect(parseEnv({ TRUSTED_PROXIES: '10.0.0.0/8, 2001:db8::/32' }).TRUSTED_PROXIES).toEqual(['10.0.0.0/8', '2001:db8::/32']);
    expect(() => parseEnv({ TRUSTED_PROXIES: '10.0.0.0/8,nope' })).toThrow(/TRUSTED_PROXIES must be a comma-separated list of CIDRs/);
  });
});
