-- Issue 13, api-full-request: the messages generated for connected users, each paid for in the
-- same transaction that stores it and completes its idempotency key.

create table messages (
  id                uuid primary key default gen_random_uuid(),
  account_id        uuid not null references accounts (id) on delete cascade,
  user_id           uuid not null references connected_users (id) on delete cascade,
  idempotency_key   uuid not null,
  prospect_url      text not null check (prospect_url ~ '^https://www\.linkedin\.com/in/[^/?#]+$'),
  product_id        uuid references products (id) on delete set null,
  research_summary  jsonb not null check (jsonb_typeof(research_summary) = 'object'),
  -- Who researched: the provider's name, or `caller` when research_summary was given.
  research_source   text not null,
  generated_message text not null check (length(generated_message) between 1 and 8000),
  message_type      text not null,
  word_count        integer not null check (word_count >= 0),
  character_count   integer not null check (character_count >= 0),
  engine            text not null,
  credits_charged   integer not null check (credits_charged >= 0),
  created_at        timestamptz not null default now(),
  -- One message per idempotency key: a repeat can never make a second.
  unique (account_id, idempotency_key)
);
create index messages_by_account on messages (account_id, created_at desc);
