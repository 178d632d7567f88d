import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type AsnBase, decodeAsnSnapshot, EDGE_DATA_FILES, encodeAsnSnapshot, gunzip, LocalIpData, parseIp } from '@sightline/core';
import { openCountryReader, readAsnBase } from '@sightline/host';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildEdgeData } from '../packages/host/src/edge-data.ts';
import { snapshotIpSources } from '../supabase/functions/_shared/ip-sources.ts';
import { dotted, xorshift32 } from './support/addresses.ts';

/**
 * The local IP data as the Supabase Edge Functions get it: `npm run build:edge-data` writes a
 * snapshot of the shipped base (ASN data and the shipped range lists) and the country database,
 * gzipped, and the functions read them back. What they answer must be what the Node host answers
 * from the npm packages' files and packages/core/data/ip-ranges.
 */
let base: AsnBase;
let dir: string;
let written: { file: string; bytes: number }[];
beforeAll(async () => {
  base = await readAsnBase();
  dir = await mkdtemp(path.join(tmpdir(), 'sightline-edge-data-'));
  written = await buildEdgeData(dir);
}, 60_000);
afterAll(() => rm(dir, { recursive: true, force: true }));

const read = async (name: string) => new Uint8Array(await readFile(path.join(dir, name)));

function randomV4(n: number): string[] {
  const rnd = xorshift32(0x2545f491);
  return Array.from({ length: n }, () => dotted(rnd()));
}

