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
