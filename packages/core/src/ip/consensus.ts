/**
 * Consensus: the paid providers' answers for one IP combined into one verdict.
 *
 * Votes. Each provider votes once (a repeated provider name is ignored after its first answer):
 *
 *     v = w × c
 *
 * w is `weights[provider]`, else `defaultWeight` (1); a weight ≤ 0 silences the provider. c is the
 * provider's own confidence clamped to [0, 1], or 0.7 when it gives none; a vote worth 0 is no vote.
 * What the vote is for:
 * - traffic_type isp / hosting / vpn / education / government → that non-business type;
 * - traffic_type business, or no type but a domain → the business side, and the candidate named by its
 *   normalised domain (lower case; no scheme, `www.`, path, port or trailing dot) when it names one;
 * - no type and no domain → abstains.
 * W is the sum of the weights of all voting providers, T the sum of all votes, B the business votes and
 * N the non-business votes.
 *
 * Candidates. For a domain d named by n_d providers whose votes sum to S_d:
 *
 *     bonus_d      = 1 + 0.2 × min(n_d − 1, 2)          agreement bonus, at most +40%
 *     score_d      = S_d × bonus_d                      ranks candidates, decides dominance
 *     P            = 1 − (0.5·S_vpn + 0.5·S_hosting + 0.25·S_isp) / T     penalty for risky traffic
 *     confidence_d = min(cap_d, S_d / W × bonus_d × P)
 *
 * S_d / W is the share of all providers' trust that backs d, discounted by their confidence. cap_d is
 * 0.75 when one provider alone names d: a single source is never "confirmed". An ISP flag costs less
 * than a VPN or hosting flag because providers label most business lines with their carrier.
 *
 * Outcome.
 * 1. No votes → not identified, 'unknown', confidence 0, 'unconfirmed'.
 * 2. N > B → the non-business type with the most votes (ties go to the more severe: vpn, hosting, isp,
 *    government, education); not identified; confidence min(1, N / W × bonus(n_N)), n_N the providers
 *    behind N.
 * 3. Otherwise the top candidate must dominate: score ≥ 1.5 × the runner-up's score. If it does not, the
 *    result is contested: not identified, 'unconfirmed', confidence = its lead over the runner-up's
 *    confidence (below 1/3 by construction).
 * 4. A dominant candidate's confidence sets the level: confirmed ≥ 0.8, likely ≥ 0.5, else unconfirmed.
 *    identified — and with it domain and company_name — only at likely or confirmed.
 *
 * With equal weights and no stated confidence (c = 0.7): three providers on acme.com → 2.1/3 × 1.4 =
 * 0.98 (confirmed); two on acme.com and one on other.com → 1.4/3 × 1.2 = 0.56 (likely); two on
 * acme.com and one VPN → 0.56 × (1 − 0.5/3) ≈ 0.467 (not identified); one against one → 0.35 each,
 * contested. `matches` lists every business candidate with confidence_d, best first (ties by domain).
 * Confidences are rounded to three decimals and levels read from the rounded values.
 */
import { normaliseCompanyDomain } from './providers/normalise.ts';
import type { ConfidenceLevel, ConsensusResult, Match, ProviderAnswer, TrafficType } from './types.ts';

export const CONSENSUS_RULES = {
  defaultWeight: 1,
  defaultConfidence: 0.7,
  agreementBonus: 0.2,
  maxBonusedAgreements: 2,
  singleSourceCap: 0.75,
  dominance: 1.5,
  riskPenalty: { vpn: 0.5, hosting: 0.5, isp: 0.25 },
  confirmed: 0.8,
  likely: 0.5,
} as const;

export interface ConsensusOptions {
  weights: Record<string, number>;
  defaultWeight?: number;
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
}

interface Candidate {
  domain: string;
  votes: Vote[];
  support: number;
  score: number;
  confidence: number;
}

