/**
 * ICP scoring: how well one identification fits one ICP, as a score 0–100, a qualified flag and a
 * one-sentence summary. Pure and synchronous: it runs for every identification against every active
 * ICP of the account, so every table below is built once at module load and a call only splits a few
 * short strings.
 *
 * Groups and weights (SCORING_WEIGHTS). An identification is judged in attribute groups, each worth
 * at most its cap; the caps of each identification type sum to 100:
 *
 *     company      industry 40 · employee_range 30 · geography 30
 *     individual   industry 30 · employee_range 20 · geography 15 · job_title 20 · seniority 15
 *
 * For a company visitor, industry is the product-fit signal and weighs most; size and geography
 * decide deal shape and whether the account sells there at all, equally. For an individual, the
 * person's role decides whether they can buy, so title and seniority together weigh 35; geography
 * weighs least because individual identifications exist only for US visitors (a CHECK in migration
 * 0011), so it barely tells one from another. The individual's industry, size and geography are
 * those of their company (the same identification row).
 *
 * Credit. Each group gives its cap × credit: match 1, partial PARTIAL_CREDIT (½), miss 0, unknown 0.
 *
 *     score = round(100 × Σ points / Σ caps of the constrained groups)      (rounded once, here)
 *     qualified = score ≥ qualify_threshold
 *
 * A group counts only when the ICP constrains it (a non-empty, readable criterion) and the
 * identification type has it (job_title and seniority never apply to a company identification).
 * An unconstrained group is left out of both sums, so an ICP that names only industries scores
 * purely on industry. An ICP that constrains no applicable group scores 0 and says so: a score is
 * evidence of fit and such an ICP gives none, and scoring everyone 100 would mark every visitor
 * qualified (alerts, outreach) — the costly failure, where 0 is the quiet one the summary explains.
 * An attribute the identification does not know (null industry, no size, no country) earns 0 and
 * stays in the sum: unknown counts against, and the summary names it.
 *
 * Partial credit, group by group:
 * - industry: full when the industry and a focus entry name the same sector in INDUSTRY_SECTORS
 *   ("Computer Software" ~ "SaaS", "Financial Services" ~ "Fintech"), are equal after normalising,
 *   or one's words contain the other's; partial when the sectors are related or they share a
 *   meaningful word. The best focus entry counts.
 * - employee_range: full when the size lies in the ICP's ranges (the count `employees` when known,
 *   else `employee_range`); partial when it falls in the standard range next to a targeted one (or
 *   in a targeted standard range but outside an ICP's non-standard range such as 50-250).
 * - geography: full when the country is targeted, or lies in a targeted region (COUNTRY_REGIONS);
 *   partial when it shares a region with a targeted country (CA for a US-only ICP), or when the
 *   country code is unknown and only the location text names a targeted country or region. A
 *   country outside COUNTRY_REGIONS has an unknown region.
 * - job_title: full when the title shares a function (sales, marketing, …) and a seniority level
 *   with a target title ("VP of Sales" = "Vice President, Sales"), or equals it; partial when only
 *   the function is shared ("Head of Sales" for "VP of Sales": head is director level).
 * - seniority: full when the title's level is targeted; partial when it is next to a targeted level
 *   in SENIORITY_ORDER. A title with no level word is an individual contributor (`entry`).
 */
import type { CompanyCharacteristics } from '../ai/engine.ts';
import { sliceWhole } from '../kernel/storable-text.ts';

export type ScoringGroup = 'industry' | 'employee_range' | 'geography' | 'job_title' | 'seniority';
type IdentificationType = 'company' | 'individual';
// The ICP's own vocabularies, so a level or region added to the contract must be placed here too.
type Seniority = NonNullable<CompanyCharacteristics['seniorities']>[number];
type Region = NonNullable<CompanyCharacteristics['regions']>[number];

/** The caps of each group per identification type; each type's caps sum to exactly 100. */
export const SCORING_WEIGHTS = {
  company: { industry: 40, employee_range: 30, geography: 30 },
  individual: { industry: 30, employee_range: 20, geography: 15, job_title: 20, seniority: 15 },
} as const satisfies Record<IdentificationType, Partial<Record<ScoringGroup, number>>>;

/** The share of a group's cap a partial match earns. */
export const PARTIAL_CREDIT = 0.5;

/** The order groups are judged and listed in; it also breaks ties in the summary. */
const GROUP_ORDER: readonly ScoringGroup[] = ['industry', 'employee_range', 'geography', 'job_title', 'seniority'];

/** Levels from least to most senior: "next to" in the seniority group means one step apart here. */
export const SENIORITY_ORDER: readonly Seniority[] = ['entry', 'senior', 'manager', 'director', 'vp', 'c_level', 'owner'];

/** The ICP as scoring reads it (the icps row). */
export interface ScoringIcp {
  id: string;
  name: string;
  industry_focus: string[];
  job_titles: string[];
  company_characteristics: CompanyCharacteristics;
  /** A score at or above it qualifies. */
  qualify_threshold: number;
}

/** The identification as scoring reads it; `job_title` is person_linkedin_title. Null is unknown. */
export interface ScoringSubject {
  identification_type: IdentificationType;
  industry: string | null;
  employee_range: string | null;
  employees: number | null;
  /** ISO 3166 alpha-2; '' is unknown, as in the identifications table. */
  country: string | null;
  location: string | null;
  job_title: string | null;
}

export type FactorVerdict = 'match' | 'partial' | 'miss' | 'unknown';

/** One group's judgement: `points` of `cap` (the SCORING_WEIGHTS cap, before rescaling), and why. */
export interface ScoringFactor {
  group: ScoringGroup;
  points: number;
  cap: number;
  verdict: FactorVerdict;
  /** A short phrase for the summary, e.g. "51-200 employees in target range". */
  detail: string;
}

