-- Engine work is paid for, or limited, before the engine is asked.
--
-- api-full-request holds its cost when it starts (credit_holds): the credits leave the balance at
-- once, under the account's row lock with the guard `balance >= cost`, so requests racing for the
-- last credits cannot all reach the engine; the hold turns into the usual debits in the transaction
-- that stores the message, or goes back to the balance when the work fails, or when it expires
-- (its worker died) — at the account's next hold, or by the minute sweep.
--
-- ICP generations (create_icp leaving fields to the engine, regenerate_icp) are limited per account
-- per rolling hour (icp_generation_log), counted under the account's row lock.
--
-- Lock order, as in 0014 and 0015: the accounts row before anything it owns (its holds, its
-- generation log, its ICPs). sl_icp_action therefore locks the account before the ICP when it regenerates.

create table credit_holds (
  account_id       uuid not null references accounts (id) on delete cascade,
  -- One hold per request: the x-idempotency-key of the api-full-request holding it.
  idempotency_key  uuid not null,
  amount           integer not null check (amount > 0),
  created_at       timestamptz not null default clock_timestamp(),
  -- The hold's worker is past its idempotency lease after this: it died, and the hold goes back.
  expires_at       timestamptz not null,
  primary key (account_id, idempotency_key),
  check (expires_at > created_at)
);
create index credit_holds_expiry on credit_holds (expires_at);

/*
 * Gives back p_account's holds that expired. The caller holds the account's row lock. Returns how
 * many went back.
 */
create function sl_release_expired_holds_of(p_account uuid) returns integer
language plpgsql as $$
declare
  v_amount integer;
  v_count integer;
begin
  with gone as (
    delete from credit_holds where account_id = p_account and expires_at <= clock_timestamp() returning amount
  )
  select coalesce(sum(amount), 0)::integer, count(*)::integer into v_amount, v_count from gone;
  if v_amount > 0 then
    update accounts set credit_balance = credit_balance + v_amount where id = p_account;
  end if;
  return v_count;
end
$$;

/*
 * Gives back the hold of request p_key, if it has one (locking the account). Nothing else changes:
 * no transaction row, no event, as if the credits had never left. Returns whether there was one.
 */
create function sl_release_credit_hold(p_account uuid, p_key uuid) returns boolean
language plpgsql as $$
declare
  v_amount integer;
begin
  perform 1 from accounts where id = p_account for update;
  delete from credit_holds where account_id = p_account and idempotency_key = p_key returning amount into v_amount;
  if v_amount is null then
    return false;
  end if;
  update accounts set credit_balance = credit_balance + v_amount where id = p_account;
  return true;
end
$$;

/*
 * Holds p_amount credits of p_account for request p_key until p_ttl_ms from now, before any
 * provider or engine is called. Under the account's lock: expired holds go back first, then a hold
 * this key still has (a repeat that took the key over from a worker whose lease ran out) goes back
 * too, so a key holds once; then SL402 (with credits_required and credit_balance) unless
 * `credit_balance >= p_amount`, else the credits leave the balance. Returns the balance left.
 */
create function sl_hold_credits(p_account uuid, p_key uuid, p_amount integer, p_ttl_ms integer) returns integer
language plpgsql as $$
declare
  v_balance integer;
begin
  perform 1 from accounts where id = p_account for update;
  if not found then
    raise exception 'no account %', p_account using errcode = 'SL404';
  end if;
  perform sl_release_expired_holds_of(p_account);
  perform sl_release_credit_hold(p_account, p_key);
  select credit_balance into v_balance from accounts where id = p_account;
  if v_balance < p_amount then
    raise exception 'not enough credits: % needed, % available', p_amount, v_balance
      using errcode = 'SL402', detail = jsonb_build_object('credits_required', p_amount, 'credit_balance', v_balance)::text;
  end if;
  update accounts set credit_balance = credit_balance - p_amount where id = p_account returning credit_balance into v_balance;
  insert into credit_holds (account_id, idempotency_key, amount, expires_at)
  values (p_account, p_key, p_amount, clock_timestamp() + p_ttl_ms * interval '1 millisecond');
  return v_balance;
end
$$;

/*
 * The sweep: gives back the expired holds of up to p_limit accounts (an account busy right now is
 * skipped: its own next hold, or the next sweep, gives them back). Returns how many went back.
 */
create function sl_release_expired_credit_holds(p_limit integer) returns integer
language plpgsql as $$
declare
  v_account uuid;
  v_released integer := 0;
begin
  for v_account in
    select a.id from accounts a
    where a.id in (select h.account_id from credit_holds h where h.expires_at <= clock_timestamp() limit p_limit)
    order by a.id
    for update of a skip locked
  loop
    v_released := v_released + sl_release_expired_holds_of(v_account);
  end loop;
  return v_released;
end
$$;

/*
 * 0016's sl_complete_message, paying with the request's hold: the hold goes back to the balance
 * first (under the account's lock, kept to commit), then research and message are debited exactly
 * as before, so the transactions, usage, events and reload claims are what they always were. A
 * request whose hold is gone (expired while its worker still went on) pays from the balance: SL402
 * when it no longer covers the cost, and nothing is stored.
 */
