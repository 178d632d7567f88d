import { z } from '@hono/zod-openapi';

/**
 * The AI engine port: the three tasks the service asks of a language model, each with its answer
 * written once as a zod schema. Two engines implement it (chosen by configuration in build-deps):
 * an OpenAI-compatible chat-completions adapter, and a built-in deterministic engine that works
 * offline. Every answer says which engine produced it (`engine`), and that name is stored with what
 * was generated, so a reader can always tell a model's words from the rules'.
 */

/** What the service knows of a product (the products table). */
export interface ProductFacts {
  name: string;
  url: string | null;
  description: string | null;
  value_propositions: string[];
  target_customers: string[];
}

/**
 * Target company attributes. The keys below are the ones scoring reads; any other key a caller
 * gives (a text, number, flag or flat list of them) is kept and returned as it was given.
 */
export const CompanyCharacteristics = z
  .object({
    /** Employee ranges as identifications spell them: `1-10`, `11-50`, `51-200`, `201-500`, `501-1000`, `1001-5000`, `5001-10000`, `10001+`. */
    employee_ranges: z.array(z.string().max(20)).max(8).optional(),
    /** ISO 3166 alpha-2 codes. */
    countries: z
      .array(z.string().regex(/^[A-Z]{2}$/, 'must be an ISO 3166 alpha-2 code'))
      .max(250)
      .optional(),
    /** Broad regions: `north_america`, `latin_america`, `europe`, `middle_east_africa`, `asia_pacific`. */
    regions: z
      .array(z.enum(['north_america', 'latin_america', 'europe', 'middle_east_africa', 'asia_pacific']))
      .max(5)
      .optional(),
    /** Seniority levels of the people to reach: `entry`, `senior`, `manager`, `director`, `vp`, `c_level`, `owner`. */
    seniorities: z
      .array(z.enum(['entry', 'senior', 'manager', 'director', 'vp', 'c_level', 'owner']))
      .max(7)
      .optional(),
    revenue_range: z.string().max(100).optional(),
  })
  // Any other attribute: a short text, a number, a flag, or a flat list of them. Nothing nests, so no
  // request can reach a depth that code walking it (fingerprints, JSON) would not survive.
  .catchall(
    z.union([z.string().max(300), z.number(), z.boolean(), z.null(), z.array(z.union([z.string().max(300), z.number(), z.boolean()])).max(50)]),
  )
  .openapi('CompanyCharacteristics');
export type CompanyCharacteristics = z.infer<typeof CompanyCharacteristics>;

const Phrase = z.string().min(1).max(300);
const Phrases = z.array(Phrase).max(20);

/** An ICP's generated content: every field create_icp may leave out. */
export const IcpDraft = z.object({
  name: z.string().min(1).max(200),
  description: z.string().min(1).max(4000),
  job_titles: Phrases,
  pain_points: Phrases,
  value_drivers: Phrases,
  industry_focus: Phrases,
  company_characteristics: CompanyCharacteristics,
});
export type IcpDraft = z.infer<typeof IcpDraft>;

/** What the research provider found about a prospect (research/profile.ts); null fields are unknown. */
export interface ProspectProfile {
  linkedin_url: string;
  full_name: string | null;
  headline: string | null;
  job_title: string | null;
  company: string | null;
  industry: string | null;
  location: string | null;
  summary: string | null;
  experience: Array<{ title: string | null; company: string | null; start: string | null; end: string | null }>;
  skills: string[];
  /** Which provider answered (`people-data-labs`, `url-only` when nothing could be looked up). */
  source: string;
}

/** The research step's result, as api-full-request returns it (spec: research_summary). */
export const ResearchSummary = z
  .object({
    recommended_focus: z.string().min(1).max(2000),
    prospect_insights: z.array(z.string().min(1).max(1000)).max(20),
    messaging_strategy: z.string().min(1).max(2000),
    product_alignment: z.string().min(1).max(2000),
    should_send_message: z.boolean(),
  })
  .openapi('ResearchSummary');
export type ResearchSummary = z.infer<typeof ResearchSummary>;

