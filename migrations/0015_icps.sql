-- Issue 13, ICPs: products, ICPs with their generation queue and review/activation states, the
-- plan limit, and the scores of identifications against active ICPs.
--
-- Lock order: accounts row, then the ICP row. sl_create_icp locks the account so two creates at
-- the plan limit cannot both pass; the actions lock only the ICP.

create table products (
  id                  uuid primary key default gen_random_uuid(),
  account_id          uuid not null references accounts (id) on delete cascade,
  name                text not null check (length(name) between 1 and 200),
  url                 text check (url is null or (length(url) <= 2048 and url ~ '^https?://[^\s]+$')),
  description         text check (length(description) <= 4000),
  value_propositions  text[] not null default '{}' check (cardinality(value_propositions) <= 20),
  target_customers    text[] not null default '{}' check (cardinality(target_customers) <= 20),
  created_at          timestamptz not null default now(),
  updated_at          timestamptz not null default now()
);
create index products_by_account on products (account_id, created_at desc);

create table icps (
  id                       uuid primary key default gen_random_uuid(),
  account_id               uuid not null references accounts (id) on delete cascade,
  product_id               uuid not null references products (id) on delete restrict,
  -- Empty until generated when the caller left them out.
  name                     text not null default '' check (length(name) <= 200),
  description              text not null default '' check (length(description) <= 4000),
  job_titles               text[] not null default '{}' check (cardinality(job_titles) <= 20),
  pain_points              text[] not null default '{}' check (cardinality(pain_points) <= 20),
  value_drivers            text[] not null default '{}' check (cardinality(value_drivers) <= 20),
  industry_focus           text[] not null default '{}' check (cardinality(industry_focus) <= 20),
  company_characteristics  jsonb not null default '{}' check (jsonb_typeof(company_characteristics) = 'object'),
  -- The fields the caller gave; generation fills only the others.
  given_fields             text[] not null default '{}',
  -- A score at or above this qualifies an identification.
  qualify_threshold        smallint not null default 70 check (qualify_threshold between 0 and 100),
  workflow_status          text not null default 'generating' check (workflow_status in ('generating', 'generated', 'active', 'paused', 'failed')),
  review_status            text not null default 'pending_review' check (review_status in ('pending_review', 'approved', 'rejected')),
  -- Which engine wrote the generated fields (`caller` when the caller gave every one).
  engine                   text,
  failure_reason           text check (length(failure_reason) <= 1000),
  generation_attempts      integer not null default 0 check (generation_attempts >= 0),
  -- Set while generating: when the next attempt is due, and the lease of the worker on it.
  generation_due_at        timestamptz,
  generation_lease_until   timestamptz,
  -- Scoring of the account's identifications after an activation: ids above this are still to
  -- score; null when the ICP has nothing left to catch up on.
  backfill_after           uuid,
  backfill_pending         boolean not null default false,
  created_at               timestamptz not null default now(),
  updated_at               timestamptz not null default now(),
  check ((workflow_status = 'generating') = (generation_due_at is not null)),
  check ((workflow_status = 'failed') = (failure_reason is not null)),
  -- Only a reviewed and approved ICP scores visitors.
  check (workflow_status <> 'active' or review_status = 'approved'),
  check (workflow_status in ('generating', 'failed') or (length(name) > 0 and length(description) > 0 and engine is not null)),
  check (not backfill_pending or workflow_status = 'active')
);
create index icps_by_account on icps (account_id, created_at);
create index icps_generation_due on icps (generation_due_at) where workflow_status = 'generating';
create index icps_active on icps (account_id) where workflow_status = 'active';
create index icps_backfill on icps (updated_at) where backfill_pending;

-- Scores of identifications against ICPs. Written by the scoring worker (icp/score-identifications.ts).
create table icp_scores (
  identification_id  uuid not null references identifications (id) on delete cascade,
  icp_id             uuid not null references icps (id) on delete cascade,
  score              smallint not null check (score between 0 and 100),
  qualified          boolean not null,
  ai_summary         text not null check (length(ai_summary) <= 1000),
  scored_at          timestamptz not null default now(),
  primary key (identification_id, icp_id)
);
create index icp_scores_by_icp on icp_scores (icp_id);

-- The scoring queue of new identifications: identified and not yet scored against the active ICPs.
alter table identifications add column scored_at timestamptz;
update identifications set scored_at = identified_at where status = 'identified';
create index identifications_unscored on identifications (identified_at) where status = 'identified' and scored_at is null;