export function consensus(answers: ProviderAnswer[], opts: ConsensusOptions): ConsensusResult {
  const defaultWeight = opts.defaultWeight ?? CONSENSUS_RULES.defaultWeight;
  const seen = new Set<string>();
  const businessVotes: Vote[] = [];
  const byDomain = new Map<string, Vote[]>();
  const byType = new Map<NonBusinessType, Vote[]>();
  let totalWeight = 0;
  let totalVotes = 0;

  for (const answer of answers) {
    if (seen.has(answer.provider)) continue;
    seen.add(answer.provider);
    const weight = Math.max(0, finiteOr(Object.hasOwn(opts.weights, answer.provider) ? opts.weights[answer.provider] : undefined, defaultWeight));
    const confidence = clamp01(finiteOr(answer.confidence, CONSENSUS_RULES.defaultConfidence));
    const value = weight * confidence;
    if (value <= 0) continue;
    const vote: Vote = { weight, value, answer };
    const domain = normaliseCompanyDomain(answer.domain);
    const type = answer.traffic_type;
    if (type !== null && type !== 'business' && type !== 'unknown') {
      push(byType, type, vote);
    } else if (type === 'business' || domain !== null) {
      businessVotes.push(vote);
      if (domain !== null) push(byDomain, domain, vote);
    } else {
      continue;
    }
    totalWeight += weight;
    totalVotes += value;
  }

  if (totalVotes === 0) return unidentified('no provider identified a company');

  const typeMass = (t: NonBusinessType): number => sum(byType.get(t) ?? []);
  const { riskPenalty } = CONSENSUS_RULES;
  const risk = riskPenalty.vpn * typeMass('vpn') + riskPenalty.hosting * typeMass('hosting') + riskPenalty.isp * typeMass('isp');
  const penalty = 1 - risk / totalVotes;

  const candidates: Candidate[] = [...byDomain].map(([domain, votes]) => {
    const support = sum(votes);
    const bonus = agreementBonus(votes.length);
    const cap = votes.length === 1 ? CONSENSUS_RULES.singleSourceCap : 1;
    return { domain, votes, support, score: support * bonus, confidence: Math.min(cap, (support / totalWeight) * bonus * penalty) };
  });
  candidates.sort((a, b) => b.score - a.score || b.confidence - a.confidence || a.domain.localeCompare(b.domain));
  const matches: Match[] = candidates
    .map((c) => ({ domain: c.domain, confidence: round3(c.confidence) }))
    .sort((a, b) => b.confidence - a.confidence || a.domain.localeCompare(b.domain));

  const nonBusinessVotes = [...byType.values()].flat();
  const business = sum(businessVotes);
  const nonBusiness = sum(nonBusinessVotes);
  const voters = businessVotes.length + nonBusinessVotes.length;
  const presentTypes = SEVERITY.filter((t) => byType.has(t));

  if (nonBusiness > business) {
    const top = presentTypes.reduce<NonBusinessType | null>((best, t) => (best === null || typeMass(t) > typeMass(best) ? t : best), null) ?? 'vpn';
    const confidence = round3(Math.min(1, (nonBusiness / totalWeight) * agreementBonus(nonBusinessVotes.length)));
    const ordered = [top, ...presentTypes.filter((t) => t !== top)];
    let reason = ordered.map((t) => reports(t, byType.get(t)?.length ?? 0)).join(' and ');
    if (businessVotes.length > 0) reason += `, outweighing ${businessClause(businessVotes.length, candidates)}`;
    return {
      identified: false,
      domain: null,
      company_name: null,
      confidence,
      confidence_level: levelOf(confidence),
      traffic_type: top,
      reason,
      matches,
    };
  }

  const riskNote = presentTypes.map((t) => reports(t, byType.get(t)?.length ?? 0)).join(' and ');
  const winner = candidates[0];
  if (!winner) {
    const n = businessVotes.length;
    return notIdentified(
      0,
      `${who(n)} ${n === 1 ? 'reports' : 'report'} business traffic but no company domain${riskNote ? `; ${riskNote}` : ''}`,
      matches,
    );
  }

  const runnerUp = candidates[1];
  if (runnerUp && winner.score < CONSENSUS_RULES.dominance * runnerUp.score) {
    const contested = candidates.map((c) => `${c.domain} (${c.votes.length} ${c.votes.length === 1 ? 'provider' : 'providers'})`).join(', ');
    return notIdentified(
      round3(Math.max(0, winner.confidence - runnerUp.confidence)),
      `providers disagree: ${contested}${riskNote ? `; ${riskNote}` : ''}`,
      matches,
    );
  }

  const confidence = round3(winner.confidence);
  const level = levelOf(confidence);
  const n = winner.votes.length;
  let reason: string;
  if (n === voters) reason = n === 1 ? `one provider names ${winner.domain}` : `${n} providers agree on ${winner.domain}`;
  else reason = n === 1 ? `one of ${voters} providers names ${winner.domain}` : `${n} of ${voters} providers name ${winner.domain}`;
  for (const other of candidates.slice(1)) reason += `, ${who(other.votes.length)} ${other.votes.length === 1 ? 'names' : 'name'} ${other.domain}`;
  if (riskNote) reason += ` but ${riskNote}`;
  if (level === 'unconfirmed') return notIdentified(confidence, `${reason}; not enough to identify the company`, matches);

  return {
    identified: true,
    domain: winner.domain,
    company_name: nameOf(winner),
    confidence,
    confidence_level: level,
    traffic_type: 'business',
    reason,
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

function agreementBonus(providers: number): number {
  return 1 + CONSENSUS_RULES.agreementBonus * Math.min(Math.max(0, providers - 1), CONSENSUS_RULES.maxBonusedAgreements);
}

// The name given by the strongest supporter that gave one.
function nameOf(candidate: Candidate): string | null {
  const named = candidate.votes.filter((v) => v.answer.company_name !== null && v.answer.company_name.trim() !== '');
  named.sort((a, b) => b.value - a.value);
  return named[0]?.answer.company_name?.trim() ?? null;
}

function businessClause(voters: number, candidates: Candidate[]): string {
  if (candidates.length === 0) return `${who(voters)} that ${voters === 1 ? 'reports' : 'report'} business traffic`;
  return `${who(voters)} that ${voters === 1 ? 'names' : 'name'} ${candidates.map((c) => c.domain).join(' or ')}`;
}

function reports(type: NonBusinessType, n: number): string {
  return `${who(n)} ${n === 1 ? 'reports' : 'report'} ${TYPE_PHRASE[type]}`;
}

function who(n: number): string {
  return n === 1 ? 'one provider' : `${n} providers`;
}

function push<K>(map: Map<K, Vote[]>, key: K, vote: Vote): void {
  const list = map.get(key);
  if (list) list.push(vote);
  else map.set(key, [vote]);
}

function sum(votes: Vote[]): number {
  return votes.reduce((acc, v) => acc + v.value, 0);
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
