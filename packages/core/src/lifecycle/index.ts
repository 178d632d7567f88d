/** The data lifecycle: retention, personal data over time, erasure on request (docs/operating.md, "Data lifecycle"). */
export { ErasureInput, ErasureReport, erasePersonalData } from './erase-personal-data.ts';
export {
  DEFAULT_RETENTION,
  type RetentionEnv,
  RetentionEnvSchema,
  type RetentionSettings,
  retentionConflict,
  retentionSettings,
} from './settings.ts';
export { type DataLifecycleReport, monthsBefore, sweepDataLifecycle, TRACKER_PARTITION_WEEKS_AHEAD } from './sweep-data-lifecycle.ts';
