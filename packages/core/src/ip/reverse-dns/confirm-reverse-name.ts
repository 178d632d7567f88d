import { badRequest } from '../../kernel/errors.ts';
import { type DnsResolver, formatAddress, lookupAddress, sameAddress } from './dns-resolver.ts';

/**
 * PTR names past this many are not checked: an address has one or two, and each name costs a
 * forward query, so a hostile zone listing hundreds cannot multiply our queries.
 */
export const MAX_PTR_NAMES = 4;

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * A PTR name as we compare and show it: lower case, without the root's trailing dot; null unless
 * it is a plausible host name (two or more LDH labels, at most 253 characters), so a PTR holding
 * spaces, markup or a bare label never reaches a reason or a domain.
 */
export function normalisePtrName(raw: string): string | null {
  let name = raw.trim().toLowerCase();
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (name.length === 0 || name.length > 253) return null;
  const labels = name.split('.');
  return labels.length >= 2 && labels.every((l) => LABEL.test(l)) ? name : null;
}

/**
 * Forward-confirmed reverse DNS (FCrDNS): the first PTR name of `ip` that resolves (A for IPv4,
 * AAAA for IPv6) back to the same address, compared as parsed addresses, never as text. Anyone
 * who controls an address's reverse zone can make its PTR say `gw.apple.com`; only apple.com's
 * owner can make gw.apple.com point back to it, so a name counts only when both directions agree.
 *
 * Null is an answer: no PTR, or no name that points back. A failure that leaves the question open
 * (the PTR query failed, or no name confirmed while some forward query failed) rejects, so the
 * caller can remember it for less time than an answer. Text that is not an address is a 400.
 */
export async function confirmReverseName(ip: string, resolver: DnsResolver, signal: AbortSignal): Promise<string | null> {
  const address = lookupAddress(ip);
  if (!address) throw badRequest(`${JSON.stringify(ip)} is not an IP address`);
  const ptrNames = await resolver.reverse(formatAddress(address), signal);
  const names = [...new Set(ptrNames.map(normalisePtrName).filter((n): n is string => n !== null))].slice(0, MAX_PTR_NAMES);
  if (names.length === 0) return null;
  const type = address.version === 4 ? 'A' : 'AAAA';
  const outcomes = await Promise.all(
    names.map((name) =>
      resolver.resolve(name, type, signal).then(
        (addresses) => ({ name, confirmed: addresses.some((a) => pointsBack(a, address)) }),
        (error: unknown) => ({ name, error }),
      ),
    ),
  );
  for (const outcome of outcomes) if ('confirmed' in outcome && outcome.confirmed) return outcome.name;
  const failed = outcomes.find((o) => 'error' in o);
  if (failed && 'error' in failed) throw failed.error;
  return null;
}

function pointsBack(text: string, address: NonNullable<ReturnType<typeof lookupAddress>>): boolean {
  const parsed = lookupAddress(text);
  return parsed !== null && sameAddress(parsed, address);
}
