import { z } from '@hono/zod-openapi';
import type { PartnerCtx, VerbArgs } from '../kernel/context.ts';
import { badRequest, sqlCall } from '../kernel/errors.ts';
import { WebhookSecret, WebhookUrl } from '../kernel/schemas.ts';
import { planWebhookChange } from './webhook-change.ts';

export const SetPartnerWebhookInput = z
  .object({
    url: WebhookUrl.nullable().optional().openapi({ description: 'Destination; null disables webhooks and clears URL and secret' }),
    secret: WebhookSecret.nullable().optional().openapi({
      description: 'Omitted keeps the existing secret (minted when none exists); explicit null mints a fresh one',
    }),
  })
  .strict()
  .openapi('SetWebhookRequest');
export type SetPartnerWebhookInput = z.infer<typeof SetPartnerWebhookInput>;

export const PartnerWebhook = z.object({
  partner_webhook_url: z.string().nullable(),
  partner_webhook_secret: z.string().optional().openapi({ description: 'Returned once, only when newly minted' }),
  secret_unchanged: z.boolean(),
});
export type PartnerWebhook = z.infer<typeof PartnerWebhook>;

/** partner-set-webhook: the partner-level destination for child.* events. */
export async function setPartnerWebhook({ ctx, input }: VerbArgs<SetPartnerWebhookInput, PartnerCtx>): Promise<PartnerWebhook> {
  if (input.url === undefined && input.secret === undefined) {
    throw badRequest('give url, secret, or both');
  }
  const hook = await planWebhookChange(ctx, input.url, input.secret, 'url');
  const secretAction = hook.secretAction === 'none' ? 'keep_or_mint' : hook.secretAction;
  const sealed = hook.sealed ?? (hook.urlAction === 'clear' ? null : await ctx.keyring.seal(hook.candidate));
  const [row] = await sqlCall(
    () => ctx.db<{ webhook_url: string | null; secret_replaced: boolean }>`
      select * from sl_set_partner_webhook(${ctx.caller.accountId}, ${hook.urlAction}, ${hook.url}, ${secretAction}, ${sealed})`,
  );
  if (!row) throw new Error('sl_set_partner_webhook returned no row');
  const result: PartnerWebhook = {
    partner_webhook_url: row.webhook_url,
    secret_unchanged: row.webhook_url !== null && !row.secret_replaced,
  };
  if (row.secret_replaced && hook.minted) result.partner_webhook_secret = hook.candidate;
  return result;
}
