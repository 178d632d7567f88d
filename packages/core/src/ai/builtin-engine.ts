import { sliceWhole } from '../kernel/storable-text.ts';
import {
  type AiEngine,
  type CompanyCharacteristics,
  countCharacters,
  countWords,
  type GeneratedMessage,
  type IcpDraft,
  type MessageSettings,
  messageSettings,
  type ProductFacts,
  type ProspectProfile,
  type ResearchSummary,
  type SenderProfile,
} from './engine.ts';

/**
 * The built-in engine: rules over the product text, so a fresh install (`npm start`, no LLM
 * configured) drafts ICPs and writes messages offline. It is deterministic (the same input gives the
 * same output: no clock, no randomness), and it only recombines what it was given: a keyword table
 * below chooses industries, titles and pains; every other sentence is a template filled with the
 * product's, the profile's and the sender's own words. It writes English whatever the template's
 * language, since it has no translations.
 */

const ENGINE = 'builtin';

type Region = NonNullable<CompanyCharacteristics['regions']>[number];
type Seniority = NonNullable<CompanyCharacteristics['seniorities']>[number];

// ---------------------------------------------------------------------------------------------
// Reviewed data
// ---------------------------------------------------------------------------------------------

/**
 * What a product's text (or a prospect's profile) is about. A theme is named by its patterns
 * (counted over the text, so the theme mentioned most leads); it brings the industries its buyers are
 * in, the titles of those buyers, and the pains it speaks to. Industries are spelled as LinkedIn's
 * industry list spells them, which is how identifications carry them and what scoring compares
 * against (icp/score-identification.ts). A theme that is a job function (sales, marketing, HR) names
 * no industry, because every industry has that function: only a named vertical (healthcare, fintech,
 * SaaS) narrows the industries, and developer tools, bought mostly by software companies. Titles put
 * a level word next to a function word so scoring reads both. Abbreviations that are also ordinary
 * words (HR, US) are matched in capitals only.
 */
interface Theme {
  label: string;
  match: readonly RegExp[];
  industries: readonly string[];
  titles: readonly string[];
  pains: readonly string[];
}

