-- Integrations: where an account's signals go beyond its webhooks — a Slack or Microsoft Teams
-- channel (an alert) or a HubSpot or Pipedrive account (a CRM push). Each delivery is an event in
-- the webhook outbox (`events`, destination 'integration'), written in the transaction of the signal
-- that caused it and sent by the same claim, lease, retry schedule, per-destination retry cap and
-- SSRF-guarded transport as every webhook; it is listed and replayed like them.
--
-- Lock order: an integrations row is locked only by its own changes and by a delivery's record
-- (after the events rows it records, in id order), never while an account, a key or a ledger row is
-- held by the same statement.
create table integrations (
  id              uuid primary key default gen_random_uuid(),
  -- The customer account whose visitors it reports: a child's own account, or a direct account.
  account_id      uuid not null references accounts (id) on delete cascade,
  -- One website of the account, or null for every website the account has.
  website_id      uuid references websites (id) on delete cascade,
  kind            text not null check (kind in ('slack', 'teams', 'hubspot', 'pipedrive')),
  -- What the account calls it; shown in lists, never a secret.
  name            text not null check (length(name) between 1 and 200),
  -- The incoming-webhook URL (Slack, Teams: its path is the credential) or the API token (HubSpot,
  -- Pipedrive), sealed like webhook secrets; never returned once set.
  secret_sealed   text not null,
  -- Which signals it receives.
  signals         text[] not null check (
    cardinality(signals) between 1 and 5
    and signals <@ array['visitor_identified', 'visitor_returned', 'high_intent', 'icp_qualified', 'watched_visit']::text[]
  ),
  -- One message per company per cooldown, however many signals the company makes meanwhile.
  cooldown_seconds integer not null default 86400 check (cooldown_seconds between 0 and 2592000),
  -- A chat alert sent once a day (the companies of the day just ended) instead of per signal.
  digest          boolean not null default false check (not digest or kind in ('slack', 'teams')),
  status          text not null default 'active' check (status in ('active', 'paused')),
  -- Why it was paused: set with status 'paused', cleared when resumed.
  paused_reason   text check (paused_reason is null or length(paused_reason) <= 500),
  -- Failed attempts since the last one that succeeded; PAUSE_AFTER (sl_record_deliveries) pauses it.
  failures_in_row integer not null default 0 check (failures_in_row >= 0),
  created_at      timestamptz not null default now(),
  check ((status = 'paused') = (paused_reason is not null))
);
create index integrations_by_account on integrations (account_id);

-- The last message each integration sent about each company: the cooldown.
create table integration_cooldowns (
  integration_id  uuid not null references integrations (id) on delete cascade,
  company         text not null check (length(company) between 1 and 300),
  sent_at         timestamptz not null,
  primary key (integration_id, company)
);

-- A digest integration's signals of the day, one per company, until the day's digest is written
-- (sl_write_integration_digests, run by the delivery sweep once the UTC day has ended).
create table integration_digest_items (
  integration_id  uuid not null references integrations (id) on delete cascade,
  day             date not null,
  company         text not null check (length(company) between 1 and 300),
  data            jsonb not null,
  at              timestamptz not null default now(),
  primary key (integration_id, day, company)
);
create index integration_digest_items_by_day on integration_digest_items (day);

alter table events add column integration_id uuid references integrations (id) on delete set null;
alter table events drop constraint events_destination_check;
alter table events add constraint events_destination_check check (destination in ('partner', 'child', 'account', 'integration'));
-- Only an integration's deliveries name one (the integration removed: null, and its pending events
-- settle as no_destination).
alter table events add constraint events_integration_only_for_integrations check (integration_id is null or destination = 'integration');
create index events_by_integration on events (integration_id, created_at desc) where integration_id is not null;

-- crm_status says what the CRM push did with the visitor's company: null (not pushed), 'pushed'
-- (crm_id is the CRM's company or organisation id), or 'failed'. Nothing wrote the earlier values.
alter table visitors drop constraint visitors_crm_status_check;
update visitors set crm_status = null where crm_status is not null;
alter table visitors
  add constraint visitors_crm_status_check check (crm_status in ('pushed', 'failed')),
  add column crm_id text check (crm_id is null or length(crm_id) <= 200),
  add column crm_pushed_at timestamptz;

-- How long an identified visitor must have been away for its next visit to be a return
-- (`visitor_returned`): api-update-settings' return_quiet_days.
alter table accounts add column return_quiet_days integer not null default 7 check (return_quiet_days between 1 and 365);