describe('the edge data snapshot', () => {
  it('decodes to exactly the arrays it was made from', () => {
    const back = decodeAsnSnapshot(encodeAsnSnapshot(base));
    expect(back.owners.names).toEqual(base.owners.names);
    // Byte for byte (toEqual over half a million elements takes seconds).
    const bytes = (a: ArrayBufferView) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);
    const same = (x: Record<string, ArrayBufferView>, y: Record<string, ArrayBufferView>) =>
      Object.keys(y).every((k) => x[k] !== undefined && bytes(x[k]).equals(bytes(y[k] as ArrayBufferView)));
    expect(bytes(back.owners.asns).equals(bytes(base.owners.asns))).toBe(true);
    expect(same(back.asn4.arrays(), base.asn4.arrays())).toBe(true);
    expect(same(back.asn6.arrays(), base.asn6.arrays())).toBe(true);
    expect(back.asn4.arrays().values.length).toBeGreaterThan(400_000);
    // The shipped range lists ride along: the same lists and the same segments.
    if (!back.ranges || !base.ranges) throw new Error('the range lists are missing');
    expect(back.ranges.lists).toEqual(base.ranges.lists);
    expect(same(back.ranges.v4.arrays(), base.ranges.v4.arrays())).toBe(true);
    expect(same(back.ranges.v6.arrays(), base.ranges.v6.arrays())).toBe(true);
    expect(back.ranges.v4.size).toBeGreaterThan(30_000);
  });

  it('still reads a snapshot made without the range lists, which then answers from the owners alone', () => {
    const { ranges: _dropped, ...owners } = base;
    const back = decodeAsnSnapshot(encodeAsnSnapshot(owners));
    expect(back.ranges).toBeUndefined();
    const proton = parseIp('5.253.204.162');
    if (!proton) throw new Error('parse');
    expect(LocalIpData.fromBase(back).lookup(proton).traffic_type).toBe('hosting');
    expect(LocalIpData.fromBase(base).lookup(proton)).toMatchObject({ traffic_type: 'vpn', vpn_provider: 'Proton VPN' });
  });

  it('answers like the package files, IPv4 and IPv6, country included', async () => {
    const sources = snapshotIpSources(read);
    const [fromSnapshot, country] = await Promise.all([sources.base(), sources.country()]);
    const ours = LocalIpData.fromBase(fromSnapshot);
    const theirs = LocalIpData.fromBase(base);
    const reference = await openCountryReader();
    const v6 = ['2a00:1450:4001:800::200e', '2606:4700::6810:84e5', '2001:67c:2e8:22::c100:68b', '2620:0:862:ed1a::1', '2c0f:fb50::1'];
    // The shipped lists' own answers too: Proton VPN, Private Relay, a crawler, a datacenter.
    const listed = ['5.253.204.162', '172.224.226.1', '66.249.66.1', '1.12.0.1', '2.56.252.1', '2a02:26f7:b3c0:4000::1', '2600:1f18::1'];
    for (const ip of [...randomV4(20_000), '17.253.144.10', '8.8.8.8', ...listed, ...v6]) {
      const parsed = parseIp(ip);
      if (!parsed) throw new Error(ip);
      expect(ours.lookup(parsed), ip).toEqual(theirs.lookup(parsed));
      expect(country.get(ip)?.country_code ?? null, ip).toBe(reference.get(ip)?.country_code ?? null);
    }
    expect(country.get('17.253.144.10')?.country_code).toBe('US');
    const relay = parseIp('172.224.226.1');
    if (!relay) throw new Error('parse');
    expect(ours.lookup(relay)).toMatchObject({ traffic_type: 'vpn', vpn_provider: 'iCloud Private Relay' });
  });

  it('fits the Edge Functions’ 20 MB with room for the code: under 10 MB together', () => {
    expect(written.map((w) => path.basename(w.file)).sort()).toEqual(Object.values(EDGE_DATA_FILES).sort());
    expect(written.reduce((n, w) => n + w.bytes, 0)).toBeLessThan(10_000_000);
  });

  it('refuses a snapshot that is not one, is cut short, or names an owner it does not have', async () => {
    const good = encodeAsnSnapshot(base);
    const wrongMagic = good.slice();
    wrongMagic[0] = 0;
    expect(() => decodeAsnSnapshot(wrongMagic)).toThrow(/magic/);
    expect(() => decodeAsnSnapshot(good.subarray(0, good.length - 100))).toThrow(/length|cut short|names/);
    // The first IPv4 owner index sits right after the two IPv4 arrays.
    const n4 = base.asn4.arrays().values.length;
    const at = (17 + 20 + 7) & ~7; // magic + header, 8-aligned
    const bad = good.slice();
    new DataView(bad.buffer).setInt32(at + 2 * ((n4 * 4 + 7) & ~7), 1 << 30, true);
    expect(() => decodeAsnSnapshot(bad)).toThrow(/unknown owner/);
    // A count far past the file is refused before anything is allocated for it.
    const huge = good.slice();
    new DataView(huge.buffer).setUint32(17 + 4, 0x7fffffff, true); // the IPv6 count
    expect(() => decodeAsnSnapshot(huge)).toThrow(/cut short/);
    // IPv6 ranges must be in order: swap the first two starts.
    const n6 = base.asn6.arrays().values.length;
    const v6At = at + 3 * ((n4 * 4 + 7) & ~7); // start-high array
    const swapped = good.slice();
    const view = new DataView(swapped.buffer);
    const [a, b] = [view.getBigUint64(v6At, true), view.getBigUint64(v6At + 8, true)];
    view.setBigUint64(v6At, b, true);
    view.setBigUint64(v6At + 8, a, true);
    expect(n6).toBeGreaterThan(2);
    expect(() => decodeAsnSnapshot(swapped)).toThrow(/IPv6/);
    // And what the build wrote is a gzipped snapshot of the same data.
    expect(decodeAsnSnapshot(await gunzip(await read(EDGE_DATA_FILES.asn))).asn4.arrays().values.length).toBe(n4);
  });

  it('refuses range lists it does not understand: an unknown flag, a malformed list, a segment naming no list', () => {
    const good = encodeAsnSnapshot(base);
    const flags = good.slice();
    new DataView(flags.buffer).setUint32(17 + 16, 3, true);
    expect(() => decodeAsnSnapshot(flags)).toThrow(/unknown header flags/);
    // The lists' JSON is the file's tail: make one list's kind unknown, same length.
    const at = Buffer.from(good.buffer, good.byteOffset, good.byteLength).lastIndexOf('"kind":"hosting"');
    expect(at).toBeGreaterThan(0);
    const badKind = good.slice();
    badKind.set(new TextEncoder().encode('"kind":"hostile"'), at);
    expect(() => decodeAsnSnapshot(badKind)).toThrow(/malformed/);
    // Fewer lists than the segments name: drop the last list from the JSON, keep the length.
    if (!base.ranges) throw new Error('the range lists are missing');
    const fewer = encodeAsnSnapshot({ ...base, ranges: { ...base.ranges, lists: base.ranges.lists.slice(0, -1) } });
    expect(() => decodeAsnSnapshot(fewer)).toThrow(/unknown range list/);
  });
});
