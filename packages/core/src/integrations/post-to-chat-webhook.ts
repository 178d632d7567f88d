/**
 * Posts a Slack or Teams body to the destination's webhook URL and reads the answer.
 *
 * Slack incoming webhooks (https://docs.slack.dev/messaging/sending-messages-using-incoming-webhooks,
 * "Handling errors"): 200 with the body `ok` on success; otherwise a status and a short error string:
 * 400 `invalid_payload` / `user_not_found`, 403 `action_prohibited` / `invalid_token`,
 * 404 `channel_not_found` / `no_service` (the webhook was removed), 410 `channel_is_archived`,
 * 429 with `Retry-After` (rate limited), 500 `rollup_error`.
 * Teams Workflows ("When a Teams webhook request is received"): 202 Accepted (the flow was queued),
 * or 200; 4xx when the flow refuses the request (a bad or expired signature, a deleted or turned-off
 * flow, a body the trigger rejects, 413 too large), 429 (throttled, with `Retry-After`), 5xx.
 *
 * So one reading serves both: 2xx delivered; 408 and 429 retryable (after `Retry-After` when given);
 * any other 4xx permanent (the channel, the hook or the body must change first); 5xx and no answer
 * at all retryable. The transport follows no redirect, so a 3xx is permanent too. The URL's path and
 * query are the secret (Slack's `/services/T…/B…/…`, Teams' `sig=`): no error text ever contains them.
 */
import { callVendor, type DeliveryOutcome, failureOf, isAnswer, redact, type VendorDeps } from './vendor-http.ts';

/** The secret parts of a webhook URL: the whole URL, its path, each longer path segment and each query value. */
function urlSecrets(url: string): string[] {
  try {
    const u = new URL(url);
    const segments = u.pathname.split('/').filter((s) => s.length >= 8);
    const values = [...u.searchParams.values()].filter((v) => v.length >= 4);
    return [url, u.href, `${u.pathname}${u.search}`, u.search, ...segments, ...segments.map(safeDecode), ...values].filter((s) => s.length >= 4);
  } catch {
    return [url];
  }
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** The destination, named by its host only ("hooks.slack.com"). */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the webhook';
  }
}

/**
 * Posts `body` (a slackMessage/slackDigest or teamsMessage/teamsDigest result) as JSON and returns
 * the outcome; never throws for an answer or a network failure.
 */
export async function postToChatWebhook(deps: VendorDeps, url: string, body: unknown): Promise<DeliveryOutcome> {
  const secrets = urlSecrets(url);
  const vendor = hostOf(url);
  const answer = await callVendor(
    deps.send,
    vendor,
    url,
    { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) },
    secrets,
    deps.timeoutMs,
  );
  if (!isAnswer(answer)) return answer;
  if (answer.status >= 200 && answer.status < 300) return { ok: true };
  if (answer.status >= 300 && answer.status < 400) {
    return {
      ok: false,
      retryable: false,
      status: answer.status,
      error: redact(`${vendor} answered HTTP ${answer.status} (a redirect, not followed)`, secrets),
    };
  }
  return failureOf(vendor, answer, secrets, (deps.now ?? Date.now)());
}
