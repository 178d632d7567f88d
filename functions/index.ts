import type { FunctionDefinition } from '@sightline/core';
import { apiAccountStatus } from './api-account-status/route.ts';
import { apiCompleteConnectLink } from './api-complete-connect-link/route.ts';
import { apiCreateConnectLink } from './api-create-connect-link/route.ts';
import { apiErasePersonalData } from './api-erase-personal-data/route.ts';
import { apiFullRequest } from './api-full-request/route.ts';
import { apiIcpAction } from './api-icp-action/route.ts';
import { apiUpdateSettings } from './api-update-settings/route.ts';
import { apiUsageSummary } from './api-usage-summary/route.ts';
import { collect } from './collect/route.ts';
import { connect } from './connect/route.ts';
import { consoleBrand } from './console-brand/route.ts';
import { identificationList } from './identification-list/route.ts';
import { integrationCreateFunction } from './integration-create/route.ts';
import { integrationDeleteFunction } from './integration-delete/route.ts';
import { integrationDeliveriesFunction } from './integration-deliveries/route.ts';
import { integrationDeliveryReplayFunction } from './integration-delivery-replay/route.ts';
import { integrationUpdateFunction } from './integration-update/route.ts';
import { integrationsFunction } from './integrations/route.ts';
import { ipToBestFit } from './ip-to-best-fit/route.ts';
import { ipToCompany } from './ip-to-company/route.ts';
import { keyUsage } from './key-usage/route.ts';
import { listVisitorsFunction } from './list-visitors/route.ts';
import { partnerAdoptExistingKey } from './partner-adopt-existing-key/route.ts';
import { partnerCreateChildKey } from './partner-create-child-key/route.ts';
import { partnerInstallCheck } from './partner-install-check/route.ts';
import { partnerListChildren } from './partner-list-children/route.ts';
import { partnerListEvents } from './partner-list-events/route.ts';
import { partnerPoolState } from './partner-pool-state/route.ts';
import { partnerReleaseChild } from './partner-release-child/route.ts';
import { partnerReplayEvent } from './partner-replay-event/route.ts';
import { partnerRotateChildKey } from './partner-rotate-child-key/route.ts';
import { partnerSetBrand } from './partner-set-brand/route.ts';
import { partnerSetWebhook } from './partner-set-webhook/route.ts';
import { partnerTransferTopup } from './partner-transfer-topup/route.ts';
import { partnerUpdateChild } from './partner-update-child/route.ts';
import { sweepDataLifecycle } from './sweep-data-lifecycle/route.ts';
import { sweepIcpWork } from './sweep-icp-work/route.ts';
import { sweepPeriodRollover } from './sweep-period-rollover/route.ts';
import { sweepTrackerEvents } from './sweep-tracker-events/route.ts';
import { sweepWebhookDeliveriesFunction } from './sweep-webhook-deliveries/route.ts';
import { t } from './t/route.ts';
import { trafficRuleCreate } from './traffic-rule-create/route.ts';
import { trafficRuleDelete } from './traffic-rule-delete/route.ts';
import { trafficRules } from './traffic-rules/route.ts';
import { visitorActivityFunction } from './visitor-activity/route.ts';
import { visitorMark } from './visitor-mark/route.ts';
import { visitorStatsFunction } from './visitor-stats/route.ts';
import { visitorsExport } from './visitors-export/route.ts';

/**
 * Every function this build serves: the documented endpoints, then the scheduled sweeps (which the
 * Node host also runs on its own timer; mounted, they answer only the sweep token). The Node host
 * mounts all of them; each is also its own Supabase Edge Function.
 */
export const allFunctions: FunctionDefinition[] = [
  partnerCreateChildKey,
  partnerListChildren,
  partnerPoolState,
  partnerUpdateChild,
  partnerAdoptExistingKey,
  partnerRotateChildKey,
  partnerTransferTopup,
  partnerReleaseChild,
  partnerSetWebhook,
  partnerListEvents,
  partnerReplayEvent,
  partnerSetBrand,
  partnerInstallCheck,
  ipToCompany,
  ipToBestFit,
  listVisitorsFunction,
  keyUsage,
  consoleBrand,
  visitorStatsFunction,
  visitorActivityFunction,
  visitorMark,
  visitorsExport,
  identificationList,
  trafficRules,
  trafficRuleCreate,
  trafficRuleDelete,
  integrationsFunction,
  integrationCreateFunction,
  integrationUpdateFunction,
  integrationDeleteFunction,
  integrationDeliveriesFunction,
  integrationDeliveryReplayFunction,
  apiIcpAction,
  apiFullRequest,
  apiCreateConnectLink,
  apiCompleteConnectLink,
  connect,
  apiAccountStatus,
  apiUsageSummary,
  apiUpdateSettings,
  apiErasePersonalData,
  collect,
  t,
  sweepPeriodRollover,
  sweepWebhookDeliveriesFunction,
  sweepTrackerEvents,
  sweepIcpWork,
  sweepDataLifecycle,
];