create or replace function sl_complete_message(
  p_account uuid, p_user uuid, p_key uuid, p_prospect text, p_product uuid,
  p_research jsonb, p_research_source text, p_message text, p_message_type text,
  p_word_count integer, p_character_count integer, p_engine text,
  p_research_cost integer, p_message_cost integer
) returns table (message_id uuid, body text, reload boolean)
language plpgsql as $$
declare
  v_id uuid := gen_random_uuid();
  v_reload boolean := false;
  v_body text;
begin
  perform sl_release_credit_hold(p_account, p_key);
  if p_research_cost > 0 then
    v_reload := sl_debit_credits(p_account, 'research', p_research_cost, p_user, v_id) or v_reload;
    perform sl_count_usage(p_account, 'research', 1);
  end if;
  v_reload := sl_debit_credits(p_account, 'message', p_message_cost, p_user, v_id) or v_reload;
  perform sl_count_usage(p_account, 'message', 1);
  insert into messages (id, account_id, user_id, idempotency_key, prospect_url, product_id, research_summary, research_source,
                        generated_message, message_type, word_count, character_count, engine, credits_charged)
  values (v_id, p_account, p_user, p_key, p_prospect, p_product, p_research, p_research_source,
          p_message, p_message_type, p_word_count, p_character_count, p_engine, p_research_cost + p_message_cost);
  v_body := jsonb_build_object(
    'success', true, 'status', 'completed', 'message_id', v_id, 'generated_message', p_message,
    'research_summary', p_research,
    'message_metadata', jsonb_build_object('message_type', p_message_type, 'word_count', p_word_count, 'character_count', p_character_count),
    'credits_charged', p_research_cost + p_message_cost, 'generated_by', p_engine)::text;
  perform sl_complete_idempotent(p_account, p_key, 200, v_body);
  perform sl_emit(p_account, null, 'message.completed', jsonb_build_object(
    'message_id', v_id, 'user_id', p_user, 'prospect_url', p_prospect, 'message_type', p_message_type,
    'word_count', p_word_count, 'credits_charged', p_research_cost + p_message_cost), 'account');
  return query select v_id, v_body, v_reload;
end
$$;

-- ICP generations started per account: the rows of the last hour are the allowance in use.
create table icp_generation_log (
  account_id  uuid not null references accounts (id) on delete cascade,
  started_at  timestamptz not null default now()
);
create index icp_generation_log_by_account on icp_generation_log (account_id, started_at);

-- ICP generations an account may start in any hour (docs/decisions.md, "ICP generations per hour").
create function sl_icp_generations_per_hour() returns integer
language sql immutable as $$
  select 20
$$;

/*
 * Takes one ICP generation from p_account's allowance (the caller holds the account's lock): SL429
 * when sl_icp_generations_per_hour() started in the last hour already, its detail `retry_after` the
 * seconds until the oldest of them leaves the window. Rows past the hour are deleted here, so the
 * log never holds more than the allowance per account.
 */
create function sl_take_icp_generation(p_account uuid) returns void
language plpgsql as $$
declare
  v_count integer;
  v_oldest timestamptz;
  v_wait integer;
begin
  delete from icp_generation_log where account_id = p_account and started_at <= now() - interval '1 hour';
  select count(*)::integer, min(started_at) into v_count, v_oldest from icp_generation_log where account_id = p_account;
  if v_count >= sl_icp_generations_per_hour() then
    v_wait := greatest(1, ceil(extract(epoch from v_oldest + interval '1 hour' - now())))::integer;
    raise exception 'this account started % ICP generations in the last hour, the most allowed; the next is possible in % s', v_count, v_wait
      using errcode = 'SL429', detail = jsonb_build_object('retry_after', v_wait)::text;
  end if;
  insert into icp_generation_log (account_id) values (p_account);
end
$$;

/*
 * 0015's create_icp, taking an ICP generation from the account's allowance when the caller left any
 * field to the engine (the names are ICP_FIELD_NAMES in icp/schemas.ts). api-icp-action passes no
 * idempotency key: it stores the answer text it sends itself (run-icp-action.ts), so a repeat
 * answers those bytes.
 */
create or replace function sl_create_icp(p_account uuid, p_product uuid, p_fields jsonb, p_threshold integer, p_idempotency_key uuid)
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
  if not (p_fields ?& array['name', 'description', 'job_titles', 'pain_points', 'value_drivers', 'industry_focus', 'company_characteristics']) then
    perform sl_take_icp_generation(p_account);
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

/*
 * 0015's ICP actions, with regenerate_icp taking an ICP generation from the account's allowance
 * (SL429) once the transition is allowed, the account locked before the ICP (lock order).
 */
create or replace function sl_icp_action(p_account uuid, p_icp uuid, p_action text) returns jsonb
language plpgsql as $$
declare
  v icps;
  w text;
  r text;
begin
  if p_action = 'regenerate_icp' then
    perform 1 from accounts where id = p_account for update;
  end if;
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
      perform sl_take_icp_generation(p_account);
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
