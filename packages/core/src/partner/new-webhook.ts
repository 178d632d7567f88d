import type { CoreDeps } from '../kernel/context.ts';
import { mintWebhookSecret } from '../kernel/crypto.ts';
import { badRequest } from '../kernel/errors.ts';
import { assertReachableWebhook } from '../kernel/net/webhook-destination.ts';

/**
 * The webhook of a child being created or adopted: the URL must be valid and reachable, the secret
 * is the caller's or minted, and only its sealed form is stored. A secret without a URL is a
 * client bug worth a 400 (the spec: "used only with webhook_url").
 */
export async function prepareNewWebhook(
  ctx: CoreDeps,
  webhookUrl: string | undefined,
  webhookSecret: string | undefined,
): Promise<{ url: string | null; secret: string | null; sealed: string | null }> {
  if (webhookSecret !== undefined && webhookUrl === undefined) {
    throw badRequest('webhook_secret is only used together with webhook_url');
  }
  if (webhookUrl === undefined) return { url: null, secret: null, sealed: null };
  const url = await assertReachableWebhook(webhookUrl, { allowPrivate: ctx.allowPrivateWebhooks }, ctx.webhooks);
  const secret = webhookSecret ?? mintWebhookSecret();
  return { url, secret, sealed: await ctx.keyring.seal(secret) };
}