export interface IdentificationScore {
  /** An integer 0..100. */
  score: number;
  qualified: boolean;
  /** Written by these rules, not a model (the name is the spec's); at most SUMMARY_MAX_LENGTH characters. */
  ai_summary: string;
  /** The constrained groups in GROUP_ORDER; empty when the ICP constrains none of this type's groups. */
  factors: ScoringFactor[];
}

// ---------------------------------------------------------------------------------------------
// Reviewed data
// ---------------------------------------------------------------------------------------------

/**
 * Industry sectors: the phrases that name each (normalised: lower case, `&` as "and", connector
 * words dropped — so LinkedIn's "Computer & Network Security" is "computer network security") and
 * the sectors near it. A phrase names every sector one of its word runs names, longest run first.
 */
const INDUSTRY_SECTORS: ReadonlyArray<{ id: string; phrases: readonly string[]; related: readonly string[] }> = [
  {
    id: 'software',
    phrases: ['software', 'computer software', 'saas', 'software as service', 'software development', 'developer tools', 'devtools'],
    related: ['it_services', 'internet', 'security'],
  },
  {
    id: 'it_services',
    phrases: ['information technology', 'information technology services', 'it', 'it services', 'it consulting', 'managed services'],
    related: ['software', 'security', 'hardware', 'telecom', 'consulting'],
  },
  { id: 'internet', phrases: ['internet', 'online services'], related: ['software', 'retail', 'media'] },
  {
    id: 'security',
    phrases: ['computer network security', 'network security', 'cybersecurity', 'cyber security', 'information security', 'infosec'],
    related: ['software', 'it_services'],
  },
  {
    id: 'hardware',
    phrases: ['computer hardware', 'hardware', 'semiconductors', 'semiconductor', 'electronics', 'consumer electronics', 'computer networking'],
    related: ['it_services', 'manufacturing', 'telecom'],
  },
  {
    id: 'financial',
    phrases: ['financial services', 'finance', 'fintech', 'financial technology', 'payments', 'capital markets', 'investment management'],
    related: ['banking', 'insurance'],
  },
  { id: 'banking', phrases: ['banking', 'bank', 'banks'], related: ['financial', 'insurance'] },
  { id: 'insurance', phrases: ['insurance', 'insurtech'], related: ['financial', 'banking'] },
  {
    id: 'healthcare',
    phrases: ['hospital health care', 'health care', 'healthcare', 'health', 'medical', 'medical practice', 'medical devices', 'healthtech'],
    related: ['pharma'],
  },
  { id: 'pharma', phrases: ['pharmaceuticals', 'pharma', 'biotechnology', 'biotech', 'life sciences'], related: ['healthcare'] },
  {
    id: 'marketing',
    phrases: ['marketing advertising', 'marketing', 'advertising', 'martech', 'adtech', 'public relations communications'],
    related: ['media'],
  },
  {
    id: 'media',
    phrases: ['online media', 'media', 'media production', 'broadcast media', 'entertainment', 'publishing'],
    related: ['marketing', 'internet'],
  },
  { id: 'retail', phrases: ['retail', 'ecommerce', 'e commerce', 'consumer goods', 'apparel fashion'], related: ['internet'] },
  {
    id: 'manufacturing',
    phrases: ['manufacturing', 'industrial automation', 'machinery', 'mechanical or industrial engineering', 'automotive'],
    related: ['hardware', 'logistics'],
  },
  {
    id: 'education',
    phrases: ['education', 'education management', 'higher education', 'e learning', 'elearning', 'edtech', 'primary secondary education'],
    related: [],
  },
  { id: 'real_estate', phrases: ['real estate', 'commercial real estate', 'proptech'], related: ['construction'] },
  { id: 'construction', phrases: ['construction', 'building materials', 'architecture planning'], related: ['real_estate'] },
  { id: 'consulting', phrases: ['management consulting', 'consulting', 'professional services'], related: ['it_services', 'staffing'] },
  { id: 'staffing', phrases: ['staffing recruiting', 'staffing', 'recruiting', 'human resources', 'hr', 'hrtech'], related: ['consulting'] },
  { id: 'telecom', phrases: ['telecommunications', 'telecom', 'wireless'], related: ['it_services', 'hardware'] },
  {
    id: 'logistics',
    phrases: ['logistics supply chain', 'logistics', 'supply chain', 'transportation trucking railroad', 'transportation'],
    related: ['manufacturing'],
  },
  { id: 'legal', phrases: ['law practice', 'legal services', 'legal', 'legaltech'], related: [] },
  {
    id: 'energy',
    phrases: ['oil energy', 'energy', 'renewables environment', 'renewables', 'utilities', 'cleantech', 'oil gas'],
    related: [],
  },
  { id: 'government', phrases: ['government administration', 'government', 'public sector', 'public policy'], related: ['nonprofit'] },
  {
    id: 'nonprofit',
    phrases: ['non profit organization management', 'nonprofit', 'non profit', 'ngo', 'charity'],
    related: ['government'],
  },
  {
    id: 'hospitality',
    phrases: ['hospitality', 'restaurants', 'food beverages', 'leisure travel tourism', 'travel'],
    related: [],
  },
];

/** Vertical "-tech" words: a company so described is also near software (a fintech may file itself as "Computer Software"). */
const SOFTWARE_VERTICALS: readonly string[] = [
  'fintech',
  'insurtech',
  'healthtech',
  'edtech',
  'martech',
  'adtech',
  'proptech',
  'legaltech',
  'hrtech',
];

