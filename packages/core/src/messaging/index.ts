export { CALLER_MESSAGING_STRATEGY, researchFromCallerText } from './caller-research.ts';
export { MESSAGE_PRICES } from './prices.ts';
export { CANONICAL_PROFILE_PREFIX, checkProspectUrl, ProspectUrl } from './prospect-url.ts';
export { FULL_REQUEST_OPERATION, FULL_REQUEST_TIMINGS, requestFullMessage } from './request-full-message.ts';
export { FullRequestInput, MessageMetadata, MessageProcessing, MessageResult } from './schemas.ts';