/** `template` of api-full-request: the message settings a caller may override. */
export const MessageTemplate = z
  .object({
    tone: z.enum(['professional', 'friendly', 'casual', 'direct']).optional(),
    length: z.enum(['short', 'medium', 'long']).optional(),
    message_type: z.enum(['connection_request', 'inmail', 'email', 'follow_up']).optional(),
    call_to_action: z.string().min(1).max(300).optional(),
    language: z
      .string()
      .regex(/^[a-z]{2}(-[A-Z]{2})?$/, 'must be a language tag such as en or en-GB')
      .optional(),
  })
  .strict()
  .openapi('MessageTemplate');
export type MessageTemplate = z.infer<typeof MessageTemplate>;

/** The most words a message of each `template.length` may have: a cap, not a target to fill. */
export const MESSAGE_WORD_LIMITS = { short: 60, medium: 120, long: 200 } as const;

/** LinkedIn refuses a connection request whose note is longer than 300 characters. */
export const CONNECTION_NOTE_MAX_CHARS = 300;

/** A template with every setting decided: what both engines write to, and what message_metadata reports. */
export interface MessageSettings {
  tone: NonNullable<MessageTemplate['tone']>;
  length: NonNullable<MessageTemplate['length']>;
  message_type: NonNullable<MessageTemplate['message_type']>;
  call_to_action: string | null;
  language: string;
  /** MESSAGE_WORD_LIMITS of `length`. */
  maxWords: number;
  /** CONNECTION_NOTE_MAX_CHARS for a connection request; other types have no platform cap below the schema's. */
  maxCharacters: number | null;
}

/**
 * The caller's template with the defaults filled in. A prospect is known only by a LinkedIn
 * profile URL, and the one message anyone can send to a stranger there is a connection request,
 * so that is the default type; professional, medium and English are the least surprising rest.
 */
export function messageSettings(template: MessageTemplate): MessageSettings {
  const length = template.length ?? 'medium';
  const messageType = template.message_type ?? 'connection_request';
  return {
    tone: template.tone ?? 'professional',
    length,
    message_type: messageType,
    call_to_action: template.call_to_action ?? null,
    language: template.language ?? 'en',
    maxWords: MESSAGE_WORD_LIMITS[length],
    maxCharacters: messageType === 'connection_request' ? CONNECTION_NOTE_MAX_CHARS : null,
  };
}

/** Words as message_metadata counts them: runs of non-space characters. */
export function countWords(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

/** Characters as message_metadata (and LinkedIn's note limit) counts them: code points, so an emoji is one. */
export function countCharacters(text: string): number {
  return [...text].length;
}

/** The sender: the connected user's professional profile as the connect link recorded it. */
export interface SenderProfile {
  name: string;
  title: string | null;
  company: string | null;
}

/** The message step's answer. Counts are computed by the service from `message`, never taken from a model. */
export const GeneratedMessage = z.object({
  message: z.string().min(1).max(8000),
});
export type GeneratedMessage = z.infer<typeof GeneratedMessage>;

/** An engine's answer with the engine's name (`builtin`, or `openai-compatible:<model>`). */
export interface EngineAnswer<T> {
  value: T;
  engine: string;
}

export interface AiEngine {
  /** The engine's name as stored with its results. */
  readonly name: string;
  /** Drafts every ICP field from the product; `given` are the caller's fields, context the draft must agree with. */
  draftIcp(input: { product: ProductFacts; given: Partial<IcpDraft> }): Promise<EngineAnswer<IcpDraft>>;
  /** Summarises what is known of the prospect against the product (skipped when the caller gives research). */
  summariseResearch(input: {
    profile: ProspectProfile;
    product: ProductFacts | null;
    additionalResearch: string | null;
  }): Promise<EngineAnswer<ResearchSummary>>;
  /** Writes the outreach message. */
  writeMessage(input: {
    profile: ProspectProfile;
    research: ResearchSummary | string;
    product: ProductFacts | null;
    template: MessageTemplate;
    sender: SenderProfile;
    additionalResearch: string | null;
  }): Promise<EngineAnswer<GeneratedMessage>>;
}

/**
 * The engine failed in a way a retry may cure (timeout, 5xx, 429, an answer that would not validate
 * after its repair attempt). Callers that run off the request path retry later; on the request path
 * it becomes a 502/503 for the caller, never a charge.
 */
export class AiEngineError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'AiEngineError';
  }
}

declare module '../kernel/context.ts' {
  interface CoreDeps {
    /** Drafts ICPs, summarises research, writes messages (ai/engine.ts): a configured LLM or the built-in rules. */
    ai: AiEngine;
  }
}
