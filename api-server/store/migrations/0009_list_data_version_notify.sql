-- Live lists (docs/http-api.md "Live lists"): every change of the list data version is announced on the
-- channel blockfeed_list_data_version, with `<epoch>:<version>` as payload, and the row remembers when the
-- data last changed (the X-Blocklist-Data-Changed header; clock_timestamp(): the end of the writing
-- statement, not the start of its transaction, so a long ingest window still reads as recent).
--
-- NOTIFY from the trigger runs in the writer's transaction: PostgreSQL delivers it only if that transaction
-- commits, after the commit, and only once its changes are visible to new snapshots, so a server woken by it
-- reads the new data; a rolled-back write announces nothing. Notices of one transaction arrive together and
-- in order; a listener keeps the highest version it was told of.
alter table list_data_version add column changed_at timestamptz not null default clock_timestamp();

create or replace function bump_list_data_version() returns trigger
language plpgsql as $$
declare
  bumped text;
begin
  update list_data_version set version = version + 1, changed_at = clock_timestamp()
    returning epoch::text || ':' || version::text into bumped;
  perform pg_notify('blockfeed_list_data_version', bumped);
  return null;
end $$;
