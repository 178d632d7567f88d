-- IP identification: imported classification ranges, company records (imported and learned), the
-- 7-day per-account result cache, and the credit ledger.

create table ip_ranges (
  id           bigint generated always as identity primary key,
  network      cidr not null,
  kind         text not null check (kind in ('vpn', 'hosting', 'isp')),
  provider     text check (provider is null or length(provider) between 1 and 100),
  source       text not null,
  imported_at  timestamptz not null default now(),
  unique (network, kind)
);

create table ip_companies (
  id            bigint generated always as identity primary key,
  network       cidr not null unique,
  domain        text not null check (domain = lower(domain) and domain ~ '^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{1,62}$'),
  company_name  text not null check (length(company_name) between 1 and 300),
  confidence    real not null check (confidence between 0 and 1),
  -- `import`: an operator's CSV; `learned`: a confirmed provider answer written back.
  source        text not null check (source in ('import', 'learned')),
  created_at    timestamptz not null default now(),
  updated_at    timestamptz not null default now()
);

create table ip_cache (
  account_id  uuid not null references accounts (id) on delete cascade,
  operation   text not null check (operation in ('ip-to-company', 'ip-to-best-fit')),
  ip          inet not null,
  result      jsonb not null,
  created_at  timestamptz not null default now(),
  expires_at  timestamptz not null,
  primary key (account_id, operation, ip),
  check (expires_at > created_at)
);

create table credit_transactions (
  id          uuid primary key default gen_random_uuid(),
  account_id  uuid not null references accounts (id) on delete cascade,
  type        text not null check (type in ('debit', 'grant')),
  amount      integer not null check (amount > 0),
  operation   text not null,
  ip          inet,
  created_at  timestamptz not null default now()
);
create index credit_transactions_by_account on credit_transactions (account_id, created_at desc);

/*
 * Charges one lookup and caches its result in the same transaction. Raises SL402 when the balance
 * is below the cost (nothing changes). A cost of 0 only caches. Returns the balance after.
 */
create function sl_charge_lookup(p_account uuid, p_operation text, p_ip inet, p_cost integer, p_result jsonb, p_ttl interval)
returns integer
language plpgsql as $$
declare
  v_balance integer;
begin
  select credit_balance into v_balance from accounts where id = p_account for update;
  if v_balance is null then
    raise exception 'no account %', p_account using errcode = 'SL404';
  end if;
  if p_cost > 0 then
    if v_balance < p_cost then
      raise exception 'not enough credits: % needed, % available', p_cost, v_balance
        using errcode = 'SL402', detail = jsonb_build_object('credits_required', p_cost, 'credit_balance', v_balance)::text;
    end if;
    update accounts set credit_balance = credit_balance - p_cost where id = p_account;
    insert into credit_transactions (account_id, type, amount, operation, ip) values (p_account, 'debit', p_cost, p_operation, p_ip);
    v_balance := v_balance - p_cost;
  end if;
  insert into ip_cache (account_id, operation, ip, result, expires_at)
  values (p_account, p_operation, p_ip, p_result, now() + p_ttl)
  on conflict (account_id, operation, ip) do update set result = excluded.result, created_at = now(), expires_at = excluded.expires_at;
  return v_balance;
end
$$;

create function sl_grant_credits(p_account uuid, p_amount integer) returns integer
language plpgsql as $$
declare
  v_balance integer;
begin
  if p_amount is null or p_amount <= 0 then
    raise exception 'credits must be a positive integer' using errcode = 'SL400';
  end if;
  update accounts set credit_balance = credit_balance + p_amount where id = p_account returning credit_balance into v_balance;
  if v_balance is null then
    raise exception 'no account %', p_account using errcode = 'SL404';
  end if;
  insert into credit_transactions (account_id, type, amount, operation) values (p_account, 'grant', p_amount, 'grant');
  return v_balance;
end
$$;
