-- Removal requests and the operator's exclusions (docs/data-model.md "Exclusions"). A removal request is what
-- a listed network asked for on the website; nothing changes until the operator decides. An exclusion keeps
-- an address or network out of every list, export, scan list and check answer, made by the operator directly
-- or by approving a request; its events are still stored and counted in statistics. Rows are never deleted:
-- a decision and a removed exclusion stay on record.

create table removal_requests (
  id serial primary key,
  -- Who asked, to be answered (lower-cased, checked like an account's address).
  email text not null,
  -- The address (as a /32 or /128) or network to be left out, without host bits; IPv4-mapped IPv6 as IPv4.
  network cidr not null,
  reason text not null,
  status text not null default 'pending' check (status in ('pending', 'approved', 'rejected')),
  created_at timestamptz not null default now(),
  -- The requester's client network (an IPv6 client by its /64), as the throttles count it.
  client_network text not null,
  -- The website's language the request was made in (the acknowledgement's).
  lang text not null,
  decided_at timestamptz,
  -- The operator's login name, as `blockfeed removals approve|reject` ran.
  decided_by text,
  note text,
  check ((status = 'pending') = (decided_at is null))
);

-- The caps on pending requests (per network, per client network, in all) count these rows.
create index removal_requests_pending on removal_requests (network) where status = 'pending';

-- Addresses as a range type, so that every active exclusion can be one multirange and "is this address
-- excluded" a binary search in it (query/list-sql.ts). inet orders all IPv4 before all IPv6.
create type inet_range as range (subtype = inet);

create table exclusions (
  id serial primary key,
  network cidr not null,
  -- The network's first and last address as a range, for the lists' guard.
  span inet_range not null generated always as (inet_range(
    set_masklen(network::inet, case family(network) when 4 then 32 else 128 end),
    set_masklen(broadcast(network), case family(network) when 4 then 32 else 128 end),
    '[]')) stored,
  reason text not null,
  created_at timestamptz not null default now(),
  created_by text not null,
  -- Lists leave the network out until this instant (null: until removed).
  until timestamptz,
  -- The removal request it was approved from; null when the operator added it directly.
  removal_request_id integer references removal_requests (id),
  -- `blockfeed exclusions remove`: kept on record, no longer honoured.
  removed_at timestamptz,
  removed_by text
);

-- "Which exclusions cover this address" (the check's answer, the CLI) without a scan.
create index exclusions_network on exclusions using gist (network inet_ops);

-- Lists read exclusions, so their data version moves with every change (0007, 0009): ETags and 304s stay
-- truthful and long polls wake.
create trigger exclusions_list_data_version after insert or update or delete or truncate on exclusions
  for each statement execute function bump_list_data_version();

-- And every server drops the lists it keeps (http/exclusion-changes.ts): a kept list may hold an address it
-- must leave out now. The payload is the data version the change moved to (statement triggers fire in the
-- order of their names, so after the bump), below which no list is kept or read from a standby again. Like
-- every NOTIFY, it is delivered only if the writing transaction commits, and after it does.
create function announce_exclusions_change() returns trigger
language plpgsql as $$
begin
  perform pg_notify('blockfeed_exclusions_changed', (select epoch::text || ':' || version::text from list_data_version));
  return null;
end $$;

create trigger exclusions_notify after insert or update or delete or truncate on exclusions
  for each statement execute function announce_exclusions_change();