const THEMES: readonly Theme[] = [
  {
    label: 'sales',
    match: [/\b(sales|selling|sellers?|pipeline|prospect(s|ing)?|outbound|lead gen(eration)?|leads|crm|quotas?|account executives?|sdrs?|bdrs?)\b/gi],
    industries: [],
    titles: ['VP of Sales', 'Head of Sales', 'Sales Director', 'Revenue Operations Manager'],
    pains: ['Reps spend their time on leads that never buy', 'A pipeline that is hard to predict', 'Outreach that prospects ignore'],
  },
  {
    label: 'marketing',
    match: [/\b(marketing|marketers?|campaigns?|seo|brand|demand gen(eration)?|advertis\w*|ads|conversions?|website visitors?|attribution)\b/gi],
    industries: [],
    titles: ['VP of Marketing', 'Head of Growth', 'Marketing Director', 'Demand Generation Manager'],
    pains: [
      'Website visitors leave without being identified',
      'Marketing spend that cannot be tied to revenue',
      'Campaigns that reach the wrong accounts',
    ],
  },
  {
    label: 'security',
    match: [/\b(security|cyber\w*|threats?|vulnerabilit\w*|compliance|soc ?2|iso ?27001|breach(es)?|encryption|zero trust)\b/gi],
    industries: [],
    titles: ['CISO', 'Head of Security', 'Security Engineering Manager', 'IT Director'],
    pains: ['Threats found too late', 'Audits that take weeks of manual work', 'More alerts than a small team can handle'],
  },
  {
    label: 'software engineering',
    match: [/\b(developers?|engineers?|engineering|devops|apis?|sdks?|source code|deploy\w*|ci\/cd|kubernetes|cloud infrastructure|open source)\b/gi],
    industries: ['Computer Software'],
    titles: ['CTO', 'VP of Engineering', 'Head of Platform Engineering', 'Engineering Manager'],
    pains: ['Engineers losing time to undifferentiated work', 'Slow and risky releases', 'Infrastructure costs that keep growing'],
  },
  {
    label: 'finance',
    match: [/\b(finance teams?|accounting|accountants?|invoic\w*|billing|payments?|expenses?|bookkeeping|month-end|cfos?)\b/gi],
    industries: [],
    titles: ['CFO', 'VP of Finance', 'Finance Director', 'Financial Controller'],
    pains: ['A month-end close that takes too long', 'Manual reconciliation in spreadsheets', 'Little real-time visibility into spend'],
  },
  {
    label: 'people and hiring',
    match: [/\bHR\b/g, /\b(human resources|recruit\w*|hiring|talent|onboarding|payroll|workforce|people teams?)\b/gi],
    industries: [],
    titles: ['CHRO', 'VP of People', 'Head of Talent Acquisition', 'HR Manager'],
    pains: ['Open roles that stay open for months', 'Onboarding run from checklists and email', 'People data spread across tools'],
  },
  {
    label: 'customer support',
    match: [/\b(customer support|support teams?|help ?desk|tickets?|customer success|customer service|churn|retention)\b/gi],
    industries: [],
    titles: ['VP of Customer Success', 'Head of Support', 'Customer Support Manager'],
    pains: ['Support queues that grow faster than the team', 'Customers who churn without warning', 'Answering the same questions again and again'],
  },
  {
    label: 'data and analytics',
    match: [/\b(analytics|dashboards?|reporting|business intelligence|data (teams?|warehouses?|pipelines?|engineering)|data-driven)\b/gi],
    industries: [],
    titles: ['Head of Data', 'Analytics Director', 'Data Engineering Manager'],
    pains: ['Reports that take days to build', 'Data spread across tools that nobody trusts'],
  },
  {
    label: 'financial services',
    match: [/\b(financial services|fintech|banks?|banking|lenders?|lending|credit unions?|wealth management|asset managers?)\b/gi],
    industries: ['Financial Services', 'Banking'],
    titles: ['Chief Operating Officer', 'Head of Digital Banking', 'VP of Operations'],
    pains: ['Regulatory reporting that eats whole teams', 'Customer onboarding slowed by manual checks'],
  },
  {
    label: 'agencies',
    match: [/\b(agency|agencies)\b/gi],
    industries: ['Marketing & Advertising'],
    titles: ['Agency Owner', 'Managing Director', 'Head of Client Services'],
    pains: ['Client reporting built by hand every month', 'Margins squeezed by unbilled hours'],
  },
  {
    label: 'staffing',
    match: [/\b(staffing|recruitment agenc(y|ies)|executive search)\b/gi],
    industries: ['Staffing & Recruiting'],
    titles: ['Managing Director', 'Head of Recruitment', 'Recruitment Manager'],
    pains: ['Candidates lost to faster agencies', 'Placements tracked across spreadsheets'],
  },
  {
    label: 'logistics',
    match: [/\b(logistics|supply chains?|shipping|shipments?|warehous\w*|fleets?|freight|inventory|procurement)\b/gi],
    industries: ['Logistics & Supply Chain', 'Transportation/Trucking/Railroad'],
    titles: ['VP of Operations', 'Head of Supply Chain', 'Logistics Manager'],
    pains: ['Shipments delayed without warning', 'Inventory that is never where it should be', 'Carriers and orders tracked by hand'],
  },
  {
    label: 'e-commerce',
    match: [/\b(e-?commerce|online (stores?|shops?|retail)|shopify|retail(ers)?|checkout|merchants?|d2c|dtc)\b/gi],
    industries: ['Retail', 'Internet'],
    titles: ['Head of E-commerce', 'E-commerce Director', 'VP of Digital'],
    pains: ['Shoppers who abandon their carts', 'Customer acquisition costs that keep rising'],
  },
  {
    label: 'healthcare',
    match: [/\b(health ?care|hospitals?|clinics?|clinical|clinicians?|patients?|medical|physicians?|doctors?|nurses?|hipaa|pharma\w*|biotech)\b/gi],
    industries: ['Hospital & Health Care'],
    titles: ['Chief Medical Officer', 'Head of Clinical Operations', 'Practice Manager'],
    pains: ['Clinicians buried in administrative work', 'Patient data spread across systems', 'Keeping up with health-data rules'],
  },
  {
    label: 'education',
    match: [/\b(education|schools?|universit(y|ies)|students?|teachers?|e-?learning|edtech|courses?)\b/gi],
    industries: ['Education Management', 'E-Learning'],
    titles: ['Head of Learning and Development', 'Director of Academic Technology', 'Training Manager'],
    pains: ['Learners who drop out before finishing', 'Course content that is slow to build and update'],
  },
  {
    label: 'real estate',
    match: [/\b(real estate|propert(y|ies)|proptech|landlords?|tenants?|brokers?|leasing|mortgages?)\b/gi],
    industries: ['Real Estate'],
    titles: ['Head of Property Management', 'Real Estate Director', 'Leasing Manager'],
    pains: ['Listing leads that go cold', 'Property paperwork handled by hand'],
  },
  {
    label: 'manufacturing',
    match: [/\b(manufactur\w*|factor(y|ies)|industrial|production lines?|machinery|oems?)\b/gi],
    industries: ['Manufacturing', 'Industrial Automation'],
    titles: ['VP of Manufacturing', 'Plant Manager', 'Head of Operations'],
    pains: ['Unplanned downtime on the production line', 'Quality problems found too late'],
  },
  {
    label: 'legal',
    match: [/\b(legal|law firms?|lawyers?|attorneys?|contracts?|litigation|legaltech)\b/gi],
    industries: ['Law Practice', 'Legal Services'],
    titles: ['General Counsel', 'Head of Legal', 'Legal Operations Manager'],
    pains: ['Contract review that takes too long', 'Legal work tracked in email and spreadsheets'],
  },
  {
    label: 'hospitality',
    match: [/\b(hotels?|hospitality|restaurants?|tourism|travel|guests?)\b/gi],
    industries: ['Hospitality', 'Leisure, Travel & Tourism'],
    titles: ['General Manager', 'Head of Guest Experience', 'Revenue Manager'],
    pains: ['Empty rooms or tables at the wrong times', 'Guests booking through costly third parties'],
  },
  {
    label: 'insurance',
    match: [/\b(insurance|insurers?|insurtech|claims|underwrit\w*|policyholders?)\b/gi],
    industries: ['Insurance'],
    titles: ['Head of Claims', 'Chief Underwriting Officer', 'VP of Operations'],
    pains: ['Claims that take too long to settle', 'Underwriting slowed by manual data entry'],
  },
  {
    label: 'software',
    match: [/\b(saas|b2b software|software (companies|vendors|teams))\b/gi],
    industries: ['Computer Software', 'Internet'],
    titles: [],
    pains: [],
  },
];

