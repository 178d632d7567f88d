import type Stripe from 'stripe';
import type { ChargeResult, PaymentProcessor } from './processor.ts';

/**
 * Stripe adapter: an off-session PaymentIntent, confirmed at once, with Stripe's idempotency key.
 * It talks through the global fetch (Stripe's fetch HTTP client), so one code path runs on Node and
 * Deno and tests can answer for Stripe with msw.
 */
export function createStripeProcessor(secretKey: string): PaymentProcessor {
  // The SDK is large; it loads with the first charge, so a deployment without Stripe never holds it.
  let sdk: Promise<{ Stripe: typeof Stripe; stripe: Stripe }> | undefined;
  const load = () =>
    (sdk ??= import('stripe').then(({ default: Sdk }) => ({
      Stripe: Sdk,
      stripe: new Sdk(secretKey, { httpClient: Sdk.createFetchHttpClient(), maxNetworkRetries: 2, timeout: 20_000 }),
    })));
  return {
    name: 'stripe',
    async charge(req): Promise<ChargeResult> {
      const { Stripe, stripe } = await load();
      try {
        const intent = await stripe.paymentIntents.create(
          {
            amount: req.amountPence,
            currency: req.currency,
            payment_method: req.paymentMethodId,
            ...(req.customerId ? { customer: req.customerId } : {}),
            off_session: true,
            confirm: true,
            description: req.description,
            metadata: req.metadata,
          },
          { idempotencyKey: req.idempotencyKey },
        );
        if (intent.status === 'succeeded') return { status: 'succeeded', paymentRef: intent.id };
        // requires_action and friends: an off-session charge that needs the customer counts as declined.
        return { status: 'declined', paymentRef: intent.id, code: intent.status, message: `payment intent is ${intent.status}` };
      } catch (err) {
        if (err instanceof Stripe.errors.StripeCardError) {
          const raw = err.raw as { payment_intent?: { id?: string } } | undefined;
          return {
            status: 'declined',
            paymentRef: raw?.payment_intent?.id ?? null,
            code: err.decline_code ?? err.code ?? 'card_error',
            message: err.message,
          };
        }
        throw err;
      }
    },
  };
}