/** Dropped before industry phrases are read (as LinkedIn's "and" in "Marketing and Advertising"). */
const INDUSTRY_CONNECTORS = new Set(['and', 'of', 'the', 'for', 'in', 'a', 'an', 'to', 'with', 'or']);
/** Words that say nothing of the sector: ignored when comparing the words of two industries. */
const INDUSTRY_GENERIC = new Set([
  'services',
  'service',
  'industry',
  'industries',
  'company',
  'companies',
  'business',
  'businesses',
  'products',
  'solutions',
  'b2b',
  'b2c',
  'enterprise',
  'enterprises',
  'startup',
  'startups',
  'computer',
  'other',
  'mid',
  'market',
]);

/**
 * Country → region, reviewed for at least the G20 and the EU, plus the larger markets around them.
 * Judgement calls: MX is latin_america (how sales territories split it), TR and RU are europe, IL and
 * EG are middle_east_africa. A country not listed has an unknown region. `names` are what location
 * text may call it.
 */
const COUNTRY_REGIONS: ReadonlyArray<{ code: string; region: Region; names: readonly string[] }> = [
  { code: 'US', region: 'north_america', names: ['united states', 'united states of america', 'usa', 'us', 'u s a', 'u s'] },
  { code: 'CA', region: 'north_america', names: ['canada'] },
  { code: 'MX', region: 'latin_america', names: ['mexico'] },
  { code: 'BR', region: 'latin_america', names: ['brazil', 'brasil'] },
  { code: 'AR', region: 'latin_america', names: ['argentina'] },
  { code: 'CL', region: 'latin_america', names: ['chile'] },
  { code: 'CO', region: 'latin_america', names: ['colombia'] },
  { code: 'PE', region: 'latin_america', names: ['peru'] },
  { code: 'UY', region: 'latin_america', names: ['uruguay'] },
  { code: 'EC', region: 'latin_america', names: ['ecuador'] },
  { code: 'CR', region: 'latin_america', names: ['costa rica'] },
  { code: 'PA', region: 'latin_america', names: ['panama'] },
  { code: 'AT', region: 'europe', names: ['austria', 'osterreich'] },
  { code: 'BE', region: 'europe', names: ['belgium'] },
  { code: 'BG', region: 'europe', names: ['bulgaria'] },
  { code: 'HR', region: 'europe', names: ['croatia'] },
  { code: 'CY', region: 'europe', names: ['cyprus'] },
  { code: 'CZ', region: 'europe', names: ['czechia', 'czech republic'] },
  { code: 'DK', region: 'europe', names: ['denmark'] },
  { code: 'EE', region: 'europe', names: ['estonia'] },
  { code: 'FI', region: 'europe', names: ['finland'] },
  { code: 'FR', region: 'europe', names: ['france'] },
  { code: 'DE', region: 'europe', names: ['germany', 'deutschland'] },
  { code: 'GR', region: 'europe', names: ['greece'] },
  { code: 'HU', region: 'europe', names: ['hungary'] },
  { code: 'IE', region: 'europe', names: ['ireland'] },
  { code: 'IT', region: 'europe', names: ['italy', 'italia'] },
  { code: 'LV', region: 'europe', names: ['latvia'] },
  { code: 'LT', region: 'europe', names: ['lithuania'] },
  { code: 'LU', region: 'europe', names: ['luxembourg'] },
  { code: 'MT', region: 'europe', names: ['malta'] },
  { code: 'NL', region: 'europe', names: ['netherlands', 'holland'] },
  { code: 'PL', region: 'europe', names: ['poland'] },
  { code: 'PT', region: 'europe', names: ['portugal'] },
  { code: 'RO', region: 'europe', names: ['romania'] },
  { code: 'SK', region: 'europe', names: ['slovakia'] },
  { code: 'SI', region: 'europe', names: ['slovenia'] },
  { code: 'ES', region: 'europe', names: ['spain', 'espana'] },
  { code: 'SE', region: 'europe', names: ['sweden'] },
  { code: 'GB', region: 'europe', names: ['united kingdom', 'uk', 'great britain', 'britain', 'england', 'scotland', 'wales', 'northern ireland'] },
  { code: 'CH', region: 'europe', names: ['switzerland'] },
  { code: 'NO', region: 'europe', names: ['norway'] },
  { code: 'IS', region: 'europe', names: ['iceland'] },
  { code: 'UA', region: 'europe', names: ['ukraine'] },
  { code: 'RS', region: 'europe', names: ['serbia'] },
  { code: 'TR', region: 'europe', names: ['turkey', 'turkiye'] },
  { code: 'RU', region: 'europe', names: ['russia', 'russian federation'] },
  { code: 'SA', region: 'middle_east_africa', names: ['saudi arabia'] },
  { code: 'AE', region: 'middle_east_africa', names: ['united arab emirates', 'uae'] },
  { code: 'IL', region: 'middle_east_africa', names: ['israel'] },
  { code: 'QA', region: 'middle_east_africa', names: ['qatar'] },
  { code: 'KW', region: 'middle_east_africa', names: ['kuwait'] },
  { code: 'BH', region: 'middle_east_africa', names: ['bahrain'] },
  { code: 'OM', region: 'middle_east_africa', names: ['oman'] },
  { code: 'EG', region: 'middle_east_africa', names: ['egypt'] },
  { code: 'ZA', region: 'middle_east_africa', names: ['south africa'] },
  { code: 'NG', region: 'middle_east_africa', names: ['nigeria'] },
  { code: 'KE', region: 'middle_east_africa', names: ['kenya'] },
  { code: 'MA', region: 'middle_east_africa', names: ['morocco'] },
  { code: 'GH', region: 'middle_east_africa', names: ['ghana'] },
  { code: 'CN', region: 'asia_pacific', names: ['china'] },
  { code: 'JP', region: 'asia_pacific', names: ['japan'] },
  { code: 'KR', region: 'asia_pacific', names: ['south korea', 'korea', 'republic of korea'] },
  { code: 'IN', region: 'asia_pacific', names: ['india'] },
  { code: 'ID', region: 'asia_pacific', names: ['indonesia'] },
  { code: 'AU', region: 'asia_pacific', names: ['australia'] },
  { code: 'NZ', region: 'asia_pacific', names: ['new zealand'] },
  { code: 'SG', region: 'asia_pacific', names: ['singapore'] },
  { code: 'HK', region: 'asia_pacific', names: ['hong kong'] },
  { code: 'TW', region: 'asia_pacific', names: ['taiwan'] },
  { code: 'MY', region: 'asia_pacific', names: ['malaysia'] },
  { code: 'TH', region: 'asia_pacific', names: ['thailand'] },
  { code: 'VN', region: 'asia_pacific', names: ['vietnam', 'viet nam'] },
  { code: 'PH', region: 'asia_pacific', names: ['philippines'] },
  { code: 'PK', region: 'asia_pacific', names: ['pakistan'] },
  { code: 'BD', region: 'asia_pacific', names: ['bangladesh'] },
];

