/**
 * The words every destination shows for one signal, written once so Slack, Teams and the CRM notes
 * say the same thing: the headline, the company, the pages, the engaged time and the ICP score. Each
 * adapter escapes these for its own format; nothing here is escaped.
 */
import type { SignalKind, SignalMessage } from './signal-message.ts';

const HEADLINES: Record<SignalKind, string> = {
  visitor_identified: 'New company on',
  visitor_returned: 'Company returned to',
  high_intent: 'High-intent visit on',
  icp_qualified: 'ICP match on',
  watched_visit: 'Watched company on',
};

/** How many pages a message lists; the rest are counted ("and 7 more"). */
export const PAGES_SHOWN = 5;
/** A page path longer than this is cut: a query string can be kilobytes. */
const PAGE_MAX_CHARS = 120;

/** "High-intent visit on example.com". */
export function headlineOf(m: SignalMessage): string {
  return `${HEADLINES[m.signal]} ${m.website.domain}`;
}

/** The company's name, else its domain, else a plain "Unknown company" (a signal without either is still shown). */
export function companyLabel(m: SignalMessage): string {
  return m.visitor.company_name?.trim() || companyDomain(m) || 'Unknown company';
}

/** The company's domain as shown: trimmed and lower-case (domains are case-insensitive), or null. */
export function companyDomain(m: SignalMessage): string | null {
  return m.visitor.domain?.trim().toLowerCase() || null;
}

/** One key per company, so a digest carries it once: its domain, else its name, else the visitor. */
export function companyKey(m: SignalMessage): string {
  const domain = companyDomain(m);
  if (domain) return `domain:${domain}`;
  const name = m.visitor.company_name?.trim().toLowerCase();
  return name ? `name:${name}` : `visitor:${m.visitor.id}`;
}

/** "3m 20s", "1h 5m", "45s"; under a second is "0s". */
export function engagedTime(activeMs: number): string {
  const total = Number.isFinite(activeMs) && activeMs > 0 ? Math.round(activeMs / 1000) : 0;
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return m > 0 ? `${h}h ${m}m` : `${h}h`;
  if (m > 0) return s > 0 ? `${m}m ${s}s` : `${m}m`;
  return `${s}s`;
}

/** The pages to list (at most PAGES_SHOWN, each cut short) and how many visits are left unnamed. */
export function pagesOf(m: SignalMessage): { shown: string[]; more: number } {
  const shown = m.visitor.pages.slice(0, PAGES_SHOWN).map((p) => (p.length > PAGE_MAX_CHARS ? `${p.slice(0, PAGE_MAX_CHARS - 1)}…` : p));
  const total = Math.max(m.visitor.page_count, m.visitor.pages.length);
  return { shown, more: Math.max(0, total - shown.length) };
}

/** "12 pages" or "1 page". */
export function pageCount(m: SignalMessage): string {
  const n = Math.max(m.visitor.page_count, m.visitor.pages.length);
  return `${n} ${n === 1 ? 'page' : 'pages'}`;
}

/** "Enterprise SaaS: 87/100", or null without an ICP. Scores are shown as whole numbers. */
export function icpLabel(m: SignalMessage): string | null {
  return m.icp ? `${m.icp.name}: ${Math.round(m.icp.score)}/100` : null;
}

/**
 * The console link when it is an absolute http(s) URL short enough for every destination (Slack
 * buttons take 3,000 characters); anything else is left out rather than sent as a broken link.
 */
export function consoleLink(m: SignalMessage): string | null {
  const raw = m.console_url;
  if (!raw || raw.length > 2000) return null;
  try {
    const url = new URL(raw);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
  } catch {
    return null;
  }
}

/** Cuts `text` to `max` characters, ending with "…" when cut. */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
