import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ipv4ToNumber, LocalIpData } from '@sightline/core';
import { readAsnBase } from '@sightline/host';
import { dotted } from '../../tests/support/addresses.ts';
import { parseCsv } from '../../tests/support/csv.ts';

/**
 * Rebuilds bench/identification/networks.csv, the labelled evaluation of `npm run bench --
 * identification`, from public sources (see README.md beside this file for each source's licence):
 *
 *   npx tsx bench/identification/build-dataset.ts <ipinfo/sample-database clone> <X4BNet/lists_vpn input folder>
 *
 * - IPinfo's sample databases, every version in the repository's history (each weekly version is a
 *   different sample): the ASN database's `type` per ASN (isp/business/hosting/education/government,
 *   with the owner's name and domain), IP to Company's `as_type`, IP to Mobile Carrier's carrier
 *   ranges and Privacy Detection's VPN ranges.
 * - X4BNet's datacenter and VPN ASN lists.
 *
 * One address per network: an ASN labelled by IPinfo is kept only when IPinfo gave it one type in every
 * sample that named it, and only when the shipped ASN data puts the sampled address in that same ASN
 * (otherwise the label would be about another network). Carrier and VPN ranges keep one address per
 * owning ASN. Nothing here is read by packages/: the product never identifies from it.
 */
const here = path.dirname(fileURLToPath(import.meta.url));
const [ipinfoRepo, x4bInput] = process.argv.slice(2);
if (!ipinfoRepo || !x4bInput) {
  process.stderr.write('usage: build-dataset.ts <ipinfo sample-database clone> <X4BNet lists_vpn input folder>\n');
  process.exit(2);
}

const git = (...args: string[]) => execFileSync('git', ['-C', ipinfoRepo, ...args], { maxBuffer: 1 << 28 }).toString('utf8');

/** Every stored version of one file, newest first. */
function versions(file: string): { commit: string; text: string }[] {
  return git('log', '--format=%H', '--', file)
    .split('\n')
    .filter(Boolean)
    .flatMap((commit) => {
      try {
        return [{ commit, text: git('show', `${commit}:${file}`) }];
      } catch {
        return [];
      }
    });
}

/** RFC 4180 rows (support/csv.ts), keyed by the header; a row of another length is dropped. */
function parseCsvRows(text: string): Record<string, string>[] {
  const { records, unfinished } = parseCsv(text);
  const [header, ...body] = unfinished ? [...records, unfinished] : records;
  if (!header) return [];
  return body.filter((r) => r.length === header.length).map((r) => Object.fromEntries(header.map((h, k) => [h, r[k] ?? ''])));
}

const base = await readAsnBase();
const data = LocalIpData.fromBase(base);
const ownerAsn = (ip: string) => data.facts(ip, () => null)?.asn ?? null;

interface Row {
  ip: string;
  label: string;
  asn: number;
  name: string;
  domain: string;
  source: string;
  ref: string;
}
const rows: Row[] = [];
const taken = new Set<string>();
const add = (r: Row) => {
  const key = `${r.source}|${r.asn}`;
  if (taken.has(key)) return;
  taken.add(key);
  rows.push(r);
};
/** An address inside a range, away from its network and broadcast ends. */
const inside = (start: string, end: string) => {
  const s = ipv4ToNumber(start);
  const e = ipv4ToNumber(end);
  if (s < 0 || e < s) return null;
  return dotted(e - s >= 2 ? s + 1 + Math.floor((e - s) / 2) : s);
};

