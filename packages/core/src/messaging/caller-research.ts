import type { ProductFacts, ResearchSummary } from '../ai/engine.ts';

/**
 * A request that brings its own research (`research_summary`, a string) skips the research step
 * and its charge, yet its response has the spec's research_summary object like any other. It is
 * built here from the caller's text by fixed rules — no engine call, so nothing is charged for it
 * and the same text always gives the same object:
 * - prospect_insights: the text's points — its lines (list markers such as `-`, `*`, `•`, `1.`
 *   dropped), or its sentences when it is one paragraph — at most 20, each at most 1000 characters;
 * - recommended_focus: the first point;
 * - messaging_strategy: says the message follows the supplied research as given;
 * - product_alignment: the points that name the product, or a sentence saying none does (or that
 *   no product was referenced);
 * - should_send_message: true — the caller has already decided to write to this prospect.
 */

const MAX_INSIGHTS = 20;
const MAX_INSIGHT_CHARS = 1000;
const MAX_FIELD_CHARS = 2000;

export const CALLER_MESSAGING_STRATEGY =
  'Follow the research supplied with the request: the message is written from it as given, without a research lookup.';

/** At most `max` code points, an ellipsis marking a cut. */
function clip(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}

/** The caller's text as a list of points (see above). */
export function researchPoints(text: string): string[] {
  const lines = text
    .split(/\r?\n|\r/)
    .map((line) =>
      line
        .replace(/^\s*(?:[-*•‣◦·]|\d{1,3}[.)])\s+/u, '')
        .replace(/\s+/g, ' ')
        .trim(),
    )
    .filter(Boolean);
  const points = lines.length === 1 ? (lines[0] ?? '').split(/(?<=[.!?])\s+(?=\S)/) : lines;
  return points
    .map((p) => p.trim())
    .filter(Boolean)
    .slice(0, MAX_INSIGHTS)
    .map((p) => clip(p, MAX_INSIGHT_CHARS));
}

export function researchFromCallerText(text: string, product: ProductFacts | null): ResearchSummary {
  const points = researchPoints(text);
  // The schema refuses a blank research_summary, so there is always a point; the fallback is for other callers.
  const focus = points[0] ?? 'The research supplied with the request.';
  let alignment: string;
  if (!product) {
    alignment = 'No product was referenced in this request.';
  } else {
    const name = product.name.toLowerCase();
    const naming = points.filter((p) => p.toLowerCase().includes(name));
    alignment = naming.length
      ? clip(naming.join(' '), MAX_FIELD_CHARS)
      : clip(`The supplied research does not mention ${product.name}.`, MAX_FIELD_CHARS);
  }
  return {
    recommended_focus: clip(focus, MAX_FIELD_CHARS),
    prospect_insights: points.length ? points : [focus],
    messaging_strategy: CALLER_MESSAGING_STRATEGY,
    product_alignment: alignment,
    should_send_message: true,
  };
}
