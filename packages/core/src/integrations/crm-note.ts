/**
 * The note a CRM push attaches to the company: what happened, the pages, engaged time, ICP score,
 * country, when, and the console link, as the small HTML both HubSpot (`hs_note_body`) and Pipedrive
 * (note `content`) render. The last line carries the push's reference (noteReference), which is how a
 * retried push finds the note it already wrote.
 */
import { companyDomain, companyLabel, consoleLink, engagedTime, headlineOf, icpLabel, pageCount, pagesOf } from './describe-visit.ts';
import type { SignalMessage } from './signal-message.ts';
import { escapeHtml } from './vendor-http.ts';

/** Both vendors take far more (HubSpot: 65,536 characters); the note is short by construction. */
export function crmNoteHtml(m: SignalMessage, reference: string): string {
  const { shown, more } = pagesOf(m);
  const pages = shown.map((p) => `<li>${escapeHtml(p)}</li>`).join('') + (more > 0 ? `<li>and ${more} more</li>` : '');
  const domain = companyDomain(m);
  const rows = [
    `Company: ${escapeHtml(companyLabel(m))}${domain && domain !== companyLabel(m) ? ` (${escapeHtml(domain)})` : ''}`,
    `Engaged time: ${escapeHtml(engagedTime(m.visitor.active_ms))}${m.visitor.high_intent ? ' (high intent)' : ''}`,
    `ICP score: ${escapeHtml(icpLabel(m) ?? 'no ICP match')}`,
    `Country: ${escapeHtml(m.visitor.country_code ?? 'unknown')}`,
    `First seen: ${escapeHtml(m.visitor.first_seen)}; last seen: ${escapeHtml(m.visitor.last_seen)}`,
  ];
  const url = consoleLink(m);
  if (url) rows.push(`<a href="${escapeHtml(url)}">Open in Sightline</a>`);
  return [
    `<p><strong>${escapeHtml(headlineOf(m))}</strong></p>`,
    `<p>${rows.join('<br>')}</p>`,
    `<p>Pages (${escapeHtml(pageCount(m))}):</p><ul>${pages}</ul>`,
    `<p>Sightline reference: ${escapeHtml(reference)}</p>`,
  ].join('');
}
