import type { TrafficType } from '../types.ts';

/**
 * What an RDAP registration says about who uses its addresses: the reviewed data behind
 * interpret-network.ts. The registry's `type` of the most specific network decides who holds it;
 * the holder's name, compared with the routing network's owner, decides whether that holder is a
 * company of its own.
 *
 * - `end-user`: assigned to the organisation that uses it. `from: 'registry'` when the registry
 *   gave it directly (ARIN DIRECT ASSIGNMENT, RIPE ASSIGNED PI, LEGACY space held by its user);
 *   `from: 'provider'` when an ISP passed part of its own space to a customer (ARIN REASSIGNED,
 *   RIPE ASSIGNED PA): then the holder is the customer only when it is not the ISP itself.
 * - `onward`: an ISP's space handed to another ISP to assign onward (ARIN REALLOCATED, RIPE
 *   SUB-ALLOCATED PA): clearly an ISP's.
 * - `allocation`: a registry's allocation to an LIR/ISP (ARIN DIRECT ALLOCATION, RIPE ALLOCATED
 *   PA): the holder may be an ISP, a host or a large company, and its customers' assignments may lie
 *   inside it, so it names no company.
 * - `registry`: a placeholder for space another registry holds or nobody holds: says nothing.
 *
 * Types are compared upper-cased with runs of spaces, hyphens and underscores as one space, so
 * LACNIC's `re-allocated` and ARIN's `REALLOCATED` meet. A type not listed says nothing.
 */
export type RegistrationKind = 'end-user' | 'onward' | 'allocation' | 'registry';

export interface RegistrationType {
  kind: RegistrationKind;
  /** For `end-user`: who delegated it. */
  from?: 'registry' | 'provider';
  /**
   * For a provider's assignment: the type alone says the holder is the provider's customer (ARIN
   * REASSIGNED). RIPE's ASSIGNED PA is also how an LIR registers its own pools, so there only the
   * holder ≠ routing owner test tells them apart, and without the routing owner it says nothing.
   */
  toCustomer?: boolean;
  /** The verb a reason uses: "203.0.113.0/26 reassigned to Acme Widgets Inc". */
  verb: string;
  /** Whether the registry may hold smaller registrations inside it (its answer is trusted for one block only). */
  divisible: boolean;
}

const directAssignment: RegistrationType = { kind: 'end-user', from: 'registry', verb: 'assigned', divisible: false };
const reassignment: RegistrationType = { kind: 'end-user', from: 'provider', toCustomer: true, verb: 'reassigned', divisible: false };
const paAssignment: RegistrationType = { kind: 'end-user', from: 'provider', verb: 'assigned', divisible: false };
const legacy: RegistrationType = { kind: 'end-user', from: 'registry', verb: 'held', divisible: true };
const onward: RegistrationType = { kind: 'onward', verb: 'reallocated', divisible: true };
const allocation: RegistrationType = { kind: 'allocation', verb: 'allocated', divisible: true };
const placeholder: RegistrationType = { kind: 'registry', verb: 'registered', divisible: true };

export const REGISTRATION_TYPES: Readonly<Record<string, RegistrationType>> = {
  // ARIN (NetType upper-cased; both the -ED and the -ION spellings are seen in RDAP answers).
  'DIRECT ASSIGNMENT': directAssignment,
  REASSIGNED: reassignment,
  REASSIGNMENT: reassignment,
  'DIRECT ALLOCATION': allocation,
  REALLOCATED: onward,
  REALLOCATION: onward,
  'ALLOCATED TO RIPE NCC': placeholder,
  'ALLOCATED TO APNIC': placeholder,
  'ALLOCATED TO LACNIC': placeholder,
  'ALLOCATED TO AFRINIC': placeholder,
  'TRANSFERRED TO RIPE NCC': placeholder,
  'TRANSFERRED TO APNIC': placeholder,
  'TRANSFERRED TO LACNIC': placeholder,
  'TRANSFERRED TO AFRINIC': placeholder,
  'EARLY REGISTRATIONS MAINTAINED BY ARIN': placeholder,
  'IANA SPECIAL USE': placeholder,
  RESERVED: placeholder,
  // RIPE NCC and AFRINIC (inetnum / inet6num status).
  'ASSIGNED PI': directAssignment,
  'ASSIGNED ANYCAST': directAssignment,
  'ASSIGNED PA': paAssignment,
  ASSIGNED: paAssignment,
  LEGACY: legacy,
  'ALLOCATED PA': allocation,
  'ALLOCATED PI': allocation,
  'ALLOCATED UNSPECIFIED': allocation,
  'ALLOCATED BY RIR': allocation,
  'SUB ALLOCATED PA': onward,
  'ALLOCATED BY LIR': onward,
  'LIR PARTITIONED PA': onward,
  'LIR PARTITIONED PI': onward,
  'AGGREGATED BY LIR': onward,
  'NOT SET': placeholder,
  // APNIC.
  'ASSIGNED PORTABLE': directAssignment,
  'ASSIGNED NON PORTABLE': paAssignment,
  'ALLOCATED PORTABLE': allocation,
  'ALLOCATED NON PORTABLE': onward,
  // LACNIC (lower case in its answers; `reassigned` and `reallocated` meet ARIN's above, and its
  // `assigned` meets RIPE's IPv6 ASSIGNED: judged as a provider's, the stricter reading).
  ALLOCATED: allocation,
  'RE ASSIGNED': reassignment,
  'RE ALLOCATED': onward,
};

