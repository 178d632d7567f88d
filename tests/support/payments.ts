import type { ChargeRequest, ChargeResult, PaymentProcessor } from '@sightline/core';

/**
 * A payment processor for tests that counts what it is asked to charge. Each charge answers with
 * `outcome` (succeed, decline, or fail as a network error would), after `hold` resolves when one is
 * set, so a test can keep a charge in flight while it does something else. References are unique
 * per charge, as a real processor's are.
 */
export function countingProcessor() {
  const charges: ChargeRequest[] = [];
  let inFlight = 0;
  let peak = 0;
  let refs = 0;
  const state: { outcome: 'succeed' | 'decline' | 'fail'; hold: Promise<void> | null } = { outcome: 'succeed', hold: null };
  const processor: PaymentProcessor = {
    name: 'counting',
    async charge(req): Promise<ChargeResult> {
      charges.push(req);
      inFlight++;
      peak = Math.max(peak, inFlight);
      try {
        if (state.hold) await state.hold;
        if (state.outcome === 'fail') throw new Error('connect ECONNRESET');
        if (state.outcome === 'decline') return { status: 'declined', paymentRef: null, code: 'card_declined', message: 'Your card was declined.' };
        return { status: 'succeeded', paymentRef: `pay_test_${++refs}_${req.idempotencyKey}` };
      } finally {
        inFlight--;
      }
    },
  };
  return {
    processor,
    charges,
    state,
    /** The most charges that were in progress at once. */
    peak: () => peak,
    /** Holds every charge until the returned function is called. */
    holdCharges(): () => void {
      let release = () => {};
      state.hold = new Promise<void>((resolve) => {
        release = resolve;
      });
      return () => {
        state.hold = null;
        release();
      };
    },
    reset() {
      charges.length = 0;
      peak = 0;
      state.outcome = 'succeed';
      state.hold = null;
    },
  };
}
