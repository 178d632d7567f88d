import { z } from '@hono/zod-openapi';
import { MessageTemplate, ResearchSummary } from '../ai/engine.ts';
import { AppError } from '../kernel/errors.ts';
import { describeValidationIssues, Uuid, whenGiven } from '../kernel/schemas.ts';
import { ProspectUrl } from './prospect-url.ts';

/**
 * The contracts of api-full-request, written once: the request (spec table), the message result
 * (spec: Message result), the 202 while the work runs, and the 402 before it starts. The verb beside
 * this file takes and answers these; the route documents them.
 */

export const MAX_ADDITIONAL_RESEARCH_CHARS = 4000;
export const MAX_RESEARCH_SUMMARY_CHARS = 20_000;

const notBlank = (s: string) => s.trim().length > 0;

export const FullRequestInput = z
  .object({
    prospect_url: ProspectUrl,
    product_id: Uuid.optional().openapi({ description: 'A product of the caller’s account to reference in the message' }),
    additional_research: z
      .string(whenGiven('must be a string'))
      .max(MAX_ADDITIONAL_RESEARCH_CHARS, `must be at most ${MAX_ADDITIONAL_RESEARCH_CHARS} characters`)
      .optional()
      .openapi({ description: 'Extra context for the research and the message' }),
    template: MessageTemplate.optional(),
    research_summary: z
      .string(whenGiven('must be a string'))
      .max(MAX_RESEARCH_SUMMARY_CHARS, `must be at most ${MAX_RESEARCH_SUMMARY_CHARS} characters`)
      .refine(notBlank, 'must not be blank (leave it out to have the research done)')
      .optional()
      .openapi({
        description:
          'Pre-generated research: the research step (and its charge) is skipped and the message is written from this text. ' +
          'The response’s research_summary is built from it without an engine call.',
      }),
  })
  .strict()
  .openapi('FullRequestRequest');
/** The request as the verb takes it: checked, prospect_url canonical. */
export type FullRequestInput = z.output<typeof FullRequestInput>;

export const MessageType = z.enum(['connection_request', 'inmail', 'email', 'follow_up']);

export const MessageMetadata = z
  .object({
    message_type: MessageType.openapi({ description: '`template.message_type`, `connection_request` when not given' }),
    word_count: z.number().int().min(0).openapi({ description: 'Maximal runs of non-whitespace characters in generated_message' }),
    character_count: z
      .number()
      .int()
      .min(0)
      .openapi({ description: 'Unicode code points in generated_message (an emoji or an accented letter is one)' }),
  })
  .openapi('MessageMetadata');

/** The message result (spec), without the success envelope the route adds. */
export const MessageResult = z.object({
  status: z.literal('completed'),
  message_id: z.guid().openapi({ format: 'uuid' }),
  generated_message: z.string(),
  research_summary: ResearchSummary,
  message_metadata: MessageMetadata,
  credits_charged: z.number().int().min(0).openapi({ description: 'Credits this request debited: research (unless given) plus message' }),
  generated_by: z.string().openapi({ description: 'The AI engine that wrote the message (`builtin`, `openai-compatible:<model>`)' }),
});
export type MessageResult = z.infer<typeof MessageResult>;

/** HTTP 202: the work is under way; the same request with the same key answers its result. */
export const MessageProcessing = z
  .object({
    success: z.literal(true),
    status: z.literal('processing'),
    message: z.string(),
  })
  .openapi('MessageProcessing');
export type MessageProcessing = z.infer<typeof MessageProcessing>;

/**
 * The verb's own check of its input, so every transport (the route, a CLI, a test) is equally
 * safe: what the schema refuses is a 400 naming the field and the rule.
 */
export function checkedFullRequest(value: unknown): FullRequestInput {
  const result = FullRequestInput.safeParse(value);
  if (!result.success) throw new AppError('invalid_request', describeValidationIssues(result.error.issues));
  return result.data;
}
