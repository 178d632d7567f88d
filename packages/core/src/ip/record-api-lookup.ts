import { createWriteBehind, type WriteBehindHost } from '../drivers/write-behind.ts';
import type { Verdict } from './types.ts';

/**
 * Remembers the identified businesses each key looked up with ip-to-company or ip-to-best-fit
 * (cached answers too: lookup_count counts every lookup), as list-visitors' `api` rows. Lookups
 * gather in memory and one statement a moment later (migrations/functions/ip/sl_record_api_lookups.sql)
 * adds them, so a client repeating one address costs one row update per flush, not one per request.
 */
export interface ApiLookupRecorder {
  record(apiKeyId: string, verdict: Verdict): void;
  /** Writes what has been gathered (list-visitors calls this first, so a key sees its own lookups). */
  flush(): Promise<void>;
}

interface ApiLookup {
  api_key_id: string;
  ip: string;
  domain: string;
  company_name: string;
  confidence: number;
  country: string;
  lookups: number;
}

export function createApiLookupRecorder(host: WriteBehindHost): ApiLookupRecorder {
  const lookups = createWriteBehind<ApiLookup>(host, {
    name: 'api-lookups',
    // The latest answer's company stands, as it would had each lookup written its own.
    merge: (into, item) => {
      into.lookups += item.lookups;
      into.domain = item.domain;
      into.company_name = item.company_name;
      into.confidence = item.confidence;
      into.country = item.country;
    },
    write: (batch) => host.db`select sl_record_api_lookups(${JSON.stringify(batch)}::text::jsonb)`,
  });
  return {
    record(apiKeyId, v) {
      // Anything that is not an identified business is nobody to list.
      if (!v.identified || v.traffic_type !== 'business' || !v.domain || !v.company_name) return;
      lookups.add(`${apiKeyId}|${v.ip}`, {
        api_key_id: apiKeyId,
        ip: v.ip,
        domain: v.domain,
        company_name: v.company_name,
        confidence: v.confidence,
        country: /^[A-Z]{2}$/.test(v.country_code) ? v.country_code : '',
        lookups: 1,
      });
    },
    flush: lookups.flush,
  };
}

declare module '../kernel/context.ts' {
  interface CoreDeps {
    /** Remembers keys' identified lookups for list-visitors' api rows (ip/record-api-lookup.ts). */
    apiLookups: ApiLookupRecorder;
  }
}
