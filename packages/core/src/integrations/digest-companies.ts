import { companyKey } from './describe-visit.ts';
import type { SignalMessage } from './signal-message.ts';

/**
 * The day's companies for a digest, each once (by domain, else name), for Slack and Teams alike: the newest message of a company
 * stands for it, keeping the best ICP match and the most pages seen across its messages.
 */
export function digestCompanies(ms: readonly SignalMessage[]): SignalMessage[] {
  const byCompany = new Map<string, SignalMessage>();
  for (const m of ms) {
    const key = companyKey(m);
    const seen = byCompany.get(key);
    if (!seen) {
      byCompany.set(key, m);
      continue;
    }
    const newer = m.visitor.last_seen > seen.visitor.last_seen ? m : seen;
    const icp = [seen.icp, m.icp].reduce<SignalMessage['icp']>((best, x) => (x && (!best || x.score > best.score) ? x : best), null);
    const most = m.visitor.page_count > seen.visitor.page_count ? m : seen;
    byCompany.set(key, {
      ...newer,
      icp,
      visitor: {
        ...newer.visitor,
        pages: most.visitor.pages,
        page_count: most.visitor.page_count,
        active_ms: Math.max(m.visitor.active_ms, seen.visitor.active_ms),
        high_intent: m.visitor.high_intent || seen.visitor.high_intent,
      },
    });
  }
  return [...byCompany.values()].sort(
    (a, b) =>
      (b.icp?.score ?? -1) - (a.icp?.score ?? -1) ||
      (a.visitor.last_seen < b.visitor.last_seen ? 1 : a.visitor.last_seen > b.visitor.last_seen ? -1 : 0),
  );
}