/** Region words location text may use ("EMEA" spans two regions and is not read). */
const REGION_NAMES: ReadonlyArray<{ region: Region; names: readonly string[] }> = [
  { region: 'north_america', names: ['north america'] },
  { region: 'latin_america', names: ['latin america', 'latam', 'south america', 'central america'] },
  { region: 'europe', names: ['europe', 'european union', 'eu'] },
  { region: 'middle_east_africa', names: ['middle east', 'africa', 'mena'] },
  { region: 'asia_pacific', names: ['asia pacific', 'apac', 'asia', 'oceania'] },
];

/** Place names that contain a country's name but are elsewhere. */
const PLACE_NAME_EXCEPTIONS: ReadonlyArray<{ name: string; code: string }> = [
  { name: 'new mexico', code: 'US' },
  { name: 'new south wales', code: 'AU' },
];

const REGION_LABEL: Record<Region, string> = {
  north_america: 'North America',
  latin_america: 'Latin America',
  europe: 'Europe',
  middle_east_africa: 'Middle East & Africa',
  asia_pacific: 'Asia-Pacific',
};

/** The standard employee ranges identifications use, smallest first; "next to" means one step apart here. */
const EMPLOYEE_BUCKETS: ReadonlyArray<readonly [number, number]> = [
  [1, 10],
  [11, 50],
  [51, 200],
  [201, 500],
  [501, 1000],
  [1001, 5000],
  [5001, 10000],
  [10001, Number.POSITIVE_INFINITY],
];

/**
 * Title words: the seniority level and the function each names. Runs of two or three words are read
 * before single words, so "vice president" is vp, not president's c_level, and "account executive"
 * is sales, not the executive suite.
 */
const TITLE_WORDS: ReadonlyArray<{ words: string; level?: Seniority; fn?: string }> = [
  { words: 'founder', level: 'owner', fn: 'leadership' },
  { words: 'cofounder', level: 'owner', fn: 'leadership' },
  { words: 'co founder', level: 'owner', fn: 'leadership' },
  { words: 'owner', level: 'owner', fn: 'leadership' },
  { words: 'managing partner', level: 'owner', fn: 'leadership' },
  { words: 'founding partner', level: 'owner', fn: 'leadership' },
  { words: 'general partner', level: 'owner', fn: 'leadership' },
  { words: 'chief executive', level: 'c_level', fn: 'leadership' },
  { words: 'chief', level: 'c_level' },
  { words: 'ceo', level: 'c_level', fn: 'leadership' },
  { words: 'president', level: 'c_level', fn: 'leadership' },
  { words: 'managing director', level: 'c_level', fn: 'leadership' },
  { words: 'cto', level: 'c_level', fn: 'engineering' },
  { words: 'cfo', level: 'c_level', fn: 'finance' },
  { words: 'cmo', level: 'c_level', fn: 'marketing' },
  { words: 'coo', level: 'c_level', fn: 'operations' },
  { words: 'cro', level: 'c_level', fn: 'sales' },
  { words: 'cio', level: 'c_level', fn: 'it' },
  { words: 'ciso', level: 'c_level', fn: 'security' },
  { words: 'cpo', level: 'c_level', fn: 'product' },
  { words: 'cdo', level: 'c_level', fn: 'data' },
  { words: 'chro', level: 'c_level', fn: 'people' },
  { words: 'vice president', level: 'vp' },
  { words: 'vp', level: 'vp' },
  { words: 'svp', level: 'vp' },
  { words: 'evp', level: 'vp' },
  { words: 'avp', level: 'vp' },
  { words: 'director', level: 'director' },
  { words: 'head', level: 'director' },
  { words: 'general manager', level: 'director', fn: 'leadership' },
  { words: 'manager', level: 'manager' },
  { words: 'mgr', level: 'manager' },
  { words: 'lead', level: 'manager' },
  { words: 'supervisor', level: 'manager' },
  { words: 'senior', level: 'senior' },
  { words: 'sr', level: 'senior' },
  { words: 'principal', level: 'senior' },
  { words: 'staff', level: 'senior' },
  { words: 'junior', level: 'entry' },
  { words: 'jr', level: 'entry' },
  { words: 'intern', level: 'entry' },
  { words: 'trainee', level: 'entry' },
  { words: 'associate', level: 'entry' },
  { words: 'assistant', level: 'entry' },
  { words: 'graduate', level: 'entry' },
  { words: 'sales', fn: 'sales' },
  { words: 'revenue', fn: 'sales' },
  { words: 'business development', fn: 'sales' },
  { words: 'account executive', fn: 'sales' },
  { words: 'account', fn: 'sales' },
  { words: 'partnerships', fn: 'sales' },
  { words: 'commercial', fn: 'sales' },
  { words: 'marketing', fn: 'marketing' },
  { words: 'growth', fn: 'marketing' },
  { words: 'demand generation', fn: 'marketing' },
  { words: 'brand', fn: 'marketing' },
  { words: 'content', fn: 'marketing' },
  { words: 'communications', fn: 'marketing' },
  { words: 'engineering', fn: 'engineering' },
  { words: 'engineer', fn: 'engineering' },
  { words: 'developer', fn: 'engineering' },
  { words: 'software', fn: 'engineering' },
  { words: 'devops', fn: 'engineering' },
  { words: 'technology', fn: 'engineering' },
  { words: 'technical', fn: 'engineering' },
  { words: 'architect', fn: 'engineering' },
  { words: 'product', fn: 'product' },
  { words: 'design', fn: 'design' },
  { words: 'designer', fn: 'design' },
  { words: 'ux', fn: 'design' },
  { words: 'data', fn: 'data' },
  { words: 'analytics', fn: 'data' },
  { words: 'information technology', fn: 'it' },
  { words: 'it', fn: 'it' },
  { words: 'infrastructure', fn: 'it' },
  { words: 'security', fn: 'security' },
  { words: 'cybersecurity', fn: 'security' },
  { words: 'finance', fn: 'finance' },
  { words: 'financial', fn: 'finance' },
  { words: 'accounting', fn: 'finance' },
  { words: 'controller', fn: 'finance' },
  { words: 'operations', fn: 'operations' },
  { words: 'ops', fn: 'operations' },
  { words: 'human resources', fn: 'people' },
  { words: 'hr', fn: 'people' },
  { words: 'people', fn: 'people' },
  { words: 'talent', fn: 'people' },
  { words: 'recruiting', fn: 'people' },
  { words: 'legal', fn: 'legal' },
  { words: 'counsel', fn: 'legal' },
  { words: 'customer success', fn: 'customer' },
  { words: 'customer experience', fn: 'customer' },
  { words: 'support', fn: 'customer' },
  { words: 'procurement', fn: 'procurement' },
  { words: 'purchasing', fn: 'procurement' },
];
/** Title words that name neither level nor function. */
const TITLE_FILLER = new Set(['of', 'the', 'and', 'at', 'for', 'in', 'a', 'an', 'to', 'officer', 'global', 'regional', 'vice', 'co']);

