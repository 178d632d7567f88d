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

-- The ICP as the API shows it (spec: ICP), plus what generation and scoring add.
create function sl_icp_json(i icps) returns jsonb
language sql stable as $$
  select jsonb_build_object(
    'id', i.id, 'name', i.name, 'description', i.description, 'product_id', i.product_id,
    'job_titles', to_jsonb(i.job_titles), 'pain_points', to_jsonb(i.pain_points),
    'value_drivers', to_jsonb(i.value_drivers), 'industry_focus', to_jsonb(i.industry_focus),
    'company_characteristics', i.company_characteristics,
    'workflow_status', i.workflow_status, 'review_status', i.review_status,
    'qualify_threshold', i.qualify_threshold, 'generated_by', i.engine, 'failure_reason', i.failure_reason,
    'created_at', sl_iso(i.created_at), 'updated_at', sl_iso(i.updated_at))
$$;

-- The ICP limit of a plan (spec: Free 1, Starter 3, Growth 6, Pro unlimited); null is no limit.
create function sl_plan_icp_limit(p_plan text) returns integer
language sql immutable as $$
  select case p_plan when 'free' then 1 when 'starter' then 3 when 'growth' then 6 else null end
$$;

/*
 * create_icp in one transaction: the plan limit under the account's lock (SL403 naming the plan and
 * its limit), the product's owner (SL404, or SL403 for another account's product), the ICP queued
 * for generation, its usage counted, and, with an idempotency key, the response stored as the
 * key's outcome. p_fields holds only the fields the caller gave. Returns the ICP as JSON.
 */
create function sl_create_icp(p_account uuid, p_product uuid, p_fields jsonb, p_threshold integer, p_idempotency_key uuid)
returns jsonb
language plpgsql as $$
declare
  v_plan text;
  v_limit integer;
  v_count integer;
  v_owner uuid;
  v_icp icps;
  v_json jsonb;
begin
  select plan into v_plan from accounts where id = p_account for update;
  select account_id into v_owner from products where id = p_product;
  if v_owner is null then
    raise exception 'no such product %', p_product using errcode = 'SL404';
  elsif v_owner <> p_account then
    raise exception 'product % belongs to another account', p_product using errcode = 'SL403';
  end if;
  v_limit := sl_plan_icp_limit(v_plan);
  select count(*) into v_count from icps where account_id = p_account;
  if v_limit is not null and v_count >= v_limit then
    raise exception 'the % plan allows % ICP%; this account has %: delete one or upgrade the plan',
      v_plan, v_limit, case when v_limit = 1 then '' else 's' end, v_count
      using errcode = 'SL403', detail = jsonb_build_object('plan', v_plan, 'icp_limit', v_limit, 'icp_count', v_count)::text;
  end if;
  insert into icps (account_id, product_id, name, description, job_titles, pain_points, value_drivers, industry_focus,
                    company_characteristics, given_fields, qualify_threshold, generation_due_at)
  values (
    p_account, p_product,
    coalesce(p_fields ->> 'name', ''), coalesce(p_fields ->> 'description', ''),
    coalesce(array(select jsonb_array_elements_text(p_fields -> 'job_titles')), '{}'),
    coalesce(array(select jsonb_array_elements_text(p_fields -> 'pain_points')), '{}'),
    coalesce(array(select jsonb_array_elements_text(p_fields -> 'value_drivers')), '{}'),
    coalesce(array(select jsonb_array_elements_text(p_fields -> 'industry_focus')), '{}'),
    coalesce(p_fields -> 'company_characteristics', '{}'),
    array(select jsonb_object_keys(p_fields) order by 1),
    coalesce(p_threshold, 70), now()
  )
  returning * into v_icp;
  perform sl_count_usage(p_account, 'create_icp', 1);
  v_json := sl_icp_json(v_icp);
  if p_idempotency_key is not null then
    perform sl_complete_idempotent(p_account, p_idempotency_key, 201, (jsonb_build_object('success', true) || v_json)::text);
  end if;
  return v_json;