/** When no theme names an industry, title or pain: the broadest B2B buyers, stated plainly. */
const DEFAULT_INDUSTRIES = ['Computer Software', 'Information Technology & Services', 'Internet'];
const DEFAULT_TITLES = ['CEO', 'Founder', 'COO', 'Head of Operations'];
const DEFAULT_PAINS = ['Manual work that slows the team down', 'Tools that do not fit how the team works', 'Little visibility into what is working'];
const DEFAULT_VALUE_DRIVERS = ['Less time spent on manual work', 'Faster results', 'Lower cost'];

/**
 * Company sizes as the text names them, in employee ranges as identifications spell them. Nothing
 * said means no size constraint: inventing one would mark fitting companies down for no reason.
 */
const SIZE_WORDS: ReadonlyArray<{ label: string; match: readonly RegExp[]; ranges: readonly string[] }> = [
  { label: 'startups', match: [/\b(start-?ups?|early-stage|seed-stage|founders?)\b/gi], ranges: ['1-10', '11-50'] },
  {
    label: 'small and medium businesses',
    match: [/\b(SMBs?|SMEs?)\b/g, /\b(small (and|&) (medium|mid-sized)|small business(es)?|small companies)\b/gi],
    ranges: ['11-50', '51-200'],
  },
  { label: 'mid-market companies', match: [/\b(mid-?market|mid-?sized?|midsize|scale-?ups?)\b/gi], ranges: ['51-200', '201-500', '501-1000'] },
  {
    label: 'enterprises',
    match: [/\b(enterprises?|large (companies|organi[sz]ations)|fortune 500|global 2000)\b/gi],
    ranges: ['1001-5000', '5001-10000', '10001+'],
  },
];

const EMPLOYEE_RANGE_ORDER = ['1-10', '11-50', '51-200', '201-500', '501-1000', '1001-5000', '5001-10000', '10001+'];

