/**
 * Consensus: every answer for one IP — the paid providers' and the free sources' (network ownership,
 * forward-confirmed reverse DNS, RDAP, the operator's own databases) — combined into one verdict.
 *
 * Origins. Two sources that read the same record are one witness, not two. Each provider has an
 * origin, `kind` or `kind:detail`: `origins[provider]`, else SOURCE_ORIGINS, else `provider:<name>`
 * (each paid provider an origin of its own, all of kind `provider`). The free sources' origins:
 * - ownership, maxmind, ipinfo-lite and the local class (`local`) → `asn-registry`: the AS owner's
 *   registration. Ownership repeats the local class where the local data has one; the databases
 *   classify by ownership's verdict and name the AS owner from AS-level fields.
 * - rdns → `dns` (the address's own PTR name); rdap → `rir` (the block's registration).
 *
 * Votes. Each provider votes once (a repeated provider name is ignored after its first answer):
 *
 *     v = w × c
 *
 * w is `weights[provider]` (free sources are weighed by their names too), else `defaultWeight` (1); a
 * weight ≤ 0 silences the provider. c is the provider's own confidence clamped to [0, 1], or 0.7 when
 * it gives none; a vote worth 0 is no vote. What the vote is for:
 * - traffic_type isp / hosting / vpn / education / government → that non-business type;
 * - traffic_type business, or no type (null or unknown) but a company named → the business side, and
 *   the company it names, when it names one;
 * - no type and no company → abstains.
 *
 * Companies. A company is named by its domain (normalised: lower case; no scheme, `www.`, path, port
 * or trailing dot), by its name (companyNameKey: AS handles and registry noise taken off, then case,
 * accents, punctuation and legal forms such as Inc, Ltd, LLC, GmbH, AG, SA, plc, Corp, NV, BV and
 * Company ignored), or both. Votes naming one domain are one candidate. A vote naming a company by
 * name only joins the one domain candidate among whose votes that name is given (RDAP, or ownership
 * with a reviewed domain, gives both and so links them); else the name-only votes of one name are a
 * candidate of their own, named by name — also when the name is given for two domains: a name never
 * merges two different domains. A paid provider's name counts only beside its domain (to link it):
 * a paid answer without a domain names no company, so paid-only verdicts are as they always were.
 *
 * Counting by origin. For each claim (a candidate, a non-business type, business with no company) an
 * origin's vote is the largest of its providers' votes for it, and an origin's weight the largest of
 * its voting providers' weights. W sums the origins' weights, T all the origins' claim votes, B and N
 * their business and non-business parts. For a candidate d, S_d sums the origins' votes for d, n_d
 * counts those origins and k_d their kinds:
 *
 *     bonus(n, k)  = 1 + 0.2 × min(n − 1, 2) + 0.1 × min(k − 1, 2)    agreement, at most +60%
 *     score_d      = S_d × bonus(n_d, k_d)                            ranks candidates, decides dominance
 *     P            = 1 − (0.5·S_vpn + 0.5·S_hosting + 0.25·S_isp) / T    penalty for risky traffic
 *     confidence_d = min(cap_d, S_d / W × bonus(n_d, k_d) × P)
 *
 * S_d / W is the share of all the origins' trust that backs d, discounted by their confidence. cap_d
 * is 0.75 when one origin alone names d: a single source is never "confirmed", however many of its
 * resellers repeat it. The kind term: paid providers may sell the same upstream data, so agreement
 * between evidence of different kinds (the AS registration, DNS, the block's registration, a
 * provider) is worth more; providers alone are all of one kind, which leaves their formula as it was.
 * An ISP flag costs less than a VPN or hosting flag because providers label most business lines with
 * their carrier.
 *
 * Outcome.
 * 1. No votes → not identified, 'unknown', confidence 0, 'unconfirmed'.
 * 2. N > B → the non-business type with the most votes (ties go to the more severe: vpn, hosting, isp,
 *    government, education); not identified; confidence min(1, N / W × bonus(n_N, k_N)), n_N the
 *    origins behind N, k_N their kinds.
 * 3. Otherwise the top candidate must dominate: score ≥ 1.5 × the runner-up's score. If it does not, the
 *    result is contested: not identified, 'unconfirmed', confidence = its lead over the runner-up's
 *    confidence (below 1/3 by construction).
 * 4. A dominant candidate's confidence sets the level: confirmed ≥ 0.8, likely ≥ 0.5, else unconfirmed.
 *    identified — and with it domain and company_name — only at likely or confirmed: domain is the
 *    candidate's (null for a company named by name only), company_name the name its strongest
 *    supporter gives. `matches` lists every candidate with a domain, with confidence_d, best first
 *    (ties by domain). Confidences are rounded to three decimals and levels read from the rounded
 *    values.
 * The reason counts origins ("2 providers agree on acme.com"); when a free source answered, it says
 * "sources" and ends with every vote in words (a free source's own clause, "ipinfo names acme.com"
 * for a provider), those of one origin together.
 *
 * Paid providers, with equal weights and no stated confidence (c = 0.7): three on acme.com → 2.1/3 ×
 * 1.4 = 0.98 (confirmed); two on acme.com and one on other.com → 1.4/3 × 1.2 = 0.56 (likely); two on
 * acme.com and one VPN → 0.56 × (1 − 0.5/3) ≈ 0.467 (not identified); one against one → 0.35 each,
 * contested.
 *
 * Free sources (their own confidences: ownership 0.65 for a company it names, rdns 0.6, RDAP 0.7 for a
 * direct assignment and 0.65 for a reassignment):
 * - ownership alone names Ford Motor Company, no domain → 0.65/1 = 0.65: identified, likely, domain
 *   null, company_name "Ford Motor Company", `matches` empty.
 * - ownership's "Ford Motor Company" and RDAP's "Ford Motor Co." with ford.com (one company by name;
 *   RDAP links the name to the domain) → 1.35/2 × 1.3 = 0.878: confirmed, ford.com.
 * - rdns and a reassignment's RDAP contact both on acme-widgets.com → 1.25/2 × 1.3 = 0.813: confirmed.
 * - a paid provider (0.7) and rdns (0.6) on acme-widgets.com → 1.3/2 × 1.3 = 0.845: confirmed.
 * - ownership and MaxMind's AS-level answer (0.6) both naming Ford: one origin, its vote the larger,
 *   0.65: likely, as ownership alone.
 * - ownership names Ford, rdns reports an ISP's generated naming (0.6) → P = 1 − 0.25 × 0.6/1.25 =
 *   0.88, 0.65/2 × 0.88 = 0.286: not identified.
 */
