-- Instance-wide facts that must survive restarts and be shared by replicas (e.g. when demo data was
-- loaded). Key/value, one row per fact.
create table instance_settings (
  key text primary key,
  value jsonb not null,
  updated_at timestamptz not null default now()
);
