/**
 * Slack incoming-webhook bodies (https://docs.slack.dev/messaging/sending-messages-using-incoming-webhooks)
 * in Block Kit (https://docs.slack.dev/reference/block-kit/blocks).
 *
 * Documented fields and limits we rely on:
 * - top-level `text`: the notification and fallback text (mrkdwn); `blocks`: at most 50 per message.
 * - `header` block: `plain_text`, at most 150 characters.
 * - `section` block: `text` (mrkdwn) at most 3,000 characters; `fields` at most 10 items of at most
 *   2,000 characters each; `accessory`: one element (our button).
 * - `context` block: at most 10 elements. `divider` block.
 * - `actions` block with a `button` element: `text` (`plain_text`, at most 75 characters), `url` (at
 *   most 3,000 characters), `action_id` (at most 255, unique within the message).
 * - Escaping (https://docs.slack.dev/messaging/formatting-message-text): in mrkdwn only `&`, `<` and
 *   `>` are replaced by `&amp;`, `&lt;` and `&gt;` — which also keeps a company name such as
 *   `<!channel>` from pinging a channel. `plain_text` is not parsed for links or mentions and is sent as is.
 */
import { clip, companyDomain, companyLabel, consoleLink, engagedTime, headlineOf, icpLabel, pageCount, pagesOf } from './describe-visit.ts';
import { digestCompanies } from './digest-companies.ts';
import type { SignalMessage } from './signal-message.ts';

const HEADER_MAX = 150;
const SECTION_TEXT_MAX = 3000;
const FIELD_MAX = 2000;
const BUTTON_TEXT_MAX = 75;
const BLOCKS_MAX = 50;
/** Slack truncates `text` past 40,000 characters and advises 4,000; the fallback stays well under. */
const FALLBACK_MAX = 3000;
/** Digest entries per message: a header, one section per company and a context line stay far under 50 blocks. */
export const SLACK_DIGEST_MAX_COMPANIES = 20;

export type SlackBlock = Record<string, unknown>;
export interface SlackMessageBody {
  text: string;
  blocks: SlackBlock[];
}

/** Escapes text for Slack mrkdwn: `&`, `<`, `>` only (Slack's documented rule). */
export function escapeSlack(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Cuts raw text so that, once escaped, it fits `max` characters (an entity is never split). */
function escapedWithin(text: string, max: number): string {
  let out = '';
  for (const ch of text) {
    const next = escapeSlack(ch);
    if (out.length + next.length > max - 1) return `${out}…`;
    out += next;
  }
  return out;
}

const plain = (text: string, max: number) => ({ type: 'plain_text', text: clip(text, max), emoji: true });
const mrkdwn = (text: string) => ({ type: 'mrkdwn', text });

/** `Acme Inc (acme.com)` or just one of them, escaped. */
function companyLine(m: SignalMessage): string {
  const label = companyLabel(m);
  const domain = companyDomain(m);
  return domain && domain !== label ? `${escapedWithin(label, 500)} (${escapedWithin(domain, 300)})` : escapedWithin(label, 800);
}

function pagesField(m: SignalMessage): string {
  const { shown, more } = pagesOf(m);
  // Five escaped lines of at most 300 characters each stay under FIELD_MAX.
  const lines = shown.map((p) => `• ${escapedWithin(p, 300)}`);
  if (more > 0) lines.push(`and ${more} more`);
  return [`*Pages* (${pageCount(m)})`, ...lines].join('\n');
}

function button(m: SignalMessage, actionId: string, label: string): SlackBlock | null {
  const url = consoleLink(m);
  return url ? { type: 'button', text: plain(label, BUTTON_TEXT_MAX), url, action_id: actionId } : null;
}

/**
 * The Block Kit body for one signal: a header (the signal and the site), a section naming the company
 * and its domain, fields for pages, engaged time, ICP score and country, and a button to the visitor
 * in the console (when there is a console link). `text` is the notification's fallback.
 */
export function slackMessage(m: SignalMessage): SlackMessageBody {
  const fields = [
    mrkdwn(pagesField(m)),
    mrkdwn(`*Engaged time*\n${engagedTime(m.visitor.active_ms)}`),
    mrkdwn(`*ICP score*\n${escapedWithin(icpLabel(m) ?? 'No ICP match', FIELD_MAX - 20)}`),
    mrkdwn(`*Country*\n${escapeSlack(m.visitor.country_code ?? 'Unknown')}`),
  ];
  const blocks: SlackBlock[] = [
    { type: 'header', text: plain(headlineOf(m), HEADER_MAX) },
    { type: 'section', text: mrkdwn(clip(`*${companyLine(m)}*${m.visitor.high_intent ? '  :fire: high intent' : ''}`, SECTION_TEXT_MAX)) },
    { type: 'section', fields },
  ];
  const open = button(m, 'open_visitor', 'Open in Sightline');
  if (open) blocks.push({ type: 'actions', elements: [open] });
  const text = `${escapedWithin(headlineOf(m), 300)}: ${companyLine(m)}`;
  return { text: clip(text, FALLBACK_MAX), blocks };
}

/**
 * One message for a day's signals, each company once (by domain, else name): the newest signal of a
 * company stands for it, with its highest ICP score. Companies are ordered by ICP score, then by
 * last seen; past SLACK_DIGEST_MAX_COMPANIES the rest are counted, not listed. `day` is the
 * YYYY-MM-DD the digest covers.
 */
export function slackDigest(ms: readonly SignalMessage[], day: string): SlackMessageBody {
  const companies = digestCompanies(ms);
  const listed = companies.slice(0, SLACK_DIGEST_MAX_COMPANIES);
  const site = ms[0]?.website.domain;
  const title = `${companies.length} ${companies.length === 1 ? 'company' : 'companies'} on ${site ?? 'your site'} · ${day}`;
  const blocks: SlackBlock[] = [{ type: 'header', text: plain(title, HEADER_MAX) }];
  listed.forEach((m, i) => {
    const facts = [pageCount(m), `${engagedTime(m.visitor.active_ms)} engaged`, icpLabel(m), m.visitor.country_code].filter((f): f is string => !!f);
    const section: SlackBlock = {
      type: 'section',
      text: mrkdwn(clip(`*${companyLine(m)}*\n${escapedWithin(facts.join(' · '), 1000)}`, SECTION_TEXT_MAX)),
    };
    const open = button(m, `open_visitor_${i}`, 'Open');
    if (open) section.accessory = open;
    blocks.push(section);
  });
  if (companies.length > listed.length) {
    blocks.push({ type: 'context', elements: [mrkdwn(`and ${companies.length - listed.length} more in the console`)] });
  }
  const names = listed.map((m) => companyLabel(m));
  const text = `${title}: ${names.join(', ')}${companies.length > listed.length ? ', …' : ''}`;
  return { text: escapedWithin(text, FALLBACK_MAX), blocks: blocks.slice(0, BLOCKS_MAX) };
}