import { cleanCompanyName } from './ownership/clean-company-name.ts';
import { normaliseCompanyDomain } from './providers/normalise.ts';
import { nameWords } from './rdap/holder-names.ts';
import type { ConfidenceLevel, ConsensusResult, Match, ProviderAnswer, SourceAnswer, TrafficType } from './types.ts';

export const CONSENSUS_RULES = {
  defaultWeight: 1,
  defaultConfidence: 0.7,
  agreementBonus: 0.2,
  maxBonusedAgreements: 2,
  kindBonus: 0.1,
  maxBonusedKinds: 2,
  singleSourceCap: 0.75,
  dominance: 1.5,
  riskPenalty: { vpn: 0.5, hosting: 0.5, isp: 0.25 },
  confirmed: 0.8,
  likely: 0.5,
} as const;

/**
 * Where each free source's evidence comes from, `kind` or `kind:detail`. A provider named in neither
 * this table nor `origins` is its own origin, `provider:<name>`.
 */
export const SOURCE_ORIGINS: Readonly<Record<string, string>> = {
  // The AS owner's registration. Ownership repeats the local class when the local data has one, and
  // the operator's databases may classify by ownership's verdict (`ownerTraffic`, when a host passes
  // it) and name the AS owner from their AS-level fields (GeoLite2 ASN, IPinfo Lite's as_name and
  // as_domain). A MaxMind answer does not
  // say which of its fields it came from, so its own (GeoIP2's user_type, organization) are counted
  // here too: the databases never confirm ownership's company, while a different company or type
  // they report still counts, origins being counted per claim.
  local: 'asn-registry',
  ownership: 'asn-registry',
  maxmind: 'asn-registry',
  'ipinfo-lite': 'asn-registry',
  // A forward-confirmed PTR name: what the address's own DNS says.
  rdns: 'dns',
  // The most specific block registration, from the registry's RDAP server.
  rdap: 'rir',
};

