import { z } from '@hono/zod-openapi';
import { CompanyCharacteristics, IcpDraft } from '../ai/engine.ts';
import { AppError } from '../kernel/errors.ts';
import { describeValidationIssues, Timestamp, Uuid, whenGiven } from '../kernel/schemas.ts';

/**
 * The contracts of api-icp-action, written once: products and ICPs as the API shows them, and the
 * request of each action. The verbs beside this file take these inputs; the route documents them.
 */

const Phrase = z.string().min(1, 'must not be empty').max(300, 'must be at most 300 characters');
const Phrases = z.array(Phrase, whenGiven('must be an array of strings')).max(20, 'must have at most 20 entries');

// ---------------------------------------------------------------------------------------------
// Products
// ---------------------------------------------------------------------------------------------

const ProductName = z.string(whenGiven('must be a string')).min(1, 'must not be empty').max(200, 'must be at most 200 characters');
const ProductUrl = z
  .string(whenGiven('must be a string'))
  .max(2048, 'must be at most 2048 characters')
  // The products table's CHECK, so a bad URL is a 400 here and never a 500 there.
  .regex(/^https?:\/\/[^\s]+$/, 'must be an http(s) URL');
const ProductDescription = z.string(whenGiven('must be a string')).max(4000, 'must be at most 4000 characters');

/** What a product is made of; the fields create_product takes. */
export const ProductFields = z.object({
  name: ProductName,
  url: ProductUrl.optional(),
  description: ProductDescription.optional(),
  value_propositions: Phrases.optional(),
  target_customers: Phrases.optional(),
});
export type ProductFields = z.infer<typeof ProductFields>;

/** The fields update_product changes: only those given; null clears url or description. */
export const ProductChanges = z.object({
  name: ProductName.optional(),
  url: ProductUrl.nullable().optional(),
  description: ProductDescription.nullable().optional(),
  value_propositions: Phrases.optional(),
  target_customers: Phrases.optional(),
});
export type ProductChanges = z.infer<typeof ProductChanges>;