// IPinfo ASN database and IP to Company: one type per ASN across every sample.
const TYPE: Record<string, string> = {
  isp: 'isp',
  business: 'business',
  hosting: 'hosting',
  education: 'education',
  government: 'government',
  gov: 'government',
};
const byAsn = new Map<number, { types: Set<string>; name: string; domain: string; ip: string; ref: string }>();
const note = (asnText: string, type: string | undefined, name: string, domain: string, ip: string | null, ref: string) => {
  const asn = Number(asnText.replace(/^AS/i, ''));
  const label = type ? TYPE[type] : undefined;
  if (!Number.isInteger(asn) || asn <= 0 || !label || !ip) return;
  const seen = byAsn.get(asn);
  if (seen) {
    seen.types.add(label);
    if (!seen.domain && domain) seen.domain = domain;
  } else byAsn.set(asn, { types: new Set([label]), name, domain, ip, ref });
};
for (const { commit, text } of versions('ASN Database/asn_sample.csv')) {
  for (const r of parseCsvRows(text))
    note(
      r.asn ?? '',
      r.type,
      r.name ?? '',
      r.domain ?? '',
      inside(r.start_ip ?? '', r.end_ip ?? ''),
      `ASN Database/asn_sample.csv@${commit.slice(0, 8)}`,
    );
}
for (const { commit, text } of versions('IP to Company/ip_company_sample.csv')) {
  for (const r of parseCsvRows(text)) {
    note(
      r.asn ?? '',
      r.as_type,
      r.as_name ?? '',
      r.as_domain ?? '',
      inside(r.start_ip ?? '', r.end_ip ?? ''),
      `IP to Company/ip_company_sample.csv@${commit.slice(0, 8)}`,
    );
  }
}
let mixed = 0;
let moved = 0;
for (const [asn, n] of byAsn) {
  if (n.types.size !== 1) {
    mixed++;
    continue;
  }
  if (ownerAsn(n.ip) !== asn) {
    moved++;
    continue;
  }
  add({ ip: n.ip, label: [...n.types][0] as string, asn, name: n.name, domain: n.domain, source: 'ipinfo-asn-type', ref: n.ref });
}

// IP to Mobile Carrier: a carrier's range is mobile traffic, whoever routes it.
for (const { commit, text } of versions('IP to Mobile Carrier/ip_carrier_sample.csv')) {
  for (const r of parseCsvRows(text)) {
    const ip = inside(r.start_ip ?? '', r.end_ip ?? '');
    const asn = ip ? ownerAsn(ip) : null;
    if (ip && asn)
      add({
        ip,
        label: 'mobile',
        asn,
        name: r.name ?? '',
        domain: '',
        source: 'ipinfo-carrier',
        ref: `IP to Mobile Carrier/ip_carrier_sample.csv@${commit.slice(0, 8)}`,
      });
  }
}
// Privacy Detection: ranges IPinfo flags as VPN exits.
for (const { commit, text } of versions('Privacy Detection/privacy_detection_sample.csv')) {
  for (const r of parseCsvRows(text)) {
    if (r.vpn !== 'true') continue;
    const ip = inside(r.start_ip ?? '', r.end_ip ?? '');
    const asn = ip ? ownerAsn(ip) : null;
    if (ip && asn)
      add({
        ip,
        label: 'vpn',
        asn,
        name: r.service ?? '',
        domain: '',
        source: 'ipinfo-privacy-vpn',
        ref: `Privacy Detection/privacy_detection_sample.csv@${commit.slice(0, 8)}`,
      });
  }
}

// X4BNet's ASN lists: an address in the ASN's first announced IPv4 range.
const firstRange = new Map<number, string>();
{
  const { starts, ends, values } = base.asn4.arrays();
  for (let i = 0; i < values.length; i++) {
    const asn = base.owners.asns[values[i] as number] as number;
    if (!firstRange.has(asn)) firstRange.set(asn, inside(dotted(starts[i] as number), dotted(ends[i] as number)) as string);
  }
}
for (const [list, label] of [
  ['datacenter', 'hosting'],
  ['vpn', 'vpn'],
] as const) {
  for (const line of readFileSync(path.join(x4bInput, list, 'ASN.txt'), 'utf8').split('\n')) {
    const m = /^AS(\d+)\s*(?:#\s*(.*))?$/.exec(line.trim());
    const asn = m ? Number(m[1]) : Number.NaN;
    const ip = firstRange.get(asn);
    if (m && ip) add({ ip, label, asn, name: (m[2] ?? '').trim(), domain: '', source: `x4bnet-${list}`, ref: `input/${list}/ASN.txt` });
  }
}

const cell = (v: string | number) => {
  const s = String(v);
  return /[",\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
};
rows.sort((a, b) => a.source.localeCompare(b.source) || a.asn - b.asn);
writeFileSync(
  path.join(here, 'networks.csv'),
  `ip,label,asn,name,domain,source,ref\n${rows.map((r) => [r.ip, r.label, r.asn, r.name, r.domain, r.source, r.ref].map(cell).join(',')).join('\n')}\n`,
);
const count = new Map<string, number>();
for (const r of rows) count.set(`${r.source} ${r.label}`, (count.get(`${r.source} ${r.label}`) ?? 0) + 1);
process.stdout.write(
  `${rows.length} networks (IPinfo ASNs with more than one type: ${mixed}; sampled address in another ASN here: ${moved})\n${[...count]
    .map(([k, n]) => `  ${k}: ${n}`)
    .join('\n')}\n`,
);