export interface ConsensusOptions {
  /** provider → weight (PROVIDER_WEIGHTS); free sources are weighed by their names too. */
  weights: Record<string, number>;
  defaultWeight?: number;
  /** provider → origin, over SOURCE_ORIGINS: providers of one origin vote as one. */
  origins?: Record<string, string>;
}

type NonBusinessType = Exclude<TrafficType, 'business' | 'unknown'>;
const SEVERITY: readonly NonBusinessType[] = ['vpn', 'hosting', 'isp', 'government', 'education'];
const TYPE_PHRASE: Record<NonBusinessType, string> = {
  vpn: 'a VPN',
  hosting: 'a hosting network',
  isp: 'an ISP network',
  government: 'a government network',
  education: 'an education network',
};

interface Vote {
  weight: number;
  value: number;
  answer: ProviderAnswer;
  origin: string;
  /** What the vote is for, per origin: `type:<t>`, `company:<candidate index>` or `business`. */
  claim: string;
}

interface BusinessVote extends Vote {
  domain: string | null;
  nameKey: string | null;
}

interface Candidate {
  domain: string | null;
  /** The domain, or for a company named by name only, the name its strongest supporter gives. */
  label: string;
  votes: BusinessVote[];
  origins: number;
  support: number;
  score: number;
  confidence: number;
}

