import { describeNetworkError, parseIPv4, parseIPv6, parseWebhookUrl, refusedAddressReason } from '@sightline/core';
import { describe, expect, it } from 'vitest';

const strict = { allowPrivate: false };
const dev = { allowPrivate: true };

describe('IP parsing', () => {
  it('parses canonical IPv4 and refuses leading zeros and out-of-range octets', () => {
    expect(parseIPv4('1.2.3.4')).toBe(0x01020304);
    expect(parseIPv4('255.255.255.255')).toBe(0xffffffff);
    for (const bad of ['01.2.3.4', '1.2.3', '1.2.3.4.5', '256.1.1.1', '1.2.3.-4', ' 1.2.3.4', '1.2.3.4 ']) {
      expect(parseIPv4(bad)).toBeNull();
    }
  });

  it('parses IPv6 with ::, IPv4 tails and full forms; refuses zone ids and garbage', () => {
    expect(parseIPv6('::1')).toEqual([0, 0, 0, 0, 0, 0, 0, 1]);
    expect(parseIPv6('2001:db8::8:800:200c:417a')).toEqual([0x2001, 0xdb8, 0, 0, 8, 0x800, 0x200c, 0x417a]);
    expect(parseIPv6('::ffff:192.168.0.1')).toEqual([0, 0, 0, 0, 0, 0xffff, 0xc0a8, 1]);
    expect(parseIPv6('1:2:3:4:5:6:7:8')).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    for (const bad of ['1::2::3', 'fe80::1%eth0', '1:2:3:4:5:6:7:8:9', '12345::', 'g::1', ':', '1:2:3:4:5:6:7::8:9']) {
      expect(parseIPv6(bad)).toBeNull();
    }
  });
});

describe('forbidden webhook destinations', () => {
  const forbidden = [
    'http://127.0.0.1/',
    'http://127.1.2.3:8080/x',
    'http://localhost/',
    'http://api.localhost/',
    'http://0.0.0.0/',
    'http://10.0.0.1/',
    'http://172.16.5.4/',
    'http://172.31.255.255/',
    'http://192.168.1.1/',
    'http://100.64.0.1/',
    'http://169.254.169.254/latest/meta-data',
    'http://metadata.google.internal/computeMetadata/v1/',
    'http://224.0.0.1/',
    'http://240.0.0.1/',
    'http://255.255.255.255/',
    'http://198.18.0.1/',
    'http://192.0.2.1/',
    'http://2130706433/', // decimal 127.0.0.1
    'http://0x7f000001/', // hex
    'http://0177.0.0.1/', // octal
    'http://0x7f.1/', // mixed short form
    'http://127.1/', // short form
    'http://[::1]/',
    'http://[::]/',
    'http://[::ffff:127.0.0.1]/', // IPv4-mapped
    'http://[::ffff:7f00:1]/',
    'http://[::ffff:169.254.169.254]/',
    'http://[64:ff9b::127.0.0.1]/', // NAT64
    'http://[64:ff9b::a9fe:a9fe]/', // NAT64 of the metadata address
    'http://[2002:7f00:1::]/', // 6to4 of loopback
    'http://[2002:c0a8:101::]/', // 6to4 of 192.168.1.1
    'http://[fc00::1]/',
    'http://[fd00:ec2::254]/', // AWS metadata over IPv6
    'http://[fe80::1]/',
    'http://[ff02::1]/',
    'http://[::127.0.0.1]/', // IPv4-compatible
    'http://[2001:db8::1]/',
  ];

  it.each(forbidden)('refuses %s', (url) => {
    expect(() => parseWebhookUrl(url, strict)).toThrow();
  });

  it('allows public destinations', () => {
    for (const url of ['https://hooks.example.com/x', 'http://93.184.216.34/', 'https://[2606:4700::1111]/hook']) {
      expect(parseWebhookUrl(url, strict).href).toBe(new URL(url).href);
    }
  });

  it('ALLOW_PRIVATE_WEBHOOKS admits loopback and private ranges, never metadata or link-local', () => {
    expect(() => parseWebhookUrl('http://127.0.0.1:9/x', dev)).not.toThrow();
    expect(() => parseWebhookUrl('http://localhost:9/x', dev)).not.toThrow();
    expect(() => parseWebhookUrl('http://10.1.2.3/x', dev)).not.toThrow();
    expect(() => parseWebhookUrl('http://169.254.169.254/', dev)).toThrow(/link-local/);
    expect(() => parseWebhookUrl('http://metadata.google.internal/', dev)).toThrow(/metadata/);
  });

  it('checks resolved addresses the same way (used by the connect-time lookup guard)', () => {
    expect(refusedAddressReason('10.0.0.5', strict)).toMatch(/private/);
    expect(refusedAddressReason('::ffff:10.0.0.5', strict)).toMatch(/private/);
    expect(refusedAddressReason('8.8.8.8', strict)).toBeNull();
    expect(refusedAddressReason('not-an-ip', strict)).toBeNull();
  });
});

describe('connect-time DNS guard (DNS rebinding)', () => {
  it('refuses a host name that resolves to a forbidden address, and allows it in dev mode', async () => {
    const { lookup } = await import('node:dns/promises');
    const os = await import('node:os');
    const { createNodeWebhookTransport } = await import('@sightline/host');
    const { startReceiver } = await import('./support/receiver.ts');
    // The machine's own name resolves locally (/etc/hosts) — to loopback or a private address.
    const host = os.hostname();
    const resolved = await lookup(host).catch(() => null);
    if (!resolved || !refusedAddressReason(resolved.address, strict)) return;
    const r = await startReceiver();
    const url = `http://${host}:${r.port}/hook`;
    // The name itself passes the static checks; only the resolved address gives it away.
    expect(parseWebhookUrl(url, strict).hostname).toBe(host);
    const guarded = createNodeWebhookTransport(strict);
    const open = createNodeWebhookTransport(dev);
    try {
      const err = await guarded.request(url, { method: 'POST', headers: {}, body: '{}', timeoutMs: 2000 }).catch((e: unknown) => e);
      expect(describeNetworkError(err)).toMatch(/refused to connect to .* (loopback|private)/);
      expect(r.received).toHaveLength(0);
      if (resolved.address.startsWith('127.') || !refusedAddressReason(resolved.address, dev)) {
        expect((await open.request(url, { method: 'POST', headers: {}, body: '{}', timeoutMs: 2000 })).status).toBe(200);
        expect(r.received).toHaveLength(1);
      }
    } finally {
      await guarded.close();
      await open.close();
      await r.close();
    }
  });
});
