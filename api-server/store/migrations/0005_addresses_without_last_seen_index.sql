-- addresses loses its index on last_seen (docs/data-model.md, "Tables").
--
-- It served one kind of request: a short window over source=all on a large table, answered uncached (a
-- one-hour window over ~970,000 addresses: 6 ms through the index, 185 ms without it, what the honeypot and
-- telescope bases always cost, having no index). Every window's write paid for it: 80,803 new addresses took
-- PostgreSQL ~0.14 s more (a third of their cost), and 80,803 known ones ~0.25 s more (every update of
-- last_seen added an entry to it, and no update could stay within its page). Blocklists are pulled daily
-- over windows of a day or more, where most rows match and a sequential scan is the plan anyway, and
-- answers are cached.
drop index if exists addresses_last_seen;
