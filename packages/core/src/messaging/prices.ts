/**
 * What api-full-request costs, in credits, per operation: each is its own debit in the account's
 * ledger (credit_transactions.operation), taken in the same transaction that stores the message.
 * Research is charged whenever the research step runs — the caller gave no `research_summary` —
 * whatever the provider found; a request that brings its own research pays for the message alone.
 * (ip-to-company's 5 credits per business match is the spec's yardstick: a research lookup plus its
 * summary costs a little less than an identification; a message, less than its research.)
 */
export const MESSAGE_PRICES = { research: 3, message: 2 } as const;

/** The credits a request needs: held before any provider or engine call (credit-holds.ts), debited when the message is stored. */
export function fullRequestCost(opts: { researchGiven: boolean }): { research: number; message: number; total: number } {
  const research = opts.researchGiven ? 0 : MESSAGE_PRICES.research;
  return { research, message: MESSAGE_PRICES.message, total: research + MESSAGE_PRICES.message };
}
