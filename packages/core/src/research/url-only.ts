import type { ProspectProfile } from '../ai/engine.ts';
import type { ProfileResearch } from './profile.ts';

/**
 * The research provider when none is configured (`RESEARCH_PROVIDER=url-only`, the default): it looks
 * nothing up, so it knows only what the URL itself says. The profile carries the URL and, when the
 * slug reads as one, a name; every other field is null. The message is then written from the
 * caller's context (the product, `additional_research`, the sender), and the research step says how
 * little is known (ai/engine.ts summariseResearch).
 */
export const urlOnlyResearch: ProfileResearch = {
  name: 'url-only',
  async lookup(linkedinUrl) {
    return urlOnlyProfile(linkedinUrl);
  },
};

export function urlOnlyProfile(linkedinUrl: string): ProspectProfile {
  return {
    linkedin_url: linkedinUrl,
    full_name: nameFromProfileUrl(linkedinUrl),
    headline: null,
    job_title: null,
    company: null,
    industry: null,
    location: null,
    summary: null,
    experience: [],
    skills: [],
    source: urlOnlyResearch.name,
  };
}

/** Trailing slug words that are degrees or certificates people append to their name, not part of it. */
const CREDENTIALS = new Set(['mba', 'phd', 'cpa', 'cfa', 'pmp', 'cissp']);

/**
 * The name a profile slug spells, or null: `jane-doe-4a1b2c` → `Jane Doe`. LinkedIn makes a slug from
 * the name and, when it is taken, appends an id-like segment; those trailing segments (any with a
 * digit) and appended credentials are dropped. What remains must be at least two words of letters:
 * a one-word slug (`jsmith`, `janedoe`) is more often a handle than a name, and greeting someone as
 * "Jsmith" is worse than not using a name at all.
 */
export function nameFromProfileUrl(linkedinUrl: string): string | null {
  let slug: string;
  try {
    const match = /^\/in\/([^/]+)\/?$/.exec(new URL(linkedinUrl).pathname);
    if (!match?.[1]) return null;
    slug = decodeURIComponent(match[1]);
  } catch {
    return null;
  }
  const words = slug.split(/[-_.]+/).filter(Boolean);
  while (words.length > 0) {
    const last = words[words.length - 1] ?? '';
    if (!/\d/.test(last) && !CREDENTIALS.has(last.toLowerCase())) break;
    words.pop();
  }
  if (words.length < 2 || !words.every((w) => /^\p{L}+(['’]\p{L}+)*$/u.test(w))) return null;
  return words.map((w) => `${w.charAt(0).toUpperCase()}${w.slice(1).toLowerCase()}`).join(' ');
}
