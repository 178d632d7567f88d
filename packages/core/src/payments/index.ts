export type { ChargeRequest, ChargeResult, PaymentProcessor } from './processor.ts';
