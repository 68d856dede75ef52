-- ip_hourly becomes append-only: each ingest batch appends its own partial rows (docs/data-model.md), and
-- every reader already sums them per address over the window's hours. Upserting the rows one (hour, address)
-- key at a time cost PostgreSQL more than storing the raw events did. Compaction merges the partial rows of
-- the days ingest marks here (api-server/retention/compaction.ts).
alter table ip_hourly drop constraint ip_hourly_pkey;

create table ip_hourly_dirty (
  day date primary key
);
