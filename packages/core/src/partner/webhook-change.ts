import type { PartnerCtx } from '../kernel/context.ts';
import { mintWebhookSecret } from '../kernel/crypto.ts';
import { badRequest } from '../kernel/errors.ts';
import { assertReachableWebhook } from '../kernel/net/webhook-destination.ts';

/**
 * Resolves the webhook part of an update (a child's or the partner's own): which URL action to take
 * and the candidate secret. `undefined` = omitted, `null` = explicit null (spec: url null clears;
 * secret null mints fresh). The URL is probed before anything is written.
 */
export async function planWebhookChange(ctx: PartnerCtx, url: string | null | undefined, secret: string | null | undefined, field = 'webhook_url') {
  if (url === null && typeof secret === 'string') {
    throw badRequest(`webhook_secret cannot be set while ${field} is being cleared`);
  }
  const urlAction = url === undefined ? 'keep' : url === null ? 'clear' : 'set';
  const normalised =
    typeof url === 'string' ? await assertReachableWebhook(url, { allowPrivate: ctx.allowPrivateWebhooks }, ctx.webhooks, field) : null;
  // An explicit secret (string) or explicit null replaces; an omitted one keeps the existing secret.
  const secretAction = secret === undefined ? 'keep_or_mint' : 'replace';
  const minted = typeof secret === 'string' ? null : mintWebhookSecret();
  const candidate = typeof secret === 'string' ? secret : (minted as string);
  const needsCandidate = urlAction !== 'clear' && (urlAction === 'set' || secret !== undefined);
  return {
    urlAction,
    url: normalised,
    secretAction: urlAction === 'keep' && secret === undefined ? 'none' : secretAction,
    sealed: needsCandidate ? await ctx.keyring.seal(candidate) : null,
    candidate,
    minted: minted !== null,
  };
}
