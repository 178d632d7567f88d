import type { ParsedIp } from '../../kernel/net/ip.ts';

/**
 * Words an ISP puts in the names it generates for its subscribers' addresses (a whole label, or a
 * hyphen-separated word of one, optionally numbered: `dyn`, `dsl-pool`, `hsd1`, `ppp12`). A
 * company names its gateway `gw1` or `vpn`, not `dhcp`; a false match costs one uncharged visitor,
 * a missed one a customer charged for an ISP's subscriber, so the list leans wide.
 */
const ISP_WORD =
  /^(dsl|adsl|vdsl|xdsl|sdsl|dyn|dynamic|dynamicip|dhcp|pool|pools|cable|ppp|pppoe|broadband|static|staticip|customer|customers|cust|client|clients|subscriber|subs|dialup|dial|res|residential|cpe|ftth|fttx|fttp|gpon|hfc|hsd|hsi)\d*$/;

/** `ip-…`, `ip12…`: a label that starts with "ip" and goes on into numbers. */
const IP_PREFIX = /^ip-?\d/;

/**
 * Recognises the naming an ISP or a host generates for every address of a pool, on any domain,
 * listed or not: the address itself embedded in the name (its four octets in either order, with
 * `-`, `.` or `_` between them or zero-padded to twelve digits; its first three octets, as
 * OVHcloud's `ip-A-B-C.eu` names; its 32 bits in hex, as Deutsche Telekom's `p5B0C1D2E`; an IPv6
 * address's 32 nibbles or its compressed text with dashes), or an ISP's words as labels. Returns
 * what gave it away, for the reason, or null.
 *
 * `name` is a normalised PTR name; `registrable` its registrable domain, whose own words are not
 * read (`gw.dynamic-widgets.com` is a company), though its digits are (`ip-51-75-1.eu`).
 */
export function recogniseDynamicName(name: string, address: ParsedIp, registrable: string): string | null {
  if (embedsAddress(name, address)) return 'the address in the name';
  const hostLabels = name.slice(0, Math.max(0, name.length - registrable.length - 1)).split('.');
  for (const label of hostLabels) {
    if (label === '') continue;
    if (IP_PREFIX.test(label)) return `the label "${label}"`;
    const word = label.split('-').find((w) => ISP_WORD.test(w));
    if (word !== undefined) return `the word "${word}"`;
  }
  return null;
}

function embedsAddress(name: string, address: ParsedIp): boolean {
  return address.version === 4 ? embedsIPv4(name, address.value) : embedsIPv6(name, address.groups);
}

function embedsIPv4(name: string, value: number): boolean {
  const octets = [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255];
  const octet = (n: number) => `0{0,${3 - String(n).length}}${n}`;
  const run = (list: number[]) => `(?<![0-9])${list.map(octet).join('[-._]')}(?![0-9])`;
  const padded = (list: number[]) => `(?<![0-9])${list.map((n) => String(n).padStart(3, '0')).join('')}(?![0-9])`;
  const hex = `(?<![0-9a-f])${value.toString(16).padStart(8, '0')}(?![0-9a-f])`;
  const reversed = [...octets].reverse();
  const pattern = new RegExp([run(octets), run(reversed), run(octets.slice(0, 3)), padded(octets), padded(reversed), hex].join('|'));
  return pattern.test(name);
}

function embedsIPv6(name: string, groups: number[]): boolean {
  const nibbles = groups.map((g) => g.toString(16).padStart(4, '0')).join('');
  const flat = name.replace(/[-._]/g, '');
  if (flat.includes(nibbles) || flat.includes([...nibbles].reverse().join(''))) return true;
  // The compressed text with its colons as dashes: 2001-db8--10.
  const dashed = groups.map((g) => g.toString(16)).join('-');
  const compressed = dashed.replace(/(^|-)0(-0)+(-|$)/, '--');
  return name.includes(dashed) || name.includes(compressed);
}
