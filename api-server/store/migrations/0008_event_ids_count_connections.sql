-- Event ids count the connection an event came on from this version on (docs/data-model.md "Event ids"):
-- hydra's parallel attempts in one millisecond are distinct events. The events stored before have ids
-- without it. So that a file stored then adds nothing when ingested again, events up to the newest one
-- stored now keep getting their ids the old way; none when nothing is stored yet. Ingest reads this once.
insert into instance_settings (key, value)
select 'event_ids_legacy_until', to_jsonb(ceil(extract(epoch from max(ts)) * 1000)::bigint)
from events
having max(ts) is not null;