/** The answers for one IP, paid providers' and free sources' alike, combined into one verdict (rules above). */
export function consensus(answers: readonly ProviderAnswer[], opts: ConsensusOptions): ConsensusResult {
  const defaultWeight = opts.defaultWeight ?? CONSENSUS_RULES.defaultWeight;
  const seen = new Set<string>();
  const votes: Vote[] = [];
  const businessVotes: BusinessVote[] = [];
  const byType = new Map<NonBusinessType, Vote[]>();

  for (const answer of answers) {
    if (seen.has(answer.provider)) continue;
    seen.add(answer.provider);
    const weight = Math.max(0, finiteOr(Object.hasOwn(opts.weights, answer.provider) ? opts.weights[answer.provider] : undefined, defaultWeight));
    const confidence = clamp01(finiteOr(answer.confidence, CONSENSUS_RULES.defaultConfidence));
    const value = weight * confidence;
    if (value <= 0) continue;
    const origin = originOf(answer.provider, opts.origins);
    const domain = normaliseCompanyDomain(answer.domain);
    // A paid provider's name links its domain to the free sources' name-only votes, but never names a
    // company alone: paid answers without a domain identify nobody, as they always have.
    const nameKey = kindOf(origin) === 'provider' && domain === null ? null : companyNameKey(answer.company_name);
    const type = answer.traffic_type;
    if (type !== null && type !== 'business' && type !== 'unknown') {
      const vote: Vote = { weight, value, answer, origin, claim: `type:${type}` };
      push(byType, type, vote);
      votes.push(vote);
    } else if (type === 'business' || domain !== null || nameKey !== null) {
      const vote: BusinessVote = { weight, value, answer, origin, claim: 'business', domain, nameKey };
      businessVotes.push(vote);
      votes.push(vote);
    }
  }

  const noun = answers.some(isSourceAnswer) ? 'source' : 'provider';
  if (votes.length === 0) return unidentified(`no ${noun} identified a company`);
  const explained = (reason: string) => (noun === 'source' ? `${reason} (${clauses(votes)})` : reason);

  const totalWeight = originWeight(votes);
  const groups = companies(businessVotes);
  groups.forEach((group, i) => {
    for (const v of group) v.claim = `company:${i}`;
  });
  const totalVotes = support(votes);
  const typeMass = (t: NonBusinessType): number => support(byType.get(t) ?? []);
  const { riskPenalty } = CONSENSUS_RULES;
  const risk = riskPenalty.vpn * typeMass('vpn') + riskPenalty.hosting * typeMass('hosting') + riskPenalty.isp * typeMass('isp');
  const penalty = 1 - risk / totalVotes;

  const candidates: Candidate[] = groups.map((group) => {
    const s = support(group);
    const n = originCount(group);
    const bonus = agreementBonus(n, kindCount(group));
    const cap = n === 1 ? CONSENSUS_RULES.singleSourceCap : 1;
    const domain = group[0]?.domain ?? null;
    return {
      domain,
      label: domain ?? nameOf(group) ?? '',
      votes: group,
      origins: n,
      support: s,
      score: s * bonus,
      confidence: Math.min(cap, (s / totalWeight) * bonus * penalty),
    };
  });
  candidates.sort((a, b) => b.score - a.score || b.confidence - a.confidence || a.label.localeCompare(b.label));
  const matches: Match[] = candidates
    .flatMap((c) => (c.domain === null ? [] : [{ domain: c.domain, confidence: round3(c.confidence) }]))
    .sort((a, b) => b.confidence - a.confidence || a.domain.localeCompare(b.domain));

  const nonBusinessVotes = [...byType.values()].flat();
  // Each side counts an origin once (its largest vote there): a source that says both "business"
  // and "this company" is one voice for business, not two.
  const business = sideSupport(businessVotes);
  const nonBusiness = sideSupport(nonBusinessVotes);
  const businessOrigins = originCount(businessVotes);
  const voters = originCount(votes);
  const presentTypes = SEVERITY.filter((t) => byType.has(t));
  const reports = (t: NonBusinessType): string => {
    const n = originCount(byType.get(t) ?? []);
    return `${who(n, noun)} ${n === 1 ? 'reports' : 'report'} ${TYPE_PHRASE[t]}`;
  };

  if (nonBusiness > business) {
    const top = presentTypes.reduce<NonBusinessType | null>((best, t) => (best === null || typeMass(t) > typeMass(best) ? t : best), null) ?? 'vpn';
    const confidence = round3(Math.min(1, (nonBusiness / totalWeight) * agreementBonus(originCount(nonBusinessVotes), kindCount(nonBusinessVotes))));
    const ordered = [top, ...presentTypes.filter((t) => t !== top)];
    let reason = ordered.map(reports).join(' and ');
    if (businessVotes.length > 0) reason += `, outweighing ${businessClause(businessOrigins, candidates, noun)}`;
    return {
      identified: false,
      domain: null,
      company_name: null,
      confidence,
      confidence_level: levelOf(confidence),
      traffic_type: top,
      reason: explained(reason),
      matches,
    };
  }

  const riskNote = presentTypes.map(reports).join(' and ');
  const winner = candidates[0];
  if (!winner) {
    return notIdentified(
      0,
      explained(
        `${who(businessOrigins, noun)} ${businessOrigins === 1 ? 'reports' : 'report'} business traffic but no company domain${riskNote ? `; ${riskNote}` : ''}`,
      ),
      matches,
    );
  }

  const runnerUp = candidates[1];
  if (runnerUp && winner.score < CONSENSUS_RULES.dominance * runnerUp.score) {
    const contested = candidates.map((c) => `${c.label} (${c.origins} ${c.origins === 1 ? noun : `${noun}s`})`).join(', ');
    return notIdentified(
      round3(Math.max(0, winner.confidence - runnerUp.confidence)),
      explained(`${noun}s disagree: ${contested}${riskNote ? `; ${riskNote}` : ''}`),
      matches,
    );
  }

  const confidence = round3(winner.confidence);
  const level = levelOf(confidence);
  const n = winner.origins;
  let reason: string;
  if (n === voters) reason = n === 1 ? `one ${noun} names ${winner.label}` : `${n} ${noun}s agree on ${winner.label}`;
  else reason = n === 1 ? `one of ${voters} ${noun}s names ${winner.label}` : `${n} of ${voters} ${noun}s name ${winner.label}`;
  for (const other of candidates.slice(1)) reason += `, ${who(other.origins, noun)} ${other.origins === 1 ? 'names' : 'name'} ${other.label}`;
  if (riskNote) reason += ` but ${riskNote}`;
  if (level === 'unconfirmed') return notIdentified(confidence, explained(`${reason}; not enough to identify the company`), matches);

  return {
    identified: true,
    domain: winner.domain,
    company_name: nameOf(winner.votes),
    confidence,
    confidence_level: level,
    traffic_type: 'business',
    reason: explained(reason),
    matches,
  };
}