export const Product = z
  .object({
    id: z.string(),
    name: z.string(),
    url: z.string().nullable(),
    description: z.string().nullable(),
    value_propositions: z.array(z.string()),
    target_customers: z.array(z.string()),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('Product', { description: 'What the AI engine drafts an ICP from' });
export type Product = z.infer<typeof Product>;

// ---------------------------------------------------------------------------------------------
// ICPs
// ---------------------------------------------------------------------------------------------

/** The ICP fields a caller may give create_icp; each one left out is generated from the product. */
export const IcpFields = z.object({
  name: IcpDraft.shape.name.optional(),
  description: IcpDraft.shape.description.optional(),
  job_titles: Phrases.optional(),
  pain_points: Phrases.optional(),
  value_drivers: Phrases.optional(),
  industry_focus: Phrases.optional(),
  company_characteristics: CompanyCharacteristics.optional(),
});
export type IcpFields = z.infer<typeof IcpFields>;

/** The names of IcpFields: what generation fills when the caller left them out. */
export const ICP_FIELD_NAMES = Object.keys(IcpFields.shape) as Array<keyof IcpFields>;

export const QualifyThreshold = z
  .number(whenGiven('must be a whole number from 0 to 100'))
  .int('must be a whole number from 0 to 100')
  .min(0, 'must be a whole number from 0 to 100')
  .max(100, 'must be a whole number from 0 to 100');

export const WORKFLOW_STATUSES = ['generating', 'generated', 'active', 'paused', 'failed'] as const;
export const REVIEW_STATUSES = ['pending_review', 'approved', 'rejected'] as const;

/** The ICP as the API shows it (spec: ICP), plus what generation and scoring add; `sl_icp_json` writes it. */
export const Icp = z
  .object({
    id: z.string(),
    name: z.string().openapi({ description: 'Empty while generating, when the caller gave none' }),
    description: z.string().openapi({ description: 'AI-generated or user-provided; empty while generating, when the caller gave none' }),
    product_id: z.string(),
    job_titles: z.array(z.string()),
    pain_points: z.array(z.string()),
    value_drivers: z.array(z.string()),
    industry_focus: z.array(z.string()),
    company_characteristics: CompanyCharacteristics,
    workflow_status: z
      .enum(WORKFLOW_STATUSES)
      .openapi({ description: 'generating → generated | failed; generated → active ⇄ paused (the transitions table in docs/decisions/icp.md)' }),
    review_status: z.enum(REVIEW_STATUSES),
    qualify_threshold: z.number().int().min(0).max(100).openapi({ description: 'A score at or above it qualifies an identification' }),
    generated_by: z.string().nullable().openapi({
      description: 'The engine that wrote the generated fields (`builtin`, `openai-compatible:<model>`, `caller`); null until generated',
    }),
    failure_reason: z.string().nullable().openapi({ description: 'Why generation failed; null unless workflow_status is failed' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  })
  .openapi('ICP');
export type Icp = z.infer<typeof Icp>;

// ---------------------------------------------------------------------------------------------
// The actions
// ---------------------------------------------------------------------------------------------

/** Every action, in the order the document lists them. */
export const ICP_ACTIONS = [
  'create_icp',
  'list_icps',
  'approve_icp',
  'reject_icp',
  'activate_icp',
  'pause_icp',
  'regenerate_icp',
  'delete_icp',
  'create_product',
  'update_product',
  'list_products',
] as const;

const action = <A extends (typeof ICP_ACTIONS)[number]>(name: A) => z.literal(name);
const IcpId = z.object({ icp_id: Uuid });

/** What create_icp takes besides `action`: the product, any ICP fields, and the threshold. */
export const CreateIcpInput = IcpFields.extend({
  product_id: Uuid.openapi({ description: 'A product of the account (create_product)' }),
  qualify_threshold: QualifyThreshold.optional().openapi({ description: 'Default 70' }),
}).strict();
export type CreateIcpInput = z.infer<typeof CreateIcpInput>;

export const CreateIcpRequest = CreateIcpInput.extend({ action: action('create_icp') }).openapi('CreateIcpRequest');
export type CreateIcpRequest = z.infer<typeof CreateIcpRequest>;

const icpAction = <A extends (typeof ICP_ACTIONS)[number]>(name: A, description: string) =>
  IcpId.extend({ action: action(name) })
    .strict()
    .openapi({ description });

export const IcpActionRequest = z
  .discriminatedUnion(
    'action',
    [
      CreateIcpRequest,
      z.object({ action: action('list_icps') }).strict(),
      icpAction('approve_icp', 'Review: approve a generated ICP'),
      icpAction('reject_icp', 'Review: reject a generated ICP (an active one is paused first)'),
      icpAction('activate_icp', 'Start scoring identifications against an approved ICP'),
      icpAction('pause_icp', 'Stop scoring against an active ICP; its scores are hidden until it is active again'),
      icpAction('regenerate_icp', 'Generate a failed, or a generated and unapproved, ICP again'),
      icpAction('delete_icp', 'Delete an ICP and its scores (frees a place under the plan limit)'),
      ProductFields.extend({ action: action('create_product') }).strict(),
      ProductChanges.extend({ action: action('update_product'), product_id: Uuid }).strict(),
      z.object({ action: action('list_products') }).strict(),
    ],
    {
      error: (issue) => (issue.code === 'invalid_union' ? `must be one of ${ICP_ACTIONS.join(', ')}` : undefined),
    },
  )
  .openapi('IcpActionRequest');
export type IcpActionRequest = z.infer<typeof IcpActionRequest>;
export type IcpAction = IcpActionRequest['action'];

/** The review and activation actions, each one `sl_icp_action` call. */
export type IcpStateAction = 'approve_icp' | 'reject_icp' | 'activate_icp' | 'pause_icp' | 'regenerate_icp';

export const IcpDeleted = z.object({ icp_id: z.string(), deleted: z.literal(true) }).openapi('IcpDeleted');
export type IcpDeleted = z.infer<typeof IcpDeleted>;

/**
 * A verb's own check of its input, so every transport (the route, the operator CLI, a sweep) is
 * equally safe: what the schema refuses is a 400 naming the field.
 */
export function checkedInput<T extends z.ZodType>(schema: T, value: unknown): z.infer<T> {
  const result = schema.safeParse(value);
  if (!result.success) throw new AppError('invalid_request', describeValidationIssues(result.error.issues));
  return result.data;
}
