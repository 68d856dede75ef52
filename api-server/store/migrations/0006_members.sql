-- The member centre (api-server/website, docs/website.md): accounts, their server-side sessions, and the API
-- keys they create on the website (the same api_keys the API verifies).

create table members (
  id serial primary key,
  -- Lower-cased when stored, so one address is one account whatever its spelling.
  email text not null unique,
  -- argon2id in PHC string form ($argon2id$v=19$m=...,t=...,p=...$salt$hash).
  password_hash text not null,
  -- A tier of BLOCKFEED_TIER_QUOTAS; `member` = registered without a subscription.
  tier text not null default 'member',
  -- unverified: waits for its email link (SMTP configured); pending: waits for the operator's approval
  -- (no SMTP); active; disabled.
  status text not null check (status in ('unverified', 'pending', 'active', 'disabled')),
  -- SHA-256 of the emailed verification token (the token itself is never stored).
  verify_token_hash bytea unique,
  verify_expires_at timestamptz,
  created_at timestamptz not null default now(),
  activated_at timestamptz,
  disabled_at timestamptz,
  password_changed_at timestamptz not null default now()
);

-- @fastify/session's store: one row per session, found by the SHA-256 of the id in the cookie, so a copy of
-- this table holds no usable session. member_id is set once signed in; deleting a member's rows ends every
-- session of theirs (sign-out elsewhere, password change, disable).
create table web_sessions (
  id_hash bytea primary key,
  member_id integer references members (id) on delete cascade,
  data jsonb not null,
  expires_at timestamptz not null
);

create index web_sessions_member on web_sessions (member_id) where member_id is not null;
create index web_sessions_expiry on web_sessions (expires_at);

-- Keys created on the website belong to their member (null: created with `blockfeed keys create`).
-- last_used_at is written when a server verifies the key against the store, so it is exact to within
-- BLOCKFEED_KEY_CACHE_SECONDS.
alter table api_keys
  add column member_id integer references members (id) on delete set null,
  add column last_used_at timestamptz;

create index api_keys_member on api_keys (member_id) where member_id is not null;
