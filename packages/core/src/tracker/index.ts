export { type AggregationReport, aggregateTrackerEvents } from './aggregate-events.ts';
export { appendTrackerEvent, type TrackerEventRow } from './append-events.ts';
export { CollectEventInput, collectEvent } from './collect-event.ts';
export { csvField, EXPORT_COLUMNS, ExportVisitorsInput, exportVisitors } from './export-visitors.ts';
export { type IdentificationReport, identifyVisitors } from './identify-visitors.ts';
export { Identification, identificationsPageBody, ListIdentificationsInput, listIdentifications } from './list-identifications.ts';
export { ListVisitorsInput, listVisitors, VisitorsPage, visitorsPageBody } from './list-visitors.ts';
export { MarkVisitorInput, markVisitor, VisitorMarks } from './mark-visitor.ts';
export { COLLECT_PATH, renderTrackerScript, serveTrackerScript, TRACKER_CACHE_CONTROL, TrackerScriptFile } from './serve-script.ts';
export {
  CreateTrafficRuleInput,
  createTrafficRule,
  DeleteTrafficRuleInput,
  deleteTrafficRule,
  ListTrafficRulesInput,
  listTrafficRules,
  MAX_TRAFFIC_RULES,
  TrafficRule,
  TrafficRuleScopes,
} from './traffic-rules.ts';
export { VisitorActivity, VisitorActivityInput, visitorActivity } from './visitor-activity.ts';
export { VisitorStats, VisitorStatsInput, visitorStats } from './visitor-stats.ts';
export { workTrackerQueue } from './work-tracker-queue.ts';