/** Places as the text names them. Nothing said (or "global") means no geographic constraint. */
const REGION_WORDS: ReadonlyArray<{ region: Region; label: string; match: readonly RegExp[] }> = [
  {
    region: 'north_america',
    label: 'North America',
    match: [/\b(US|USA|U\.S\.)\b/g, /\b(united states|north america(n)?|canad(a|ian))\b/gi],
  },
  {
    region: 'europe',
    label: 'Europe',
    match: [
      /\b(EU|UK|EMEA|DACH|GDPR)\b/g,
      /\b(europe(an)?|united kingdom|britain|british|germany|german|france|french|nordics?|benelux|netherlands|spain|italy|ireland)\b/gi,
    ],
  },
  {
    region: 'middle_east_africa',
    label: 'the Middle East and Africa',
    match: [/\b(EMEA|MENA|UAE)\b/g, /\b(middle east(ern)?|africa(n)?|saudi arabia|israel)\b/gi],
  },
  {
    region: 'asia_pacific',
    label: 'Asia-Pacific',
    match: [/\b(APAC|ANZ)\b/g, /\b(asia(-pacific|n)?|australia(n)?|new zealand|india(n)?|singapore|japan(ese)?)\b/gi],
  },
  {
    region: 'latin_america',
    label: 'Latin America',
    match: [/\b(LATAM)\b/g, /\b(latin america(n)?|brazil(ian)?|mexico|mexican|argentina|chile|colombia)\b/gi],
  },
];

/** Level words of a title, most senior first; a title with none adds no seniority. */
const TITLE_LEVELS: ReadonlyArray<{ level: Seniority; match: RegExp }> = [
  { level: 'owner', match: /\b(founder|co-?founder|owner|managing partner)\b/i },
  { level: 'c_level', match: /\b(chief|ceo|cto|cfo|cmo|coo|cro|cio|ciso|chro|cpo|president|general counsel)\b/i },
  { level: 'vp', match: /\b(vp|svp|evp|vice president)\b/i },
  { level: 'director', match: /\b(director|head|general manager)\b/i },
  { level: 'manager', match: /\b(manager|lead|supervisor)\b/i },
  { level: 'senior', match: /\b(senior|sr|principal|staff|controller)\b/i },
  { level: 'entry', match: /\b(junior|jr|associate|assistant|intern)\b/i },
];

const SENIORITY_ORDER: readonly Seniority[] = ['entry', 'senior', 'manager', 'director', 'vp', 'c_level', 'owner'];

// ---------------------------------------------------------------------------------------------
// The engine
// ---------------------------------------------------------------------------------------------

export function createBuiltinEngine(): AiEngine {
  return {
    name: ENGINE,
    async draftIcp({ product, given }) {
      return { value: draftIcp(product, given), engine: ENGINE };
    },
    async summariseResearch({ profile, product, additionalResearch }) {
      return { value: summariseResearch(profile, product, additionalResearch), engine: ENGINE };
    },
    // The research and the sender's notes are free text the rules cannot read safely; the message is
    // written from the profile's and the product's own fields, so it states nothing they do not.
    async writeMessage({ profile, product, template, sender }) {
      return { value: writeMessage(profile, product, messageSettings(template), sender), engine: ENGINE };
    },
  };
}

/** The one instance hosts use (it holds no state). */
export const builtinEngine: AiEngine = createBuiltinEngine();