end
$$;

-- Due generations, leased to the caller (attempt counted now, so a worker that dies still counts).
create function sl_claim_icp_generations(p_limit integer, p_lease_ms integer) returns table (id uuid, attempt integer)
language sql as $$
  update icps i set generation_lease_until = clock_timestamp() + p_lease_ms * interval '1 millisecond',
    generation_attempts = i.generation_attempts + 1
  where i.id in (
    select c.id from icps c
    where c.workflow_status = 'generating' and c.generation_due_at <= now()
      and (c.generation_lease_until is null or c.generation_lease_until < clock_timestamp())
    order by c.generation_due_at
    limit p_limit
    for update skip locked
  )
  returning i.id, i.generation_attempts
$$;

/*
 * Stores a generated draft: only the fields the caller did not give are written. The ICP becomes
 * `generated` (review stays as it is) and the account hears icp.generated. A settle for an ICP no
 * longer generating (deleted, or settled by a worker that took over) changes nothing: false.
 */
create function sl_settle_icp_generation(p_id uuid, p_draft jsonb, p_engine text) returns boolean
language plpgsql as $$
declare
  v_icp icps;
  g text[];
begin
  select * into v_icp from icps where id = p_id and workflow_status = 'generating' for update;
  if v_icp.id is null then
    return false;
  end if;
  g := v_icp.given_fields;
  update icps set
    name = case when 'name' = any(g) then name else p_draft ->> 'name' end,
    description = case when 'description' = any(g) then description else p_draft ->> 'description' end,
    job_titles = case when 'job_titles' = any(g) then job_titles else array(select jsonb_array_elements_text(p_draft -> 'job_titles')) end,
    pain_points = case when 'pain_points' = any(g) then pain_points else array(select jsonb_array_elements_text(p_draft -> 'pain_points')) end,
    value_drivers = case when 'value_drivers' = any(g) then value_drivers else array(select jsonb_array_elements_text(p_draft -> 'value_drivers')) end,
    industry_focus = case when 'industry_focus' = any(g) then industry_focus else array(select jsonb_array_elements_text(p_draft -> 'industry_focus')) end,
    company_characteristics = case when 'company_characteristics' = any(g) then company_characteristics else p_draft -> 'company_characteristics' end,
    engine = p_engine, workflow_status = 'generated', generation_due_at = null, generation_lease_until = null,
    updated_at = now()
  where id = p_id
  returning * into v_icp;
  perform sl_emit(v_icp.account_id, null, 'icp.generated',
    jsonb_build_object('icp_id', v_icp.id, 'name', v_icp.name, 'product_id', v_icp.product_id, 'generated_by', p_engine), 'account');
  return true;
end
$$;

/*
 * A failed generation attempt: retried 1, 5 and 30 minutes later while p_retryable and attempts
 * remain; otherwise the ICP is `failed` with the reason, and the account hears icp.generation_failed.
 */
create function sl_fail_icp_generation(p_id uuid, p_reason text, p_retryable boolean, p_max_attempts integer) returns text
language plpgsql as $$
declare
  v_icp icps;
begin
  select * into v_icp from icps where id = p_id and workflow_status = 'generating' for update;
  if v_icp.id is null then
    return null;
  end if;
  if p_retryable and v_icp.generation_attempts < p_max_attempts then
    update icps set generation_lease_until = null,
      generation_due_at = now() + (array[interval '1 minute', interval '5 minutes', interval '30 minutes'])[least(v_icp.generation_attempts, 3)],
      updated_at = now()
    where id = p_id;
    return 'retrying';
  end if;
  update icps set workflow_status = 'failed', failure_reason = left(p_reason, 1000), generation_due_at = null,
    generation_lease_until = null, updated_at = now()
  where id = p_id;
  perform sl_emit(v_icp.account_id, null, 'icp.generation_failed',
    jsonb_build_object('icp_id', v_icp.id, 'product_id', v_icp.product_id, 'reason', left(p_reason, 1000)), 'account');
  return 'failed';
