// The account's integrations and their deliveries (the endpoints' verbs).
export { CreatedIntegration, CreateIntegrationInput, createIntegration } from './create-integration.ts';
export { crmNoteHtml } from './crm-note.ts';
export { DeletedIntegration, DeleteIntegrationInput, deleteIntegration } from './delete-integration.ts';
export { digestCompanies } from './digest-companies.ts';
export { INTEGRATION_KINDS, Integration, SIGNAL_KINDS } from './integration-schemas.ts';
export { IntegrationDeliveries, ListIntegrationDeliveriesInput, listIntegrationDeliveries } from './list-integration-deliveries.ts';
export { IntegrationList, listIntegrations } from './list-integrations.ts';
export { postToChatWebhook } from './post-to-chat-webhook.ts';
export { HUBSPOT_BASE_URL, HUBSPOT_NOTE_TO_COMPANY, pushToHubSpot } from './push-to-hubspot.ts';
export { PIPEDRIVE_BASE_URL, type PipedriveDeps, pushToPipedrive } from './push-to-pipedrive.ts';
export { ReplayedDelivery, ReplayIntegrationDeliveryInput, replayIntegrationDelivery } from './replay-integration-delivery.ts';
export type { SignalKind, SignalMessage } from './signal-message.ts';
export { escapeSlack, SLACK_DIGEST_MAX_COMPANIES, type SlackBlock, type SlackMessageBody, slackDigest, slackMessage } from './slack-message.ts';
export {
  ADAPTIVE_CARD_CONTENT_TYPE,
  type AdaptiveCard,
  type AdaptiveElement,
  TEAMS_DIGEST_MAX_COMPANIES,
  type TeamsMessageBody,
  teamsDigest,
  teamsMessage,
} from './teams-message.ts';
export { UpdatedIntegration, UpdateIntegrationInput, updateIntegration } from './update-integration.ts';
export { type CrmDeps, type DeliveryOutcome, parseRetryAfter, type Send, type VendorDeps, type VendorResponse } from './vendor-http.ts';
