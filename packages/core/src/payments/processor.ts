/**
 * The payment port used by auto-reload: one off-session charge of a saved card. Adapters: Stripe
 * (payments/stripe.ts) and the built-in processor for self-hosting without a card processor.
 */
export interface ChargeRequest {
  amountPence: number;
  currency: 'gbp';
  paymentMethodId: string;
  customerId: string | null;
  /** Stable per reload attempt, so a retried request never charges twice. */
  idempotencyKey: string;
  description: string;
  metadata: Record<string, string>;
}

export type ChargeResult =
  | { status: 'succeeded'; paymentRef: string }
  | { status: 'declined'; paymentRef: string | null; code: string; message: string };

export interface PaymentProcessor {
  readonly name: string;
  charge(req: ChargeRequest): Promise<ChargeResult>;
}

/**
 * Self-hosting without a card processor: every charge is approved and recorded with a reference
 * derived from its idempotency key; the operator bills out of band (e.g. from the top-up records).
 * A payment method id starting with `pm_decline` is declined, so the decline path can be exercised.
 */
export const builtinProcessor: PaymentProcessor = {
  name: 'builtin',
  async charge(req) {
    if (req.paymentMethodId.startsWith('pm_decline')) {
      return { status: 'declined', paymentRef: null, code: 'card_declined', message: 'declined by the built-in processor' };
    }
    return { status: 'succeeded', paymentRef: `builtin_${req.idempotencyKey}` };
  },
};

declare module '../kernel/context.ts' {
  interface CoreDeps {
    /** Charges auto-reloads. */
    payments: PaymentProcessor;
  }
}
