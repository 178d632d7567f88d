/**
 * The operator's own databases (IP_DATABASES) asked about one address: one answer per vendor (MaxMind,
 * IPinfo), each a vote for consensus, and what they know of the routing network for the other free
 * sources. The host opens the files and hands them in already typed; core reads records, never files.
 */
import type { SourceAnswer } from '../types.ts';
import { answerFromDatabases, type DatabaseHit, type OperatorDatabaseOptions } from './answer-from-databases.ts';
import type { OperatorDatabaseKindInfo, OperatorDatabaseVendor } from './detect-database-kind.ts';
import { hasFacts, readDatabaseRecord } from './read-database-record.ts';

/** One opened database, as a host provides it. */
export interface OperatorDatabase {
  /** The file, for messages. */
  readonly path: string;
  readonly kind: OperatorDatabaseKindInfo;
  /** The record covering the address, or null; may throw on a damaged file. */
  get(ip: string): unknown;
}

export interface OperatorDatabaseLookup {
  /** At most one answer per vendor: MaxMind first, then IPinfo. */
  answers: SourceAnswer[];
  /** The routing network as the databases name it (the first file that knows wins), for the ownership source. */
  network: { asn: number | null; as_organisation: string | null; as_domain: string | null };
}

const VENDORS: readonly OperatorDatabaseVendor[] = ['maxmind', 'ipinfo-lite'];

/**
 * Asks every database about `ip`. A database that throws is skipped for this address (a damaged file
 * never fails a lookup; the host reports it); the others still answer.
 */
export function lookUpOperatorDatabases(
  ip: string,
  databases: readonly OperatorDatabase[],
  opts: OperatorDatabaseOptions = {},
): OperatorDatabaseLookup {
  const hits: DatabaseHit[] = [];
  for (const db of databases) {
    let record: unknown;
    try {
      record = db.get(ip);
    } catch {
      continue;
    }
    if (record === null || record === undefined) continue;
    const facts = readDatabaseRecord(db.kind.kind, record);
    if (hasFacts(facts)) hits.push({ kind: db.kind, facts });
  }
  const answers: SourceAnswer[] = [];
  for (const vendor of VENDORS) {
    const answer = answerFromDatabases(
      vendor,
      hits.filter((h) => h.kind.vendor === vendor),
      opts,
    );
    if (answer) answers.push(answer);
  }
  // The network from one file (the first that names its AS), so an AS number and another file's AS
  // name or domain are never paired; a later file adds only what it says of the same AS.
  const owner = hits.find((h) => h.facts.asn !== null || h.facts.asOrganisation !== null)?.facts;
  const sameAs = hits.filter((h) => owner !== undefined && (owner.asn === null || h.facts.asn === owner.asn));
  return {
    answers,
    network: {
      asn: owner?.asn ?? null,
      as_organisation: owner?.asOrganisation ?? sameAs.find((h) => h.facts.asOrganisation !== null)?.facts.asOrganisation ?? null,
      as_domain: owner?.asDomain ?? sameAs.find((h) => h.facts.asDomain !== null)?.facts.asDomain ?? null,
    },
  };
}