const LEVEL_LABEL: Record<Seniority, string> = {
  entry: 'entry-level',
  senior: 'senior',
  manager: 'manager',
  director: 'director',
  vp: 'VP',
  c_level: 'C-level',
  owner: 'owner',
};

/** Summary bands by score, highest first. */
const SUMMARY_BANDS: ReadonlyArray<{ from: number; label: string }> = [
  { from: 80, label: 'Strong fit' },
  { from: 60, label: 'Good fit' },
  { from: 40, label: 'Partial fit' },
  { from: 1, label: 'Weak fit' },
  { from: 0, label: 'No fit' },
];
export const SUMMARY_MAX_LENGTH = 300;
/** Free text (an industry, a title) is cut to this many characters inside the summary. */
const SUMMARY_VALUE_LENGTH = 40;

// ---------------------------------------------------------------------------------------------
// Tables built once
// ---------------------------------------------------------------------------------------------

const MARKS = /\p{M}+/gu;
const NON_WORD = /[^a-z0-9]+/g;
const AMPERSAND = /&/g;
const COMMAS = /,/g;
const SIZE_NOISE = /employees?|people|staff|\s+/g;
const SIZE_RANGE = /^(\d+)(?:-|–|—|to)(\d+)$/;
const SIZE_OPEN = /^(\d+)\+$/;
const SIZE_ONE = /^(\d+)$/;

interface SectorTag {
  sectors: Set<string>;
  near: Set<string>;
}

const SECTOR_BY_PHRASE = new Map<string, SectorTag>();
const RELATED_SECTORS = new Map<string, readonly string[]>();
for (const sector of INDUSTRY_SECTORS) {
  RELATED_SECTORS.set(sector.id, sector.related);
  for (const phrase of sector.phrases) {
    const key = words(phrase)
      .filter((w) => !INDUSTRY_CONNECTORS.has(w))
      .join(' ');
    const tag = SECTOR_BY_PHRASE.get(key) ?? { sectors: new Set<string>(), near: new Set<string>() };
    tag.sectors.add(sector.id);
    for (const r of sector.related) tag.near.add(r);
    if (SOFTWARE_VERTICALS.includes(phrase)) tag.near.add('software');
    SECTOR_BY_PHRASE.set(key, tag);
  }
}

const REGION_OF_COUNTRY = new Map<string, Region>(COUNTRY_REGIONS.map((c) => [c.code, c.region]));
/** Location-text phrase → the country or region it names. */
const PLACE_BY_PHRASE = new Map<string, { country?: string; region: Region | null }>();
for (const c of COUNTRY_REGIONS) {
  for (const name of c.names) PLACE_BY_PHRASE.set(name, { country: c.code, region: c.region });
}
for (const r of REGION_NAMES) {
  for (const name of r.names) PLACE_BY_PHRASE.set(name, { region: r.region });
}
for (const p of PLACE_NAME_EXCEPTIONS) PLACE_BY_PHRASE.set(p.name, { country: p.code, region: REGION_OF_COUNTRY.get(p.code) ?? null });

const TITLE_BY_PHRASE = new Map<string, { level?: Seniority; fn?: string }>(TITLE_WORDS.map((t) => [t.words, t]));

const LONGEST_PHRASE = 5;

// ---------------------------------------------------------------------------------------------
// Reading text
// ---------------------------------------------------------------------------------------------

/** Lower-case words without accents or punctuation; `&` reads as "and". */
function words(text: string): string[] {
  const plain = text.normalize('NFD').replace(MARKS, '').toLowerCase().replace(AMPERSAND, ' and ').replace(NON_WORD, ' ').trim();
  return plain === '' ? [] : plain.split(' ');
}