function draftIcp(product: ProductFacts, given: Partial<IcpDraft>): IcpDraft {
  // The caller's fields are context too: an industry they chose brings its titles and pains.
  const text = [productText(product), given.description, ...(given.industry_focus ?? []), ...(given.job_titles ?? []), ...(given.pain_points ?? [])]
    .filter(Boolean)
    .join('\n');
  const themes = rankThemes(text);
  const industries = phrases(
    themes.flatMap((t) => t.industries),
    6,
  );
  const industryFocus = given.industry_focus ?? (industries.length > 0 ? industries : DEFAULT_INDUSTRIES);
  const derivedTitles = phrases(
    themes.flatMap((t) => t.titles),
    8,
  );
  const jobTitles = given.job_titles ?? (derivedTitles.length > 0 ? derivedTitles : DEFAULT_TITLES);
  const pains = phrases(
    themes.flatMap((t) => t.pains),
    6,
  );
  const valueDrivers = phrases(product.value_propositions, 8);

  const sizes = SIZE_WORDS.filter((s) => countMatches(text, s.match) > 0);
  const regions = REGION_WORDS.filter((r) => countMatches(text, r.match) > 0);
  const characteristics: CompanyCharacteristics = {};
  const ranges = EMPLOYEE_RANGE_ORDER.filter((r) => sizes.some((s) => s.ranges.includes(r)));
  if (ranges.length > 0) characteristics.employee_ranges = ranges;
  if (regions.length > 0) characteristics.regions = regions.map((r) => r.region);
  characteristics.seniorities = senioritiesOf(jobTitles, text);

  const target = phrases(product.target_customers, 20);
  const name = clip(`${product.name}: ${target[0] ?? industryFocus[0] ?? 'target buyers'}`, 200);
  const description = clip(
    [
      product.description ? sentence(product.description) : `${sentence(product.name)}`,
      target.length > 0 ? `It is built for ${joinList(target.slice(0, 3), 'and')}.` : null,
      valueDrivers.length > 0 ? `What buyers get from it: ${valueDrivers.slice(0, 3).map(lowerFirst).join('; ')}.` : null,
      `This profile targets ${joinList(jobTitles.slice(0, 3), 'and')} in ${joinList(industryFocus.slice(0, 3), 'and')}` +
        `${
          sizes.length > 0
            ? ` at ${joinList(
                sizes.map((s) => s.label),
                'or',
              )}`
            : ''
        }` +
        `${
          regions.length > 0
            ? ` in ${joinList(
                regions.map((r) => r.label),
                'and',
              )}`
            : ''
        }.`,
    ]
      .filter((s): s is string => s !== null)
      .join(' '),
    4000,
  );

  const draft: IcpDraft = {
    name,
    description,
    job_titles: jobTitles,
    pain_points: pains.length > 0 ? pains : DEFAULT_PAINS,
    value_drivers: valueDrivers.length > 0 ? valueDrivers : DEFAULT_VALUE_DRIVERS,
    industry_focus: industryFocus,
    company_characteristics: characteristics,
  };
  // The caller's fields are decisions, not suggestions: they stand as given.
  const decided = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) as Partial<IcpDraft>;
  return { ...draft, ...decided };
}

/**
 * Too thin to write to: no name, no title and no company. A message to such a profile could say
 * nothing about the person, so it would read as spam and cost the sender's reputation with the
 * platform; the research says so and the caller decides.
 */
function isThin(profile: ProspectProfile): boolean {
  return !profile.full_name && !profile.job_title && !profile.company;
}

