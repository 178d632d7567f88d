/**
 * A People Data Labs IP Enrichment answer (200) for `ip`, shaped as its API documents it: the
 * address's metadata (a plain address unless `metadata` says: a VPN, hosting…), its location, and
 * the company and the likely person where given. For msw handlers standing in for PDL.
 */
export function pdlIpRecord(
  ip: string,
  opts: { metadata?: Record<string, unknown>; company?: Record<string, unknown> | null; person?: Record<string, unknown> | null } = {},
): Record<string, unknown> {
  return {
    status: 200,
    data: {
      ip: {
        address: ip,
        metadata: {
          version: ip.includes(':') ? 6 : 4,
          mobile: false,
          hosting: false,
          proxy: false,
          tor: false,
          vpn: false,
          relay: false,
          service: null,
          asn_domain: null,
          ...opts.metadata,
        },
        location: { name: 'phoenix, arizona, united states', country: 'united states', continent: 'north america' },
      },
      ...(opts.company ? { company: opts.company } : {}),
      ...(opts.person ? { person: opts.person } : {}),
    },
  };
}
