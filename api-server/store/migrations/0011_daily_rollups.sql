-- Coarser rollups for long windows (docs/data-model.md "Rollups"): a 720-hour statistic or export reads a
-- row per address per day, and per day or hour a row per country and per port, instead of every hourly row
-- and every event. Compaction (api-server/retention/compaction.ts) builds them from ip_hourly and events, a
-- whole UTC day at a time, and records in rollup_hours the hours they then cover; every statement that
-- appends to ip_hourly removes from rollup_hours the hours it appended to (a trigger, below). Readers take
-- an hour from a rollup only while it is listed there, and from ip_hourly and events otherwise, so every
-- answer equals the one the hourly rows give.

-- Per (UTC day, address): the day's ip_hourly rows of the address merged — attacks summed, ports the
-- ascending union of the rows' ports lists (not capped: the union of a window's rows must stay the same).
create table ip_daily (
  day date not null,
  ip inet not null,
  attacks integer not null,
  ports integer[] not null default '{}'
) partition by range (day);

-- Attacks per (period, country) over every source, the country the address has (null: none). A period is
-- an hour (hours = 1) or a UTC day (hours = 24).
create table attack_totals (
  period timestamptz not null,
  hours smallint not null check (hours in (1, 24)),
  country char(2),
  attacks bigint not null
);
create index attack_totals_period on attack_totals (hours, period);

-- Events per (period, destination port) over every source, with the least service name among them.
create table port_totals (
  period timestamptz not null,
  hours smallint not null check (hours in (1, 24)),
  port integer not null,
  attacks bigint not null,
  service text
);
create index port_totals_period on port_totals (hours, period);

-- The hours whose rollups are complete: every row of ip_daily, attack_totals and port_totals covering them
-- was built from exactly the ip_hourly rows and events stored for them now.
create table rollup_hours (
  hour timestamptz primary key
);

-- Rows appended to an hour (by ingest, or any other writer) make its rollups incomplete: the hour is read from
-- ip_hourly and events until compaction builds them again. On the parent table: writers go through it, and
-- the statement's rows of every partition are in `added`.
create function forget_rollup_hours() returns trigger
language plpgsql as $$
begin
  delete from rollup_hours r using (select distinct hour from added) a where r.hour = a.hour;
  return null;
end $$;
create trigger ip_hourly_forget_rollup_hours after insert on ip_hourly
  referencing new table as added for each statement execute function forget_rollup_hours();

-- The rollups of every stored day are to be (re)built: compaction builds the days of ip_hourly_dirty.
-- Used when something they were built from changes besides ingest (reclassification changes countries).
create function invalidate_rollups() returns void
language sql as $$
  insert into ip_hourly_dirty (day)
  select distinct (hour at time zone 'UTC')::date from rollup_hours
  on conflict do nothing;
  delete from rollup_hours;
$$;

create or replace function ensure_attack_partitions(from_day date, to_day date) returns integer
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
    if to_regclass('ip_daily_' || suffix) is null then
      execute format('create table if not exists %I partition of ip_daily for values from (%L) to (%L)',
        'ip_daily_' || suffix, d, d + 1);
    end if;
    d := d + 1;
  end loop;
  return made;
end $$;

-- Drops the daily partitions of events, ip_hourly and ip_daily that end before `before` (retention).
create or replace function drop_attack_partitions_before(before timestamptz) returns integer
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
    where p.relname in ('events', 'ip_hourly', 'ip_daily')
      and c.relname ~ '_[0-9]{8}$'
      and (to_date(right(c.relname, 8), 'YYYYMMDD') + 1)::timestamp at time zone 'UTC' <= before
  loop
    execute format('drop table %I', r.relname);
    dropped := dropped + 1;
  end loop;
  return dropped;
end $$;

-- ip_daily partitions beside the existing days, and every stored day's rollups to build.
select ensure_attack_partitions(to_date(right(c.relname, 8), 'YYYYMMDD'), to_date(right(c.relname, 8), 'YYYYMMDD'))
from pg_inherits i
join pg_class c on c.oid = i.inhrelid
join pg_class p on p.oid = i.inhparent
where p.relname = 'ip_hourly' and c.relname ~ '_[0-9]{8}$';

insert into ip_hourly_dirty (day)
select to_date(right(c.relname, 8), 'YYYYMMDD')
from pg_inherits i
join pg_class c on c.oid = i.inhrelid
join pg_class p on p.oid = i.inhparent
where p.relname = 'ip_hourly' and c.relname ~ '_[0-9]{8}$'
on conflict do nothing;
