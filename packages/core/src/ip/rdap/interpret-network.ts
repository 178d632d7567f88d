import type { SourceAnswer, TrafficType } from '../types.ts';
import { addressValue, formatRange } from './address-range.ts';
import { holderDomain } from './contact-domains.ts';
import { nameClass, ownerName, sameOrganisation } from './holder-names.ts';
import type { RdapContact, RdapNetwork } from './read-network.ts';
import { RDAP_CONFIDENCE, registrationType } from './registration-policy.ts';

/**
 * Who routes the address, as the local data knows it: the AS owner. A provider's reassignment is a
 * customer's only when its holder is someone else, and the owner's domains are never the
 * customer's.
 */
export interface RoutingOwner {
  /** The AS owner's name as the ASN data writes it ("COMCAST-7922 - Comcast Cable Communications, LLC"). */
  name: string | null;
  /** The AS owner's own registrable domains, when known. */
  domains?: readonly string[];
  /** How the local data classes the routing network, when it does. */
  trafficType?: TrafficType | null;
}

/**
 * What one registration says about an address, as RDAP's vote; null when it says nothing (an
 * allocation that is not clearly an ISP's, a placeholder, a type we do not know, a private
 * customer, a provider's assignment when the routing owner is unknown).
 *
 * - An end-user assignment to an organisation (ARIN DIRECT ASSIGNMENT / REASSIGNED, RIPE ASSIGNED
 *   PI, or ASSIGNED PA whose holder is not the routing network's owner) → `business`, the
 *   holder's name, and its domain when its contacts give one (contact-domains.ts).
 * - A holder whose name says ISP, host, school or government → that traffic type, no company.
 * - An onward allocation (ARIN REALLOCATED, RIPE SUB-ALLOCATED PA) → `isp`.
 * - A registry allocation → `isp` when its holder is the routing owner and the local data classes
 *   that owner an ISP, or its name says so; else nothing.
 * - A provider's assignment to the routing owner itself (its own pools) → the routing owner's class
 *   when that is not business; else nothing.
 */
export function interpretNetwork(network: RdapNetwork, routing: RoutingOwner | null): SourceAnswer | null {
  const type = registrationType(network.type);
  if (!type || type.kind === 'registry') return null;
  const range = formatRange({
    version: network.version,
    start: addressValue(network.startAddress)?.value ?? 0n,
    end: addressValue(network.endAddress)?.value ?? 0n,
  });
  const holderIndex = findHolder(network.contacts);
  const holder = holderIndex === null ? null : (network.contacts[holderIndex] ?? null);
  const holderName = holder ? (holder.org ?? holder.name) : null;
  const routingName = routing?.name ? ownerName(routing.name) : null;
  const routingType = routing?.trafficType ?? null;
  const isRoutingOwner = holderName !== null && routingName !== null && sameOrganisation(holderName, routingName);
  const byName = holderName === null ? null : nameClass(holderName);
  const answer = (
    traffic: TrafficType,
    confidence: number,
    clause: string,
    company: { name: string; domain: string | null } | null = null,
  ): SourceAnswer => ({
    provider: 'rdap',
    domain: company?.domain ?? null,
    company_name: company?.name ?? null,
    traffic_type: traffic,
    confidence,
    country_code: network.country,
    reason: `RDAP: ${range} ${clause}`,
  });
  const to = (name: string | null) => `${type.verb} to ${name ?? network.name ?? 'an unnamed holder'}`;

  if (byName === 'private') return null;
  if (byName === 'isp' || byName === 'hosting') return answer(byName, RDAP_CONFIDENCE.network, `${to(holderName)}, ${article(byName)}`);
  if (byName === 'education' || byName === 'government') return answer(byName, RDAP_CONFIDENCE.institution, `${to(holderName)}, ${article(byName)}`);

  if (type.kind === 'onward') return answer('isp', RDAP_CONFIDENCE.network, `${to(holderName)}, an ISP's onward allocation`);
  if (type.kind === 'allocation') {
    if (isRoutingOwner && routingType === 'isp') return answer('isp', RDAP_CONFIDENCE.network, `${to(holderName)}, the routing ISP's own allocation`);
    return null;
  }

  // An end-user assignment.
  if (holder === null || holderName === null || holderIndex === null || holder.kind === 'individual') return null;
  if (isRoutingOwner && routingType !== null && routingType !== 'business') {
    return answer(routingType, RDAP_CONFIDENCE.network, `${to(holderName)}, the routing network's owner`);
  }
  if (type.from === 'provider') {
    // A provider's own pools are assigned to itself; and without the routing owner, a RIPE-style
    // assignment cannot be told from one.
    if (isRoutingOwner) return null;
    if (routingName === null && !type.toCustomer) return null;
  }
  const upstream = { domains: new Set(routing?.domains ?? []), name: routingName };
  const domain = holderDomain(network.contacts, holderIndex, holderName, upstream);
  const confidence = type.from === 'registry' ? RDAP_CONFIDENCE.directBusiness : RDAP_CONFIDENCE.reassignedBusiness;
  return answer('business', confidence, `${to(holderName)}${domain ? ` (${domain})` : ''}`, { name: holderName, domain });
}

/** The registrant: a top-level entity with that role first, else a nested one. */
function findHolder(contacts: readonly RdapContact[]): number | null {
  let nested: number | null = null;
  for (let i = 0; i < contacts.length; i++) {
    const c = contacts[i];
    if (!c?.roles.includes('registrant') || (c.org ?? c.name) === null) continue;
    if (c.parent === null) return i;
    nested ??= i;
  }
  return nested;
}

function article(type: TrafficType): string {
  switch (type) {
    case 'isp':
      return 'an ISP';
    case 'hosting':
      return 'a host';
    case 'education':
      return 'a school or university';
    case 'government':
      return 'a government body';
    default:
      return type;
  }
}
