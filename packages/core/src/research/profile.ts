import type { ProspectProfile } from '../ai/engine.ts';

/**
 * The profile-research port: what api-full-request learns about a prospect from their personal
 * profile URL before a message is written. A provider answers the profile, or null when it knows
 * nothing of it (not a failure: the message is then written from the URL and the caller's research).
 * A thrown error is a provider failure: the request answers 502 and nothing is charged.
 */
export interface ProfileResearch {
  /** The provider's name, stored with the research it produced. */
  readonly name: string;
  lookup(linkedinUrl: string, signal: AbortSignal): Promise<ProspectProfile | null>;
}

declare module '../kernel/context.ts' {
  interface CoreDeps {
    /** Looks up a prospect's profile for api-full-request (research/profile.ts). */
    research: ProfileResearch;
  }
}