/** Reads `tokens` left to right, taking the longest run of words `table` knows at each place. */
function readPhrases<T>(tokens: readonly string[], table: ReadonlyMap<string, T>): { found: T[]; rest: string[] } {
  const found: T[] = [];
  const rest: string[] = [];
  let i = 0;
  while (i < tokens.length) {
    let taken = 0;
    for (let n = Math.min(LONGEST_PHRASE, tokens.length - i); n >= 1; n--) {
      const hit = table.get(tokens.slice(i, i + n).join(' '));
      if (hit !== undefined) {
        found.push(hit);
        taken = n;
        break;
      }
    }
    if (taken === 0) {
      rest.push(tokens[i] ?? '');
      taken = 1;
    }
    i += taken;
  }
  return { found, rest };
}

function clip(text: string, max: number): string {
  const trimmed = text.trim();
  if (trimmed.length <= max) return trimmed;
  const cut = sliceWhole(trimmed, max - 1);
  return `${cut.trimEnd()}…`;
}

/**
 * The strings of a company_characteristics list. The column is jsonb, so a row written before the
 * contract tightened may hold anything: what is not a list of strings constrains nothing.
 */
function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** The text trimmed, or null when there is none. */
function present(text: string | null | undefined): string | null {
  const trimmed = text?.trim() ?? '';
  return trimmed === '' ? null : trimmed;
}

// ---------------------------------------------------------------------------------------------
// Groups
// ---------------------------------------------------------------------------------------------

type Credit = 'match' | 'partial' | 'miss';
const CREDIT_RANK: Record<Credit, number> = { match: 2, partial: 1, miss: 0 };

interface Judgement {
  verdict: FactorVerdict;
  detail: string;
}

interface IndustryReading {
  text: string;
  key: string;
  content: Set<string>;
  sectors: Set<string>;
  near: Set<string>;
}

function readIndustry(text: string): IndustryReading | null {
  const tokens = words(text).filter((w) => !INDUSTRY_CONNECTORS.has(w));
  if (tokens.length === 0) return null;
  const { found } = readPhrases(tokens, SECTOR_BY_PHRASE);
  const sectors = new Set<string>();
  const near = new Set<string>();
  for (const tag of found) {
    for (const s of tag.sectors) sectors.add(s);
    for (const s of tag.near) near.add(s);
  }
  for (const s of sectors) near.delete(s);
  return { text, key: tokens.join(' '), content: new Set(tokens.filter((w) => !INDUSTRY_GENERIC.has(w))), sectors, near };
}

function overlaps<T>(a: ReadonlySet<T>, b: ReadonlySet<T>): boolean {
  for (const x of a) if (b.has(x)) return true;
  return false;
}

function within<T>(a: ReadonlySet<T>, b: ReadonlySet<T>): boolean {
  if (a.size === 0) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}

function compareIndustry(subject: IndustryReading, focus: IndustryReading): Credit {
  if (subject.key === focus.key || overlaps(subject.sectors, focus.sectors)) return 'match';
  if (within(subject.content, focus.content) || within(focus.content, subject.content)) return 'match';
  if (overlaps(subject.sectors, focus.near) || overlaps(focus.sectors, subject.near) || overlaps(subject.content, focus.content)) {
    return 'partial';
  }
  return 'miss';
}

function judgeIndustry(focus: readonly IndustryReading[], industry: string | null): Judgement {
  const text = present(industry);
  const subject = text === null ? null : readIndustry(text);
  if (subject === null) return { verdict: 'unknown', detail: 'industry unknown' };
  let best: { credit: Credit; focus: IndustryReading } | null = null;
  for (const f of focus) {
    const credit = compareIndustry(subject, f);
    if (best === null || CREDIT_RANK[credit] > CREDIT_RANK[best.credit]) best = { credit, focus: f };
    if (credit === 'match') break;
  }
  const name = clip(subject.text, SUMMARY_VALUE_LENGTH);
  if (best === null || best.credit === 'miss') return { verdict: 'miss', detail: `industry ${name} outside focus` };
  const target = clip(best.focus.text, SUMMARY_VALUE_LENGTH);
  if (best.credit === 'partial') return { verdict: 'partial', detail: `industry ${name} related to ${target} focus` };
  if (best.focus.key === subject.key) return { verdict: 'match', detail: `industry ${name} in focus` };
  return { verdict: 'match', detail: `industry ${name} matches ${target} focus` };
}

/** An employee count or range as [low, high]; null when it cannot be read. */
function readSize(text: string): [number, number] | null {
  const plain = text.toLowerCase().replace(COMMAS, '').replace(SIZE_NOISE, '');
  const range = SIZE_RANGE.exec(plain);
  if (range) {
    const low = Number(range[1]);
    const high = Number(range[2]);
    return low <= high ? [low, high] : null;
  }
  const open = SIZE_OPEN.exec(plain);
  if (open) return [Number(open[1]), Number.POSITIVE_INFINITY];
  const one = SIZE_ONE.exec(plain);
  if (one) return [Number(one[1]), Number(one[1])];
  return null;
}

/** The standard ranges [low, high] touches (a count of 0 is in the first). */
function bucketsOf([low, high]: readonly [number, number]): number[] {
  const out: number[] = [];
  EMPLOYEE_BUCKETS.forEach(([from, to], i) => {
    if (Math.max(low, 1) <= to && high >= from) out.push(i);
  });
  return out;
}

interface SizeTargets {
  /** The ICP's ranges, merged where they touch, so 51-200 and 201-500 hold 60-300. */
  spans: Array<[number, number]>;
  buckets: Set<number>;
}