/** A result that names no company, for the given reason. */
export function unidentified(reason: string): ConsensusResult {
  return {
    identified: false,
    domain: null,
    company_name: null,
    confidence: 0,
    confidence_level: 'unconfirmed',
    traffic_type: 'unknown',
    reason,
    matches: [],
  };
}

/** confirmed ≥ 0.8, likely ≥ 0.5, otherwise unconfirmed. */
export function levelOf(confidence: number): ConfidenceLevel {
  if (confidence >= CONSENSUS_RULES.confirmed) return 'confirmed';
  if (confidence >= CONSENSUS_RULES.likely) return 'likely';
  return 'unconfirmed';
}

/**
 * A company name as consensus compares it: the AS handle and registry noise taken off
 * (cleanCompanyName), then lower-case words without accents, punctuation or legal forms (Inc, Ltd,
 * LLC, GmbH, AG, SA, plc, Corp, NV, BV, Company…: holder-names.ts), so "FORD-ASN-01 - Ford Motor
 * Company" and "Ford Motor Co." are one company, as are "Allied Irish Banks PLC" and "Allied Irish
 * Banks, p.l.c.". Null when nothing but a handle or a legal form is left.
 */
export function companyNameKey(name: string | null): string | null {
  if (name === null || name.trim() === '') return null;
  const cleaned = cleanCompanyName(name);
  if (cleaned === null) return null;
  // Dots and apostrophes join what they split: "P.L.C." is plc, "S.A." sa, "McDonald's" mcdonalds.
  const words = nameWords(cleaned.replace(/[.'’]/g, ''));
  return words.length > 0 ? words.join(' ') : null;
}

/**
 * Whether a company name (its companyNameKey) may be the company of a domain: the domain's first
 * label is the name run together ("acmewidgets"), its initials ("ibm"), or one of its words of four
 * letters or more.
 */
function mayBeNamed(domain: string, key: string): boolean {
  const label = domain.split('.')[0] ?? '';
  if (label.length < 2) return false;
  const words = key.split(' ');
  return (
    label === words.join('') || (words.length > 1 && label === words.map((w) => w[0]).join('')) || words.some((w) => w.length >= 4 && w === label)
  );
}

function notIdentified(confidence: number, reason: string, matches: Match[]): ConsensusResult {
  return {
    identified: false,
    domain: null,
    company_name: null,
    confidence,
    confidence_level: 'unconfirmed',
    traffic_type: 'business',
    reason,
    matches,
  };
}

function originOf(provider: string, origins: Record<string, string> | undefined): string {
  if (origins && Object.hasOwn(origins, provider)) return origins[provider] as string;
  if (Object.hasOwn(SOURCE_ORIGINS, provider)) return SOURCE_ORIGINS[provider] as string;
  return `provider:${provider}`;
}

// `provider:ipinfo` and `provider:snitcher` are two origins of one kind.
function kindOf(origin: string): string {
  const colon = origin.indexOf(':');
  return colon < 0 ? origin : origin.slice(0, colon);
}

/**
 * Business votes grouped into companies: one group per normalised domain, and the votes naming a
 * company by name only either joined to the one domain group whose votes give that name, or grouped
 * by that name. A name never merges two domains.
 */
function companies(votes: BusinessVote[]): BusinessVote[][] {
  const byDomain = new Map<string, BusinessVote[]>();
  const byName = new Map<string, BusinessVote[]>();
  for (const v of votes) {
    if (v.domain !== null) push(byDomain, v.domain, v);
    else if (v.nameKey !== null) push(byName, v.nameKey, v);
  }
  const domainsNamed = new Map<string, Set<string>>();
  for (const [domain, group] of byDomain) {
    for (const v of group) {
      if (v.nameKey === null) continue;
      const domains = domainsNamed.get(v.nameKey);
      if (domains) domains.add(domain);
      else domainsNamed.set(v.nameKey, new Set([domain]));
    }
  }
  const groups = [...byDomain.values()];
  for (const [key, group] of byName) {
    // Given with a domain by another source, else the one domain the name may be written as
    // ("International Business Machines" and ibm.com); a name that fits two domains joins neither.
    const domains = domainsNamed.get(key) ?? new Set([...byDomain.keys()].filter((d) => mayBeNamed(d, key)));
    const joined = domains.size === 1 ? byDomain.get([...domains][0] as string) : undefined;
    if (joined) joined.push(...group);
    else groups.push(group);
  }
  return groups;
}

/** Per key, the largest of the values given for it, in the order the keys first appear. */
function largestPer<T>(items: readonly T[], key: (item: T) => string, value: (item: T) => number): Map<string, number> {
  const best = new Map<string, number>();
  for (const item of items) {
    const k = key(item);
    const had = best.get(k);
    const v = value(item);
    best.set(k, had === undefined ? v : Math.max(had, v));
  }
  return best;
}

/** The votes as counted: for each origin and claim the largest of its providers' votes, added up. */
/** One side's mass (business or not): each origin's largest vote on that side, added up. */
function sideSupport(votes: readonly Vote[]): number {
  return perOrigin(votes, (v) => v.value);
}

function support(votes: readonly Vote[]): number {
  return sumOf(largestPer(votes, originAndClaim, (v) => v.value).values());
}

/** W: for each origin the largest of its voting providers' weights, added up. */
function originWeight(votes: readonly Vote[]): number {
  return perOrigin(votes, (v) => v.weight);
}

/** For each origin the largest of `value` over its votes, added up. */
function perOrigin(votes: readonly Vote[], value: (v: Vote) => number): number {
  return sumOf(largestPer(votes, (v) => v.origin, value).values());
}

const originAndClaim = (v: Vote) => `${v.origin}\n${v.claim}`;

function originCount(votes: readonly Vote[]): number {
  return new Set(votes.map((v) => v.origin)).size;
}

function kindCount(votes: readonly Vote[]): number {
  return new Set(votes.map((v) => kindOf(v.origin))).size;
}

function agreementBonus(origins: number, kinds: number): number {
  const r = CONSENSUS_RULES;
  return (
    1 +
    r.agreementBonus * Math.min(Math.max(0, origins - 1), r.maxBonusedAgreements) +
    r.kindBonus * Math.min(Math.max(0, kinds - 1), r.maxBonusedKinds)
  );
}

// The name given by the strongest supporter that gave one.
function nameOf(votes: readonly Vote[]): string | null {
  const named = votes.filter((v) => v.answer.company_name !== null && v.answer.company_name.trim() !== '');
  named.sort((a, b) => b.value - a.value);
  return named[0]?.answer.company_name?.trim() ?? null;
}

function businessClause(voters: number, candidates: Candidate[], noun: string): string {
  if (candidates.length === 0) return `${who(voters, noun)} that ${voters === 1 ? 'reports' : 'report'} business traffic`;
  return `${who(voters, noun)} that ${voters === 1 ? 'names' : 'name'} ${candidates.map((c) => c.label).join(' or ')}`;
}

function who(n: number, noun: string): string {
  return n === 1 ? `one ${noun}` : `${n} ${noun}s`;
}

function isSourceAnswer(answer: ProviderAnswer): answer is SourceAnswer {
  return typeof (answer as Partial<SourceAnswer>).reason === 'string';
}

/** Each vote in words (a free source's own clause), those of one origin together. */
function clauses(votes: readonly Vote[]): string {
  const byOrigin = new Map<string, string[]>();
  for (const v of votes) push(byOrigin, v.origin, clauseOf(v.answer));
  return [...byOrigin].map(([origin, said]) => (said.length === 1 ? said[0] : `${said.join(' and ')}, from one origin (${origin})`)).join('; ');
}

function clauseOf(answer: ProviderAnswer): string {
  if (isSourceAnswer(answer)) return answer.reason;
  const type = answer.traffic_type;
  if (type !== null && type !== 'business' && type !== 'unknown') return `${answer.provider} reports ${TYPE_PHRASE[type]}`;
  return `${answer.provider} names ${normaliseCompanyDomain(answer.domain) ?? answer.company_name?.trim() ?? 'no company'}`;
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

function sumOf(values: Iterable<number>): number {
  let total = 0;
  for (const v of values) total += v;
  return total;
}

function finiteOr(v: number | null | undefined, fallback: number): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : fallback;
}

function clamp01(x: number): number {
  return Math.min(1, Math.max(0, x));
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
