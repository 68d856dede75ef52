-- The version of the data lists are made of (addresses and ip_hourly), kept by PostgreSQL itself: every
-- statement that writes either table bumps it at its end, in the writer's own transaction, so a reader's
-- snapshot sees a version and exactly the data committed with it. A list answer's ETag is derived from it,
-- the normalised query and the window's end (docs/http-api.md "Validators"): known before the list is
-- read, so the first answer carries it and a conditional request is answered 304 without reading the list.
--
-- Writers update the one row, so they queue on it until they commit; writers of attack data already take
-- turns (db/locks.ts). The triggers are on the parent tables: writers of ip_hourly go through the parent
-- (a statement on a partition alone would not bump the version), and dropping old partitions changes no
-- answer (they lie outside every window). `epoch` tells databases apart, so two stores never share an ETag.
create table list_data_version (
  only_row boolean primary key default true check (only_row),
  version bigint not null,
  epoch uuid not null default gen_random_uuid()
);
insert into list_data_version (version) values (1);

create function bump_list_data_version() returns trigger
language plpgsql as $$
begin
  update list_data_version set version = version + 1;
  return null;
end $$;

create trigger addresses_list_data_version after insert or update or delete or truncate on addresses
  for each statement execute function bump_list_data_version();
create trigger ip_hourly_list_data_version after insert or update or delete or truncate on ip_hourly
  for each statement execute function bump_list_data_version();