function readSizeTargets(ranges: readonly string[]): SizeTargets | null {
  const read: Array<[number, number]> = [];
  for (const r of ranges) {
    const span = readSize(r);
    if (span) read.push(span);
  }
  if (read.length === 0) return null;
  read.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const spans: Array<[number, number]> = [];
  for (const span of read) {
    const last = spans[spans.length - 1];
    if (last && span[0] <= last[1] + 1) last[1] = Math.max(last[1], span[1]);
    else spans.push([span[0], span[1]]);
  }
  return { spans, buckets: new Set(read.flatMap(bucketsOf)) };
}

function judgeEmployeeRange(targets: SizeTargets, subject: ScoringSubject): Judgement {
  // The count is the finer fact, so it wins over the range when both are given.
  const hasCount = subject.employees !== null && Number.isFinite(subject.employees) && subject.employees >= 0;
  const rangeText = present(subject.employee_range);
  const span: [number, number] | null = hasCount ? [subject.employees ?? 0, subject.employees ?? 0] : rangeText === null ? null : readSize(rangeText);
  if (span === null) return { verdict: 'unknown', detail: 'company size unknown' };
  const size = hasCount ? String(subject.employees) : clip(rangeText ?? '', SUMMARY_VALUE_LENGTH);
  if (targets.spans.some(([low, high]) => span[0] >= low && span[1] <= high)) {
    return { verdict: 'match', detail: `${size} employees in target range` };
  }
  const near = bucketsOf(span).some((b) => targets.buckets.has(b) || targets.buckets.has(b - 1) || targets.buckets.has(b + 1));
  if (near) return { verdict: 'partial', detail: `${size} employees next to target range` };
  return { verdict: 'miss', detail: `${size} employees outside target range` };
}

interface GeoTargets {
  countries: Set<string>;
  regions: Set<Region>;
  /** The regions of the targeted countries: a country in one of them is "near". */
  countryRegions: Set<Region>;
}

function readGeoTargets(characteristics: CompanyCharacteristics): GeoTargets | null {
  const countries = new Set(
    strings(characteristics.countries)
      .map((c) => c.trim().toUpperCase())
      .filter((c) => c !== ''),
  );
  const regions = new Set(strings(characteristics.regions).filter((r): r is Region => Object.hasOwn(REGION_LABEL, r)));
  if (countries.size === 0 && regions.size === 0) return null;
  const countryRegions = new Set<Region>();
  for (const c of countries) {
    const region = REGION_OF_COUNTRY.get(c);
    if (region) countryRegions.add(region);
  }
  return { countries, regions, countryRegions };
}

function judgeGeography(targets: GeoTargets, country: string | null, location: string | null): Judgement {
  const code = present(country)?.toUpperCase() ?? null;
  if (code !== null) {
    if (targets.countries.has(code)) return { verdict: 'match', detail: `country ${code} targeted` };
    const region = REGION_OF_COUNTRY.get(code);
    if (region && targets.regions.has(region)) {
      return { verdict: 'match', detail: `country ${code} in target region ${REGION_LABEL[region]}` };
    }
    if (region && targets.countryRegions.has(region)) return { verdict: 'partial', detail: `country ${code} near target countries` };
    // Without its region, a country cannot be ruled out of a targeted region.
    if (!region && targets.regions.size > 0) return { verdict: 'unknown', detail: `region of country ${code} unknown` };
    return { verdict: 'miss', detail: `country ${code} outside target geography` };
  }
  // Only the location text: the weaker evidence earns partial credit at best.
  const text = present(location);
  const found = text === null ? [] : readPhrases(words(text), PLACE_BY_PHRASE).found;
  if (text === null || found.length === 0) return { verdict: 'unknown', detail: 'country unknown' };
  const place = clip(text, SUMMARY_VALUE_LENGTH);
  const targeted = found.some(
    (p) => (p.country !== undefined && targets.countries.has(p.country)) || (p.region !== null && targets.regions.has(p.region)),
  );
  if (targeted) return { verdict: 'partial', detail: `location ${place} in target geography` };
  return { verdict: 'miss', detail: `location ${place} outside target geography` };
}

interface TitleReading {
  key: string;
  /** The level(s) the title holds: its most senior, and both owner and c_level for "Co-Founder & CEO". */
  levels: Set<Seniority>;
  /** Named functions; when none is recognised, the title's own content words. */
  functions: Set<string>;
}

function readTitle(text: string): TitleReading | null {
  const tokens = words(text);
  if (tokens.length === 0) return null;
  const { found, rest } = readPhrases(tokens, TITLE_BY_PHRASE);
  const named = new Set<Seniority>();
  const functions = new Set<string>();
  for (const w of found) {
    if (w.level) named.add(w.level);
    if (w.fn) functions.add(w.fn);
  }
  if (functions.size === 0) {
    for (const w of rest) if (!TITLE_FILLER.has(w)) functions.add(`word:${w}`);
  }
  let top: Seniority = 'entry';
  for (const level of SENIORITY_ORDER) if (named.has(level)) top = level;
  const levels = new Set<Seniority>([top]);
  if (named.has('owner') && named.has('c_level')) levels.add('c_level');
  return { key: tokens.join(' '), levels, functions };
}

function judgeJobTitle(targets: readonly TitleReading[], title: TitleReading | null, text: string): Judgement {
  if (title === null) return { verdict: 'unknown', detail: 'job title unknown' };
  let best: Credit = 'miss';
  for (const t of targets) {
    if (t.key === title.key) best = 'match';
    else if (overlaps(t.functions, title.functions)) best = overlaps(t.levels, title.levels) ? 'match' : 'partial';
    else continue;
    if (best === 'match') break;
  }
  const name = clip(text, SUMMARY_VALUE_LENGTH);
  if (best === 'match') return { verdict: 'match', detail: `title ${name} among target roles` };
  if (best === 'partial') return { verdict: 'partial', detail: `title ${name} in target function, other level` };
  return { verdict: 'miss', detail: `title ${name} not among target roles` };
}

