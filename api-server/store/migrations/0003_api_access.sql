-- API access: subscription keys (hashed at rest) and fixed-window counters for anonymous limits and tier
-- quotas, shared by every replica.

create table api_keys (
  id serial primary key,
  -- The visible part of the key (bf_<prefix>_...), unique, used to find the row; not secret.
  prefix text not null unique,
  -- SHA-256 of the whole key. The key has 192 random bits, so a fast hash is enough.
  hash bytea not null,
  name text not null,
  tier text not null,
  created_at timestamptz not null default now(),
  revoked_at timestamptz
);

-- One row per (bucket, window): `anon:<address>` per minute, `quota:<key id>` per UTC day.
create table rate_counters (
  bucket text not null,
  window_start timestamptz not null,
  hits integer not null,
  primary key (bucket, window_start)
);

create index rate_counters_window on rate_counters (window_start);
