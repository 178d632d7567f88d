import { z } from '@hono/zod-openapi';
import { startAfterWork } from '../kernel/after-work.ts';
import type { VerbArgs } from '../kernel/context.ts';
import { sqlCall } from '../kernel/errors.ts';
import { Uuid, whenGiven } from '../kernel/schemas.ts';
import { ProspectUrl } from '../messaging/prospect-url.ts';
import { ConnectLinkToken, connectLinkTokenHash } from './create-connect-link.ts';

/**
 * Completions allowed per client address (an IPv6 client by its /64) per window: the token is the
 * endpoint's only credential. A person completes a link or two; twenty a minute leaves room for an
 * office behind one address and stops one client hammering the endpoint.
 */
export const CONNECT_LINK_COMPLETIONS = { limit: 20, windowSeconds: 60 } as const;

/** connected_users.linkedin_url's CHECK: a long slug of non-ASCII letters, percent-encoded, can exceed it. */
const MAX_STORED_PROFILE_URL = 300;

/** Optional free text: trimmed; blank is the same as left out. */
const optionalText = (max: number) =>
  z
    .string(whenGiven('must be a string'))
    .max(max, `must be at most ${max} characters`)
    .transform((s) => s.trim() || null)
    .optional();

export const CompleteConnectLinkInput = z
  .object({
    token: ConnectLinkToken,
    name: z
      .string(whenGiven('must be a string'))
      .trim()
      .min(1, 'must not be blank')
      .max(200, 'must be at most 200 characters')
      .openapi({ description: 'The user’s name, 1–200 characters' }),
    linkedin_url: ProspectUrl.refine((url) => url.length <= MAX_STORED_PROFILE_URL, {
      message: `is too long once canonical (at most ${MAX_STORED_PROFILE_URL} characters)`,
    }).openapi({
      type: 'string',
      description:
        'The user’s own personal profile, by the same rule as api-full-request’s prospect_url (https://[www.]linkedin.com/in/<slug>, optional trailing slash); stored canonical. The same profile connected again is the same user.',
    }),
    title: optionalText(300).openapi({ type: 'string', maxLength: 300, description: 'Job title, up to 300 characters' }),
    company: optionalText(300).openapi({ type: 'string', maxLength: 300, description: 'Company, up to 300 characters' }),
  })
  .strict()
  .openapi('CompleteConnectLinkRequest');
export type CompleteConnectLinkInput = z.output<typeof CompleteConnectLinkInput>;

/** What the person completing a link is told: enough to act as `x-user-id`, nothing about the account. */
export const ConnectedUser = z
  .object({
    user_id: Uuid.openapi({ description: 'The user’s id: the `x-user-id` the account’s API calls send for them' }),
    name: z.string(),
    linkedin_url: z.string().openapi({ description: 'Canonical: https://www.linkedin.com/in/<slug>' }),
    reconnected: z
      .boolean()
      .openapi({ description: 'The profile was connected to this account before and had been disconnected: the same user, connected again' }),
  })
  .openapi('ConnectedUser');
export type ConnectedUser = z.infer<typeof ConnectedUser>;

/**
 * Completes a connect link: records the user (or reconnects a disconnected profile, same user id)
 * and spends the link, in one transaction (sl_complete_connect_link, which also counts a `connect`
 * operation and emits `user.connected` to the account webhook). An unknown token is a 404, a used or
 * expired one a 410, a profile connected now a 409 (nobody may overwrite a connected sender). The account's id is returned to callers that already know the account (the
 * operator CLI); the public route leaves it out.
 */
export async function completeConnectLink({ ctx, input }: VerbArgs<CompleteConnectLinkInput>): Promise<ConnectedUser & { account_id: string }> {
  const hash = await connectLinkTokenHash(ctx, input.token);
  const [row] = await sqlCall(
    () => ctx.db<{ user_id: string; account_id: string; reconnected: boolean }>`
      select * from sl_complete_connect_link(${hash}, ${input.name}, ${input.linkedin_url}, ${input.title ?? null}, ${input.company ?? null})`,
  );
  if (!row) throw new Error('sl_complete_connect_link returned no row');
  const accountId = row.account_id;
  startAfterWork(ctx, 'webhook-delivery', { partnerAccountId: accountId });
  return { user_id: row.user_id, account_id: accountId, name: input.name, linkedin_url: input.linkedin_url, reconnected: row.reconnected };
}
