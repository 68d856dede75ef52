// The events table holds exactly what was parsed: every column of every event survives the binary COPY
// encoding (batch.ts) — addresses of both families, NULLs, texts needing escapes in other encodings, the
// edges of the port range and millisecond timestamps.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedEnricher } from '../../../../api-server/enrich/enricher.ts';
import type { AttackEvent } from '../../../../api-server/ingest/event.ts';
import { EventWriter } from '../../../../api-server/ingest/writer.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';
import { sshLogin } from '../../../support/events.ts';

const BASE = Date.UTC(2026, 10, 20, 13, 7, 9, 45);

const event = (over: Parameters<typeof sshLogin>[0]): AttackEvent => sshLogin({ ts: BASE, ...over });

const EVENTS: AttackEvent[] = [
  event({}),
  event({ ts: BASE + 1, src: '2001:db8::7', dstPort: 65535, service: null, action: 0, username: null }),
  event({ ts: BASE - 86_400_000 + 999, src: '0.0.0.1', dstPort: 0, proto: null, username: '' }),
  event({ ts: BASE + 2, src: '255.255.255.254', dstPort: null, service: null, source: 'telescope', sensor: 'tel 1', action: 0, username: null }),
  event({ ts: BASE + 3, action: 2, username: null, command: 'echo "a\tb\\c"\nwget http://x/é✓𝄞; \r\\N' }),
  event({ ts: BASE + 4, src: '2a03:b0c0:3:d0::1a:1', sensor: 'датчик-北京', username: 'ünïcode' }),
];

let db: TestDatabase;
beforeAll(async () => {
  db = await freshDatabase();
});
afterAll(async () => {
  await db.drop();
});

describe('stored events', () => {
  it('keep every column as parsed', async () => {
    const writer = new EventWriter(db.pool, sharedEnricher);
    expect(await writer.write(EVENTS)).toBe(EVENTS.length);
    // Stored again, together with a new one: the duplicates go the INSERT … ON CONFLICT way, same bytes.
    const extra = event({ ts: BASE + 5 });
    expect(await writer.write([...EVENTS, extra])).toBe(1);
    const { rows } = await db.pool.query<Record<string, unknown>>(
      `select (extract(epoch from ts) * 1000)::float8 as ts, id::text, host(src_ip) as src, dst_port, service, proto,
              source, sensor, action, username, command
       from events order by ts, id`,
    );
    const expected = [...EVENTS, extra]
      .sort((x, y) => x.ts - y.ts || (x.id < y.id ? -1 : 1))
      .map((e) => ({
        ts: e.ts, id: e.id, src: e.src.text, dst_port: e.dstPort, service: e.service, proto: e.proto, source: e.source,
        sensor: e.sensor, action: e.action, username: e.username, command: e.command,
      }));
    expect(rows).toEqual(expected);
  });
});