function summariseResearch(profile: ProspectProfile, product: ProductFacts | null, additionalResearch: string | null): ResearchSummary {
  const title = profile.job_title ?? profile.headline;
  const shared = product ? sharedTheme(profile, product) : null;
  const insights: string[] = [];
  if (profile.job_title && profile.company) insights.push(`Current role: ${profile.job_title} at ${profile.company}.`);
  else if (profile.job_title) insights.push(`Current role: ${profile.job_title}.`);
  else if (profile.company) insights.push(`Works at ${profile.company}.`);
  if (profile.headline && profile.headline !== profile.job_title) insights.push(`Headline: ${profile.headline}`);
  if (profile.industry) insights.push(`Industry: ${profile.industry}.`);
  if (profile.location) insights.push(`Based in ${profile.location}.`);
  for (const job of previousRoles(profile).slice(0, 2)) insights.push(`Previously ${job}.`);
  if (profile.skills.length > 0) insights.push(`Skills include ${joinList(profile.skills.slice(0, 5), 'and')}.`);
  if (profile.summary) insights.push(`In their own words: ${clip(firstSentence(profile.summary), 300)}`);
  if (additionalResearch?.trim()) insights.push(`From the sender's notes: ${clip(additionalResearch.trim(), 900)}`);
  if (insights.length === 0) {
    insights.push(
      profile.full_name
        ? `Only the name (${profile.full_name}) and profile URL are known.`
        : 'Only the profile URL is known; nothing else could be looked up.',
    );
  }

  const recommendedFocus =
    profile.job_title && profile.company
      ? `Their role as ${profile.job_title} at ${profile.company}${shared ? `, and the ${shared} work it involves` : ''}.`
      : title
        ? `Their role as ${title}${shared ? `, and the ${shared} work it involves` : ''}.`
        : profile.company
          ? `Their work at ${profile.company}.`
          : `A short introduction: little is known about ${profile.full_name ?? 'this person'} beyond their profile URL.`;

  const thin = isThin(profile);
  const messagingStrategy = thin
    ? 'Keep it short and honest: introduce the sender and ask to connect, without pretending to know more about them.'
    : !title && !profile.company
      ? `Little is known beyond their name: introduce ${product ? product.name : 'the sender'} in a sentence and ask to connect, without claiming to know their work.`
      : `Open with their ${title ? 'current role' : 'company'}, connect it to one concrete outcome${product ? ` of ${product.name}` : ''}, ` +
        'keep it brief and end with a low-pressure question.';

  let productAlignment: string;
  if (!product) productAlignment = 'No product was given: the message introduces the sender and asks to connect.';
  else if (shared) {
    const why = product.value_propositions[0] ?? product.description;
    productAlignment = `Their profile points to ${shared} work, which ${product.name} is built for${why ? `: ${lowerFirst(clip(firstSentence(why), 500))}.` : '.'}`;
  } else productAlignment = `No clear link between ${product.name} and what the profile shows; lead with their own work and keep the pitch light.`;

  return {
    recommended_focus: clip(recommendedFocus, 2000),
    prospect_insights: insights.slice(0, 20).map((i) => clip(i, 1000)),
    messaging_strategy: messagingStrategy,
    product_alignment: clip(productAlignment, 2000),
    should_send_message: !thin,
  };
}

// ---------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------

type Tone = MessageSettings['tone'];

/** A piece of the message: `rank` 0 always goes in; the others go in by rank while the limits allow. */
interface Part {
  slot: 'greeting' | 'body' | 'ask' | 'signoff';
  text: string;
  rank: 0 | 1 | 2 | 3;
}

/** The most optional rank each length includes: a short note is the greeting, one fact and the ask. */
const RANKS_BY_LENGTH: Record<MessageSettings['length'], number> = { short: 1, medium: 2, long: 3 };

const DEFAULT_ASK: Record<MessageSettings['message_type'], Record<Tone, string>> = {
  connection_request: {
    professional: 'Would you be open to connecting?',
    friendly: 'Would love to connect!',
    casual: 'Happy to connect?',
    direct: 'Open to connecting?',
  },
  inmail: {
    professional: 'Would a short call next week be useful?',
    friendly: 'Would you be up for a quick chat sometime?',
    casual: 'Worth a quick chat?',
    direct: 'Can we talk for 15 minutes this week?',
  },
  email: {
    professional: 'Would a short call next week be useful?',
    friendly: 'Would you be up for a quick chat sometime?',
    casual: 'Worth a quick chat?',
    direct: 'Can we talk for 15 minutes this week?',
  },
  follow_up: {
    professional: 'Would a short conversation be worthwhile?',
    friendly: 'Would a quick chat be helpful?',
    casual: 'Worth a quick chat?',
    direct: 'Is this worth 15 minutes?',
  },
};

