import { z } from '@hono/zod-openapi';
import type { CoreDeps, VerbArgs } from '../kernel/context.ts';
import { randomBase62 } from '../kernel/crypto.ts';
import { sqlCall } from '../kernel/errors.ts';
import { Timestamp, Uuid } from '../kernel/schemas.ts';

/** How long a connect link can be completed: a week, long enough to reach someone by email. */
export const CONNECT_LINK_TTL_DAYS = 7;

const TOKEN_PREFIX = 'slc_';
/** 43 base62 characters: about 256 bits, so a token cannot be guessed, only handed over. */
const TOKEN_RANDOM_CHARS = 43;

/** A connect-link token as minted here; anything else is refused before any lookup. */
export const ConnectLinkToken = z
  .string()
  .regex(
    new RegExp(`^${TOKEN_PREFIX}[0-9A-Za-z]{${TOKEN_RANDOM_CHARS}}$`),
    `must be a connect-link token (${TOKEN_PREFIX} and ${TOKEN_RANDOM_CHARS} letters or digits)`,
  )
  .openapi({
    description: 'The token of a connect link, as api-create-connect-link returned it',
    example: `${TOKEN_PREFIX}${'x'.repeat(TOKEN_RANDOM_CHARS)}`,
  });

export const ConnectLink = z
  .object({
    link_id: Uuid,
    token: z.string().openapi({ description: 'Shown once: only its HMAC is kept. Whoever holds it can connect one user to the account.' }),
    url: z.string().nullable().openapi({
      description:
        'The link’s page at the configured public address (the token in its fragment, so it never reaches a server log); null when no public address is configured (PUBLIC_BASE_URL unset, or the operator CLI without --page-url)',
    }),
    expires_at: Timestamp.openapi({ description: `When the link stops working: ${CONNECT_LINK_TTL_DAYS} days after it was made` }),
  })
  .openapi('ConnectLink');
export type ConnectLink = z.infer<typeof ConnectLink>;

/**
 * The connect page's address: the `connect` function beside the others at the configured public
 * address (PUBLIC_BASE_URL). Undefined when none is configured — never guessed from a request, whose
 * Host header is the client's to write.
 */
export const connectPageUrl = (ctx: Pick<CoreDeps, 'publicBaseUrl'>): string | undefined =>
  ctx.publicBaseUrl ? `${ctx.publicBaseUrl}/connect` : undefined;

/** The token's stored form: an HMAC under the server pepper, as for API keys (crypto.ts). */
export const connectLinkTokenHash = (ctx: Pick<CoreDeps, 'keyring'>, token: string) => ctx.keyring.hashApiKey(token);

/**
 * A one-time link that connects a user to `accountId` (spec rule 2): the token is returned once
 * and only its HMAC is stored; it works for CONNECT_LINK_TTL_DAYS and for one completion. An account
 * has at most 100 links open at once (409 beyond: sl_max_open_connect_links). `pageUrl` is the
 * connect page's address: the HTTP route's comes from configuration (connectPageUrl), the CLI's from --page-url.
 */
export async function createConnectLink({ ctx, input }: VerbArgs<{ accountId: string; pageUrl?: string }>): Promise<ConnectLink> {
  const token = `${TOKEN_PREFIX}${randomBase62(TOKEN_RANDOM_CHARS)}`;
  const hash = await connectLinkTokenHash(ctx, token);
  const [row] = await sqlCall(
    () => ctx.db<{ link_id: string; expires_at: string }>`
      select * from sl_create_connect_link(${input.accountId}, ${hash}, ${`${CONNECT_LINK_TTL_DAYS} days`}::interval)`,
  );
  if (!row) throw new Error('sl_create_connect_link returned no row');
  return {
    link_id: row.link_id,
    token,
    url: input.pageUrl ? `${input.pageUrl}#token=${token}` : null,
    expires_at: row.expires_at,
  };
}