/** The registry's type, read as the table reads it; null when unlisted. */
export function registrationType(raw: string | null): RegistrationType | null {
  if (!raw) return null;
  const key = raw
    .toUpperCase()
    .replace(/[\s_-]+/g, ' ')
    .replace(/[^A-Z ]/g, '')
    .trim();
  return REGISTRATION_TYPES[key] ?? null;
}

/**
 * Words in a holder's name that say what it is, whatever the registration's type. Matched as whole
 * words (or phrases) of the name lower-cased without accents. `private` marks a holder that is a
 * person or a pool rather than an organisation ("Private Customer", "Dynamic pool"): it names no
 * company. A word here must rarely name a business that would visit a website: "communications"
 * and "cloud" are left out for that reason (PR agencies, software companies).
 */
export const HOLDER_NAME_CLASSES: ReadonlyArray<{ class: TrafficType | 'private'; words: readonly string[] }> = [
  {
    class: 'private',
    words: [
      'private customer',
      'private residence',
      'residential',
      'residence',
      'dynamic',
      'dynamic pool',
      'dialup',
      'dial up',
      'pppoe',
      'subscriber',
      'subscribers',
      'home users',
      'end users',
      'customers',
    ],
  },
  {
    class: 'isp',
    words: [
      'telecom',
      'telecoms',
      'telecommunication',
      'telecommunications',
      'telekom',
      'telekomunikasi',
      'telecomunicacoes',
      'telecomunicaciones',
      'telecomunicazioni',
      'telefonica',
      'telco',
      'broadband',
      'cable',
      'cablevision',
      'isp',
      'internet service provider',
      'internet services provider',
      'wireless',
      'cellular',
      'mobile',
      'telephone',
      'fibre',
      'fiber',
      'dsl',
    ],
  },
  { class: 'hosting', words: ['hosting', 'datacenter', 'datacentre', 'data center', 'data centre', 'colocation', 'vps', 'dedicated servers'] },
  {
    class: 'education',
    words: [
      'university',
      'universidad',
      'universidade',
      'universitat',
      'universitaet',
      'universite',
      'universita',
      'college',
      'school',
      'schools',
      'school district',
      'polytechnic',
      'institute of technology',
      'k12',
    ],
  },
  {
    class: 'government',
    words: ['government', 'ministry', 'ministerio', 'ministere', 'department of', 'city of', 'county of', 'state of', 'municipality', 'municipal'],
  },
];

/**
 * Domains that belong to the registries themselves: an RIR's placeholder contact or a registry's
 * own mailbox is never the holder's domain.
 */
export const REGISTRY_DOMAINS: ReadonlySet<string> = new Set([
  'arin.net',
  'ripe.net',
  'apnic.net',
  'lacnic.net',
  'afrinic.net',
  'iana.org',
  'nro.net',
  'registro.br',
  'nic.br',
  'nic.ad.jp',
  'twnic.net.tw',
  'idnic.net',
  'nic.or.kr',
]);

/**
 * The weight of each claim RDAP makes, in [0, 1]. A registration is the registry's record of who
 * holds the block, not who sits behind one address of it, so no claim is as strong as a paid
 * provider's `confirmed`; a block the registry gave a company directly weighs more than one its
 * ISP reassigned (ISPs update their reassignments less carefully).
 */
export const RDAP_CONFIDENCE = {
  /** A company's own block from the registry (ARIN DIRECT ASSIGNMENT, RIPE ASSIGNED PI). */
  directBusiness: 0.7,
  /** A block an ISP reassigned to a customer that is not itself. */
  reassignedBusiness: 0.65,
  /** An onward allocation, or a holder whose name says ISP or host. */
  network: 0.6,
  /** A holder whose name says university or government. */
  institution: 0.6,
} as const;