function writeMessage(profile: ProspectProfile, product: ProductFacts | null, settings: MessageSettings, sender: SenderProfile): GeneratedMessage {
  const { tone } = settings;
  const first = profile.full_name?.split(/\s+/)[0] ?? null;
  const parts: Part[] = [];

  const greeting = greetingFor(tone, first);
  if (greeting) parts.push({ slot: 'greeting', text: greeting, rank: 0 });
  if (settings.message_type === 'follow_up') parts.push({ slot: 'body', text: 'Following up on my earlier message.', rank: 0 });

  const hook = hookFor(tone, profile);
  if (hook) parts.push({ slot: 'body', text: hook, rank: 1 });
  if (settings.message_type !== 'connection_request' && sender.name) {
    const who = [sender.title, sender.company].filter(Boolean).join(' at ');
    parts.push({ slot: 'body', text: `I'm ${sender.name}${who ? `, ${who}` : ''}.`, rank: 2 });
  }
  if (product) {
    const audience = product.target_customers[0] ? `${product.target_customers[0]}` : 'teams like yours';
    const props = phrases(product.value_propositions, 3);
    if (props[0]) parts.push({ slot: 'body', text: sentence(`${product.name} helps ${audience}: ${lowerFirst(props[0])}`), rank: 1 });
    else if (product.description) parts.push({ slot: 'body', text: aboutProduct(product), rank: 1 });
    if (props.length > 1) parts.push({ slot: 'body', text: sentence(`It also helps ${joinList(props.slice(1).map(lowerFirst), 'and')}`), rank: 3 });
    const shared = sharedTheme(profile, product);
    if (shared) parts.push({ slot: 'body', text: `Given your focus on ${shared}, it seemed worth a note.`, rank: 2 });
  }
  const previous = previousRoles(profile)[0];
  if (previous) parts.push({ slot: 'body', text: `Your path from ${previous} caught my eye.`, rank: 3 });
  parts.push({ slot: 'ask', text: sentence(settings.call_to_action ?? DEFAULT_ASK[settings.message_type][tone]), rank: 0 });
  if (settings.message_type !== 'connection_request' && sender.name) parts.push({ slot: 'signoff', text: signoffFor(tone, sender), rank: 0 });

  // Greedy by rank, then by the order written: required parts first, then each optional part that
  // still fits the word and character limits.
  const allowed = RANKS_BY_LENGTH[settings.length];
  const chosen = new Set(parts.filter((p) => p.rank === 0));
  const optional = parts.filter((p) => p.rank > 0 && p.rank <= allowed).sort((a, b) => a.rank - b.rank);
  for (const part of optional) {
    const trial = new Set([...chosen, part]);
    if (
      fits(
        render(
          parts.filter((p) => trial.has(p)),
          settings,
        ),
        settings,
      )
    )
      chosen.add(part);
  }
  const message = clipToLimits(
    render(
      parts.filter((p) => chosen.has(p)),
      settings,
    ),
    settings,
  );
  return { message };
}

function render(parts: Part[], settings: MessageSettings): string {
  const of = (slot: Part['slot']) => parts.filter((p) => p.slot === slot).map((p) => p.text);
  // A connection note is one short paragraph; the other types are laid out like a letter.
  if (settings.message_type === 'connection_request') return [...of('greeting'), ...of('body'), ...of('ask')].join(' ');
  return [of('greeting').join(' '), of('body').join(' '), of('ask').join(' '), of('signoff').join('\n')].filter(Boolean).join('\n\n');
}

function fits(message: string, settings: MessageSettings): boolean {
  return countWords(message) <= settings.maxWords && (settings.maxCharacters === null || countCharacters(message) <= settings.maxCharacters);
}

/** The last guard, for required parts that are long on their own (a 300-character call to action): cut at a word. */
function clipToLimits(message: string, settings: MessageSettings): string {
  if (fits(message, settings)) return message;
  const words = message.split(/(\s+)/);
  let out = '';
  for (const piece of words) {
    const next = out + piece;
    if (!fits(`${next.trimEnd()}…`, settings)) break;
    out = next;
  }
  return `${out.trimEnd()}…`;
}

function greetingFor(tone: Tone, first: string | null): string | null {
  switch (tone) {
    case 'professional':
      return first ? `Hi ${first},` : 'Hello,';
    case 'friendly':
      return first ? `Hi ${first}!` : 'Hi there!';
    case 'casual':
      return first ? `Hey ${first},` : 'Hey,';
    case 'direct':
      return first ? `${first},` : null;
  }
}

function hookFor(tone: Tone, profile: ProspectProfile): string | null {
  const role = profile.job_title && profile.company ? `${profile.job_title} at ${profile.company}` : (profile.job_title ?? profile.company);
  if (!role) return profile.headline ? `I came across your profile: ${clip(profile.headline, 120)}.` : null;
  const at = profile.job_title ? `your work as ${role}` : `your work at ${role}`;
  switch (tone) {
    case 'professional':
      return `I noticed ${at}.`;
    case 'friendly':
      return `I came across ${at} and wanted to reach out.`;
    case 'casual':
      return `Saw ${at}.`;
    case 'direct':
      return profile.job_title ? `You're ${role}.` : `You work at ${role}.`;
  }
}