end
$$;

/*
 * One review or activation action on an ICP of p_account (the transitions table in decisions.md).
 * An unknown ICP is SL404, another account's SL403, a refused transition SL409 naming the state.
 * Asking for the state the ICP is already in changes nothing and answers it (a retried call is
 * not an error). Activation queues the scoring of the account's identifications.
 */
create function sl_icp_action(p_account uuid, p_icp uuid, p_action text) returns jsonb
language plpgsql as $$
declare
  v icps;
  w text;
  r text;
begin
  select * into v from icps where id = p_icp for update;
  if v.id is null then
    raise exception 'no such ICP %', p_icp using errcode = 'SL404';
  elsif v.account_id <> p_account then
    raise exception 'ICP % belongs to another account', p_icp using errcode = 'SL403';
  end if;
  w := v.workflow_status;
  r := v.review_status;
  case p_action
    when 'approve_icp' then
      if r <> 'approved' then
        if w in ('generating', 'failed') then
          raise exception 'cannot approve an ICP that is %: it has nothing to review yet', w using errcode = 'SL409';
        end if;
        r := 'approved';
      end if;
    when 'reject_icp' then
      if r <> 'rejected' then
        if w = 'active' then
          raise exception 'cannot reject an active ICP: pause it first' using errcode = 'SL409';
        elsif w in ('generating', 'failed') then
          raise exception 'cannot reject an ICP that is %: it has nothing to review yet', w using errcode = 'SL409';
        end if;
        r := 'rejected';
      end if;
    when 'activate_icp' then
      if w <> 'active' then
        if w not in ('generated', 'paused') then
          raise exception 'cannot activate an ICP that is %', w using errcode = 'SL409';
        elsif r <> 'approved' then
          raise exception 'cannot activate an ICP whose review is %: approve it first', r using errcode = 'SL409';
        end if;
        w := 'active';
      end if;
    when 'pause_icp' then
      if w <> 'paused' then
        if w <> 'active' then
          raise exception 'cannot pause an ICP that is %: only an active ICP can be paused', w using errcode = 'SL409';
        end if;
        w := 'paused';
      end if;
    when 'regenerate_icp' then
      if w not in ('failed', 'generated') or (w = 'generated' and r = 'approved') then
        raise exception 'cannot regenerate an ICP that is % and %: only a failed or an unapproved generated ICP can be', w, r
          using errcode = 'SL409';
      end if;
      w := 'generating';
      r := 'pending_review';
    else
      raise exception 'unknown ICP action %', p_action using errcode = 'SL400';
  end case;
  if w is distinct from v.workflow_status or r is distinct from v.review_status then
    update icps set
      workflow_status = w, review_status = r, updated_at = now(),
      failure_reason = case when w = 'generating' then null else failure_reason end,
      generation_attempts = case when w = 'generating' then 0 else generation_attempts end,
      generation_due_at = case when w = 'generating' then now() else null end,
      generation_lease_until = null,
      -- Becoming active scores everything identified so far; the worker walks it in id order.
      backfill_pending = (w = 'active' and v.workflow_status <> 'active') or (w = 'active' and backfill_pending),
      backfill_after = case when w = 'active' and v.workflow_status <> 'active' then null else backfill_after end
    where id = p_icp
    returning * into v;
  end if;
  return sl_icp_json(v);
end
$$;

-- Deletes an ICP of p_account (its scores go with it); frees a place under the plan limit.
create function sl_delete_icp(p_account uuid, p_icp uuid) returns uuid
language plpgsql as $$
declare
  v_owner uuid;
begin
  select account_id into v_owner from icps where id = p_icp for update;
  if v_owner is null then
    raise exception 'no such ICP %', p_icp using errcode = 'SL404';
  elsif v_owner <> p_account then
    raise exception 'ICP % belongs to another account', p_icp using errcode = 'SL403';
  end if;
  delete from icps where id = p_icp;
  return p_icp;
end
$$;

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
