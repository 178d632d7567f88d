export { type AggregationReport, aggregateTrackerEvents } from './aggregate-events.ts';
export { appendTrackerEvent, type TrackerEventRow } from './append-events.ts';
export { CollectEventInput, collectEvent } from './collect-event.ts';
export { type IdentificationReport, identifyVisitors } from './identify-visitors.ts';
export { Identification, ListIdentificationsInput, listIdentifications } from './list-identifications.ts';
export { ListVisitorsInput, listVisitors, VisitorsPage, visitorsPageBody } from './list-visitors.ts';
export { COLLECT_PATH, renderTrackerScript, serveTrackerScript, TRACKER_CACHE_CONTROL, TrackerScriptFile } from './serve-script.ts';
export { VisitorStats, VisitorStatsInput, visitorStats } from './visitor-stats.ts';
export { workTrackerQueue } from './work-tracker-queue.ts';
