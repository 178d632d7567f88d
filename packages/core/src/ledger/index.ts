export { type ConsumeOutcome, type ConsumeResult, consumeIdentification } from './consume-identification.ts';
export { creditTopup } from './credit-topup.ts';
export { KeyUsage, readKeyUsage } from './read-key-usage.ts';
export { rollOverDuePeriods } from './roll-over-due-periods.ts';
