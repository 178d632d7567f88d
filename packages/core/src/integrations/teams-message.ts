/**
 * Microsoft Teams bodies for a Workflows webhook: a flow started by "When a Teams webhook request is
 * received" (https://learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/connectors-using),
 * whose "Post card in a chat or channel" step posts the Adaptive Card it is sent. Workflows take
 * Adaptive Cards only (not the retired connectors' MessageCard).
 *
 * Documented fields we rely on:
 * - the request body `{ type: 'message', attachments: [{ contentType:
 *   'application/vnd.microsoft.card.adaptive', contentUrl: null, content: <AdaptiveCard> }] }`;
 * - the card (https://adaptivecards.io/explorer/): `type: 'AdaptiveCard'`, `$schema`, `version`
 *   ('1.4': what Teams renders on desktop, web and mobile), `body` of `TextBlock` (`text`, `size`,
 *   `weight`, `wrap`, `isSubtle`), `FactSet` (`facts` of `{ title, value }`) and `Container`
 *   (`items`, `separator`, `selectAction`), and `actions` of `Action.OpenUrl` (`title`, `url`);
 * - Teams caps a message at about 28 KB, so a digest is cut to stay well under it.
 * TextBlock and fact values render a Markdown subset (bold, italic, lists, `[text](url)` links): a
 * company name is data, so a `](` in it is broken apart and can never become a link.
 */
import { clip, companyDomain, companyLabel, consoleLink, engagedTime, headlineOf, icpLabel, pageCount, pagesOf } from './describe-visit.ts';
import { digestCompanies } from './digest-companies.ts';
import type { SignalMessage } from './signal-message.ts';

export const ADAPTIVE_CARD_CONTENT_TYPE = 'application/vnd.microsoft.card.adaptive';
const CARD_SCHEMA = 'http://adaptivecards.io/schemas/adaptive-card.json';
const CARD_VERSION = '1.4';
/** Well under Teams' ~28 KB message cap, leaving room for what the flow adds. */
const BODY_MAX_CHARS = 20_000;
/** Companies listed in one digest card; the rest are counted. */
export const TEAMS_DIGEST_MAX_COMPANIES = 20;

export type AdaptiveElement = Record<string, unknown>;
export interface AdaptiveCard {
  type: 'AdaptiveCard';
  $schema: string;
  version: string;
  body: AdaptiveElement[];
  actions?: AdaptiveElement[];
}
export interface TeamsMessageBody {
  type: 'message';
  attachments: [{ contentType: typeof ADAPTIVE_CARD_CONTENT_TYPE; contentUrl: null; content: AdaptiveCard }];
}

/** Text shown in a card: Markdown link syntax broken apart, cut to `max`. */
export function cardText(text: string, max = 500): string {
  return clip(text.replace(/\]\s*\(/g, '] ('), max);
}

function wrap(card: AdaptiveCard): TeamsMessageBody {
  return { type: 'message', attachments: [{ contentType: ADAPTIVE_CARD_CONTENT_TYPE, contentUrl: null, content: card }] };
}

function companyText(m: SignalMessage): string {
  const label = companyLabel(m);
  const domain = companyDomain(m);
  return cardText(domain && domain !== label ? `${label} (${domain})` : label);
}

function facts(m: SignalMessage): AdaptiveElement {
  const { shown, more } = pagesOf(m);
  const pages = [...shown.map((p) => cardText(p, 200)), ...(more > 0 ? [`and ${more} more`] : [])];
  return {
    type: 'FactSet',
    facts: [
      { title: 'Pages', value: `${pageCount(m)}${pages.length ? `: ${pages.join(', ')}` : ''}` },
      { title: 'Engaged time', value: engagedTime(m.visitor.active_ms) },
      { title: 'ICP score', value: cardText(icpLabel(m) ?? 'No ICP match', 200) },
      { title: 'Country', value: cardText(m.visitor.country_code ?? 'Unknown', 10) },
    ],
  };
}

/**
 * The Workflows body for one signal: the signal and site as the title, the company and its domain,
 * a fact set (pages, engaged time, ICP score, country), and an "Open in Sightline" action when there
 * is a console link.
 */
export function teamsMessage(m: SignalMessage): TeamsMessageBody {
  const card: AdaptiveCard = {
    type: 'AdaptiveCard',
    $schema: CARD_SCHEMA,
    version: CARD_VERSION,
    body: [
      { type: 'TextBlock', text: cardText(headlineOf(m), 200), size: 'Medium', weight: 'Bolder', wrap: true },
      { type: 'TextBlock', text: `${companyText(m)}${m.visitor.high_intent ? ' · high intent' : ''}`, weight: 'Bolder', wrap: true },
      facts(m),
    ],
  };
  const url = consoleLink(m);
  if (url) card.actions = [{ type: 'Action.OpenUrl', title: 'Open in Sightline', url }];
  return wrap(card);
}

/**
 * One card for a day's signals, each company once (see digestCompanies): a container per company
 * with its facts, opening the visitor in the console when tapped. Past TEAMS_DIGEST_MAX_COMPANIES,
 * or past the message size Teams accepts, the rest are counted, not listed. `day` is YYYY-MM-DD.
 */
export function teamsDigest(ms: readonly SignalMessage[], day: string): TeamsMessageBody {
  const companies = digestCompanies(ms);
  const site = ms[0]?.website.domain;
  const title = `${companies.length} ${companies.length === 1 ? 'company' : 'companies'} on ${site ?? 'your site'} · ${day}`;
  const build = (listed: SignalMessage[]): TeamsMessageBody => {
    const body: AdaptiveElement[] = [{ type: 'TextBlock', text: cardText(title, 200), size: 'Medium', weight: 'Bolder', wrap: true }];
    for (const m of listed) {
      const container: AdaptiveElement = {
        type: 'Container',
        separator: true,
        items: [{ type: 'TextBlock', text: companyText(m), weight: 'Bolder', wrap: true }, facts(m)],
      };
      const url = consoleLink(m);
      if (url) container.selectAction = { type: 'Action.OpenUrl', title: 'Open in Sightline', url };
      body.push(container);
    }
    if (companies.length > listed.length) {
      body.push({ type: 'TextBlock', text: `and ${companies.length - listed.length} more in the console`, isSubtle: true, wrap: true });
    }
    return wrap({ type: 'AdaptiveCard', $schema: CARD_SCHEMA, version: CARD_VERSION, body });
  };
  let count = Math.min(companies.length, TEAMS_DIGEST_MAX_COMPANIES);
  let message = build(companies.slice(0, count));
  while (count > 1 && JSON.stringify(message).length > BODY_MAX_CHARS) {
    count -= 1;
    message = build(companies.slice(0, count));
  }
  return message;
}