function judgeSeniority(targets: ReadonlySet<Seniority>, title: TitleReading | null): Judgement {
  if (title === null) return { verdict: 'unknown', detail: 'seniority unknown' };
  const levels = [...title.levels];
  const hit = levels.find((l) => targets.has(l));
  if (hit) return { verdict: 'match', detail: `${LEVEL_LABEL[hit]} seniority targeted` };
  const top = levels[0] ?? 'entry';
  const near = levels.some((l) => {
    const i = SENIORITY_ORDER.indexOf(l);
    return [SENIORITY_ORDER[i - 1], SENIORITY_ORDER[i + 1]].some((n) => n !== undefined && targets.has(n));
  });
  if (near) return { verdict: 'partial', detail: `${LEVEL_LABEL[top]} seniority next to target` };
  return { verdict: 'miss', detail: `${LEVEL_LABEL[top]} seniority not targeted` };
}

// ---------------------------------------------------------------------------------------------
// The verb
// ---------------------------------------------------------------------------------------------

const CREDIT_OF: Record<FactorVerdict, number> = { match: 1, partial: PARTIAL_CREDIT, miss: 0, unknown: 0 };

/**
 * Scores one identification against one ICP (the rules are at the top of this file). Pure and
 * deterministic: the same ICP and subject give the same score, flag, factors and summary, whatever
 * else was scored before. `score` is an integer 0..100; `qualified` is `score >= qualify_threshold`.
 */
export function scoreIdentification(icp: ScoringIcp, subject: ScoringSubject): IdentificationScore {
  const weights: Partial<Record<ScoringGroup, number>> = SCORING_WEIGHTS[subject.identification_type];
  const characteristics = icp.company_characteristics;
  const factors: ScoringFactor[] = [];
  const titleText = present(subject.job_title);
  // Read once, on first use: the title serves both the job_title and the seniority group.
  let title: TitleReading | null | undefined;
  const subjectTitle = () => {
    if (title === undefined) title = titleText === null ? null : readTitle(titleText);
    return title;
  };
  const add = (group: ScoringGroup, judge: () => Judgement) => {
    const cap = weights[group];
    if (cap === undefined) return;
    const { verdict, detail } = judge();
    factors.push({ group, points: cap * CREDIT_OF[verdict], cap, verdict, detail });
  };

  for (const group of GROUP_ORDER) {
    if (weights[group] === undefined) continue;
    switch (group) {
      case 'industry': {
        const focus = icp.industry_focus.map(readIndustry).filter((r): r is IndustryReading => r !== null);
        if (focus.length > 0) add(group, () => judgeIndustry(focus, subject.industry));
        break;
      }
      case 'employee_range': {
        const targets = readSizeTargets(strings(characteristics.employee_ranges));
        if (targets) add(group, () => judgeEmployeeRange(targets, subject));
        break;
      }
      case 'geography': {
        const targets = readGeoTargets(characteristics);
        if (targets) add(group, () => judgeGeography(targets, subject.country, subject.location));
        break;
      }
      case 'job_title': {
        const targets = icp.job_titles.map(readTitle).filter((r): r is TitleReading => r !== null);
        if (targets.length > 0) add(group, () => judgeJobTitle(targets, subjectTitle(), titleText ?? ''));
        break;
      }
      case 'seniority': {
        const targets = new Set(strings(characteristics.seniorities).filter((s): s is Seniority => Object.hasOwn(LEVEL_LABEL, s)));
        if (targets.size > 0) add(group, () => judgeSeniority(targets, subjectTitle()));
        break;
      }
    }
  }

  const cap = factors.reduce((sum, f) => sum + f.cap, 0);
  const earned = factors.reduce((sum, f) => sum + f.points, 0);
  // Points are multiples of ½ and caps integers, so 100 × earned is exact and a .5 quotient is exact too.
  const score = cap === 0 ? 0 : Math.min(100, Math.max(0, Math.round((100 * earned) / cap)));
  return { score, qualified: score >= icp.qualify_threshold, ai_summary: summarise(score, factors, subject.identification_type), factors };
}

/**
 * "<Band> fit (<score>/100). For: <up to two largest earners>. Against: <up to two largest misses or
 * unknowns>." Partial matches count for (they earned something); ties go to GROUP_ORDER. Sections
 * with nothing in them are left out; if the sentence would pass SUMMARY_MAX_LENGTH, one item each.
 */
function summarise(score: number, factors: readonly ScoringFactor[], type: IdentificationType): string {
  const band = SUMMARY_BANDS.find((b) => score >= b.from)?.label ?? 'No fit';
  const head = `${band} (${score}/100).`;
  if (factors.length === 0) return `${head} The ICP sets no criteria that apply to ${type === 'company' ? 'a company' : 'an individual'}.`;
  const order = (f: ScoringFactor) => GROUP_ORDER.indexOf(f.group);
  const pros = factors.filter((f) => f.points > 0).sort((a, b) => b.points - a.points || order(a) - order(b));
  const cons = factors
    .filter((f) => f.verdict === 'miss' || f.verdict === 'unknown')
    .sort((a, b) => b.cap - b.points - (a.cap - a.points) || order(a) - order(b));
  const list = (items: readonly ScoringFactor[], n: number) =>
    items
      .slice(0, n)
      .map((f) => f.detail)
      .join('; ');
  const write = (n: number) => {
    const parts = [head];
    if (pros.length > 0) parts.push(`For: ${list(pros, n)}.`);
    if (cons.length > 0) parts.push(`Against: ${list(cons, n)}.`);
    return parts.join(' ');
  };
  const full = write(2);
  return full.length <= SUMMARY_MAX_LENGTH ? full : clip(write(1), SUMMARY_MAX_LENGTH);
}
