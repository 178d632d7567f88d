export type { ProfileResearch } from './profile.ts';
export { urlOnlyResearch } from './url-only.ts';
