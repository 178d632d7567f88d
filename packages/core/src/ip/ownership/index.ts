export { cleanCompanyName } from './clean-company-name.ts';
export { OwnerStats } from './owner-stats.ts';
export { type OwnershipOptions, type OwnershipRules, OwnershipSource } from './ownership-source.ts';
