import { CompleteConnectLinkInput, completeConnectLink } from '../account/complete-connect-link.ts';
import { createConnectLink } from '../account/create-connect-link.ts';
import type { VerbArgs } from '../kernel/context.ts';
import { randomBase62 } from '../kernel/crypto.ts';
import { badRequest } from '../kernel/errors.ts';

const UserDetails = CompleteConnectLinkInput.omit({ token: true });
const FLAG_OF: Record<string, string> = { name: '--name', linkedin_url: '--linkedin-url', title: '--title', company: '--company' };

/**
 * Operator (and tests): connects a user to an account in one go — a connect link made and completed
 * at once, through the same verbs and checks as the link's page, so the user is exactly what a real
 * completion records. Left out, the profile is a fresh test profile, so each call is a new user.
 */
export async function connectUser({
  ctx,
  input,
}: VerbArgs<{ accountId: string; name?: string; linkedinUrl?: string; title?: string; company?: string }>) {
  // Checked before the link exists, so a refused command leaves no open link behind.
  const details = UserDetails.safeParse({
    name: input.name ?? 'Test User',
    linkedin_url: input.linkedinUrl ?? `https://www.linkedin.com/in/test-user-${randomBase62(12).toLowerCase()}`,
    title: input.title,
    company: input.company,
  });
  if (!details.success) {
    const issue = details.error.issues[0];
    const field = String(issue?.path[0] ?? '');
    throw badRequest(`${FLAG_OF[field] ?? field} ${issue?.message ?? 'is not valid'}`);
  }
  const link = await createConnectLink({ ctx, input: { accountId: input.accountId } });
  const user = await completeConnectLink({ ctx, input: { ...details.data, token: link.token } });
  return { ...user, link_id: link.link_id };
}
