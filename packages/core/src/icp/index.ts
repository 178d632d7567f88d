export { createIcp } from './create-icp.ts';
export { createProduct } from './create-product.ts';
export { generateIcps, MAX_GENERATION_ATTEMPTS } from './generate-icps.ts';
export { runIcpAction } from './run-icp-action.ts';
export { ICP_FIELD_NAMES, Icp, IcpActionRequest, IcpDeleted, Product } from './schemas.ts';
export { type ScoringIcp, scoreIdentification } from './score-identification.ts';
export { scoreIdentifications } from './score-identifications.ts';
export { workIcpQueue } from './work-icp-queue.ts';