function signoffFor(tone: Tone, sender: SenderProfile): string {
  const close = tone === 'casual' || tone === 'friendly' ? 'Cheers,' : 'Best,';
  return `${close}\n${sender.name}`;
}

function aboutProduct(product: ProductFacts): string {
  const first = firstSentence(product.description ?? '');
  return first.toLowerCase().startsWith(product.name.toLowerCase()) ? sentence(first) : sentence(`${product.name}: ${first}`);
}

// ---------------------------------------------------------------------------------------------
// Text helpers
// ---------------------------------------------------------------------------------------------

function productText(product: ProductFacts): string {
  return [product.name, product.description, ...product.value_propositions, ...product.target_customers].filter(Boolean).join('\n');
}

function profileText(profile: ProspectProfile): string {
  return [profile.job_title, profile.headline, profile.industry, profile.summary, ...profile.skills, ...profile.experience.map((e) => e.title)]
    .filter(Boolean)
    .join('\n');
}

function countMatches(text: string, patterns: readonly RegExp[]): number {
  // `match` with a global pattern starts from 0 and leaves no state behind.
  return patterns.reduce((n, re) => n + (text.match(re)?.length ?? 0), 0);
}

/** The themes the text names, most mentioned first; ties keep the table's order. */
function rankThemes(text: string): Theme[] {
  return THEMES.map((theme, index) => ({ theme, index, count: countMatches(text, theme.match) }))
    .filter((t) => t.count > 0)
    .sort((a, b) => b.count - a.count || a.index - b.index)
    .map((t) => t.theme);
}

/** The theme both the prospect's profile and the product name, if any: what makes the message relevant. */
function sharedTheme(profile: ProspectProfile, product: ProductFacts): string | null {
  const theirs = new Set(rankThemes(profileText(profile)));
  return rankThemes(productText(product)).find((t) => theirs.has(t))?.label ?? null;
}

function previousRoles(profile: ProspectProfile): string[] {
  return profile.experience
    .filter((e) => e.end !== null && (e.title || e.company))
    .map((e) => (e.title && e.company ? `${e.title} at ${e.company}` : (e.title ?? `a role at ${e.company}`)));
}

function senioritiesOf(titles: readonly string[], text: string): Seniority[] {
  const found = new Set<Seniority>();
  for (const title of titles) {
    const level = TITLE_LEVELS.find((l) => l.match.test(title))?.level;
    if (level) found.add(level);
  }
  if (/\bfounders?\b/i.test(text)) found.add('owner');
  if (found.size === 0) return ['director', 'vp'];
  return SENIORITY_ORDER.filter((s) => found.has(s));
}

/** Cleaned, deduplicated (ignoring case), at most `max`, each within the contract's 300 characters. */
function phrases(items: readonly (string | null)[], max: number): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const item of items) {
    const text = clip((item ?? '').replace(/\s+/g, ' ').trim(), 300);
    if (!text || seen.has(text.toLowerCase())) continue;
    seen.add(text.toLowerCase());
    out.push(text);
    if (out.length === max) break;
  }
  return out;
}

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const cut = sliceWhole(text, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > max / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

function sentence(text: string): string {
  const t = text.replace(/\s+/g, ' ').trim();
  return /[.!?…]$/.test(t) ? t : `${t}.`;
}

function firstSentence(text: string): string {
  const t = text.replace(/\s+/g, ' ').trim();
  const end = /[.!?](\s|$)/.exec(t);
  return end ? t.slice(0, end.index + 1) : t;
}

/** Lower-cases the first letter unless the first word is an acronym or a name in capitals ("API", "EU"). */
function lowerFirst(text: string): string {
  const firstWord = text.split(/\s/)[0] ?? '';
  if (firstWord.length > 1 && firstWord === firstWord.toUpperCase()) return text.replace(/[.!?]$/, '');
  return `${text.charAt(0).toLowerCase()}${text.slice(1)}`.replace(/[.!?]$/, '');
}

function joinList(items: readonly string[], conjunction: 'and' | 'or'): string {
  if (items.length <= 1) return items[0] ?? '';
  return `${items.slice(0, -1).join(', ')} ${conjunction} ${items[items.length - 1]}`;
}
