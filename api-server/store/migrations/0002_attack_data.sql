-- Attack data: raw events, hourly per-address rollups, per-address facts. See docs/data-model.md.

create table sensors (
  id serial primary key,
  name text not null unique
);

-- Raw events, one partition per UTC day (created ahead of ingest by ensure_event_partitions()).
create table events (
  ts timestamptz not null,
  id uuid not null,
  src_ip inet not null,
  dst_port integer check (dst_port between 0 and 65535),
  service text,
  proto text,
  source text not null check (source in ('honeypot', 'telescope')),
  sensor text not null,
  action smallint not null default 0 check (action between 0 and 2),
  username text,
  command text,
  primary key (ts, id)
) partition by range (ts);

-- No separate ts index: the primary key (ts, id) already serves newest-first scans (read backwards), and
-- every extra index on events costs ingest throughput.

-- Per (hour, address) activity, maintained at ingest from newly inserted events only.
create table ip_hourly (
  hour timestamptz not null,
  ip inet not null,
  attacks integer not null,
  services integer not null default 0,      -- bit i = common/vocabulary SERVICES[i]
  sources smallint not null default 0,      -- bit 0 honeypot, bit 1 telescope
  max_action smallint not null default 0,
  ports integer[] not null default '{}',    -- distinct destination ports, at most 32
  sensors integer[] not null default '{}',  -- distinct sensors.id
  first_seen timestamptz not null,
  last_seen timestamptz not null,
  primary key (hour, ip)
) partition by range (hour);

-- Per address: enrichment, identity classification and the last time each window-dependent fact held.
create table addresses (
  ip inet primary key,
  first_seen timestamptz not null,
  last_seen timestamptz not null,
  last_honeypot timestamptz,
  last_telescope timestamptz,
  last_interaction timestamptz,   -- honeypot action >= 1
  last_high timestamptz,          -- action >= 1 (authentication attempts)
  last_critical timestamptz,      -- action = 2 (commands, downloads, exploits)
  service_last timestamptz[] not null default '{}',  -- index i+1 = SERVICES[i]
  sensor_ids integer[] not null default '{}',        -- most recent sensors (at most 8), newest first ...
  sensor_last timestamptz[] not null default '{}',   -- ... and when each last saw the address
  -- Latest instant the address had been seen by two sensors or by both sources: sensor_last is kept newest
  -- first, so its second element is the second-most-recent sensor sighting.
  confirmed_at timestamptz generated always as (greatest(
    sensor_last[2],
    case when last_honeypot is not null and last_telescope is not null then least(last_honeypot, last_telescope) end
  )) stored,
  country char(2),
  province text,
  city text,
  carrier text,
  isp text check (isp in ('电信', '联通', '移动')),
  asn integer,
  as_name text,
  net text check (net in ('idc', 'broadband', 'mobile', 'edu')),
  scanner_kind text check (scanner_kind in ('research_scanner', 'asset_scanner')),
  scanner_org text,
  enriched_at timestamptz not null default now()
);

create index addresses_last_seen on addresses (last_seen);

-- Creates the daily partitions of events and ip_hourly covering [from_day, to_day] (UTC days).
create function ensure_attack_partitions(from_day date, to_day date) returns integer
language plpgsql as $$
declare
  d date;
  made integer := 0;
  suffix text;
begin
  d := from_day;
  while d <= to_day loop
    suffix := to_char(d, 'YYYYMMDD');
    if to_regclass('events_' || suffix) is null then
      execute format('create table if not exists %I partition of events for values from (%L) to (%L)',
        'events_' || suffix, (d::timestamp at time zone 'UTC'), ((d + 1)::timestamp at time zone 'UTC'));
      made := made + 1;
    end if;
    if to_regclass('ip_hourly_' || suffix) is null then
      execute format('create table if not exists %I partition of ip_hourly for values from (%L) to (%L)',
        'ip_hourly_' || suffix, (d::timestamp at time zone 'UTC'), ((d + 1)::timestamp at time zone 'UTC'));
    end if;
    d := d + 1;
  end loop;
  return made;
end $$;

-- Drops the daily partitions of events and ip_hourly that end before `before` (retention).
create function drop_attack_partitions_before(before timestamptz) returns integer
language plpgsql as $$
declare
  r record;
  dropped integer := 0;
begin
  for r in
    select c.relname
    from pg_inherits i
    join pg_class c on c.oid = i.inhrelid
    join pg_class p on p.oid = i.inhparent
    where p.relname in ('events', 'ip_hourly')
      and c.relname ~ '_[0-9]{8}$'
      and (to_date(right(c.relname, 8), 'YYYYMMDD') + 1)::timestamp at time zone 'UTC' <= before
  loop
    execute format('drop table %I', r.relname);
    dropped := dropped + 1;
  end loop;
  return dropped;
end $$;
