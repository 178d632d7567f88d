import freeMail from '../../../data/free-mail-domains.json' with { type: 'json' };
import { domainFitsName } from './holder-names.ts';
import type { RdapContact } from './read-network.ts';
import { REGISTRY_DOMAINS } from './registration-policy.ts';

const FREE_MAIL: ReadonlySet<string> = new Set(freeMail.domains);

/** A mailbox provider's domain (packages/core/data/free-mail-domains.json): names nobody's organisation. */
export function isFreeMailDomain(domain: string): boolean {
  return FREE_MAIL.has(domain);
}

/**
 * The holder's own domain from the registration's contacts, or null. Looked for in three rings, the
 * first that yields one winning: the holder's own vCard (its email and URL); the contacts nested in
 * the holder (ARIN's organisation points of contact); the network's other contacts (RIPE's admin-c
 * and tech-c). A domain never counts when it is a free-mail provider's, a registry's, or the
 * routing network owner's: one of `upstream.domains`, or one that fits `upstream.name` and not the
 * holder's (an ISP's NOC often registers its customers' blocks with its own addresses, and the
 * owner's domains are not always known). Outside the holder's own vCard a domain must also fit the
 * holder's name
 * (holder-names.ts, `domainFitsName`): a contact there may be a contractor or the parent company.
 * Within a ring the domain most contacts share wins; ties go to the first seen.
 */
export function holderDomain(
  contacts: readonly RdapContact[],
  holderIndex: number,
  holderName: string,
  upstream: { domains: ReadonlySet<string>; name: string | null },
): string | null {
  const upstreamDomain = (d: string) =>
    upstream.domains.has(d) || (upstream.name !== null && domainFitsName(d, upstream.name) && !domainFitsName(d, holderName));
  const usable = (d: string) => !FREE_MAIL.has(d) && !REGISTRY_DOMAINS.has(d) && !upstreamDomain(d);
  const holder = contacts[holderIndex];
  if (!holder) return null;
  const own = holder.domains.filter(usable);
  if (own.length) return own[0] ?? null;
  const nested = contacts.filter((_, i) => i !== holderIndex && descendsFrom(contacts, i, holderIndex));
  const others = contacts.filter((_, i) => i !== holderIndex && !descendsFrom(contacts, i, holderIndex));
  for (const ring of [nested, others]) {
    const best = mostShared(ring.flatMap((c) => c.domains.filter((d) => usable(d) && domainFitsName(d, holderName))));
    if (best) return best;
  }
  return null;
}

function descendsFrom(contacts: readonly RdapContact[], index: number, ancestor: number): boolean {
  // Parents always come before their children (read-network.ts reads breadth first), so the walk ends.
  for (let p = contacts[index]?.parent ?? null; p !== null; p = contacts[p]?.parent ?? null) {
    if (p === ancestor) return true;
  }
  return false;
}

function mostShared(domains: string[]): string | null {
  const counts = new Map<string, number>();
  for (const d of domains) counts.set(d, (counts.get(d) ?? 0) + 1);
  let best: string | null = null;
  let bestCount = 0;
  for (const [d, n] of counts) {
    if (n > bestCount) {
      best = d;
      bestCount = n;
    }
  }
  return best;
}
