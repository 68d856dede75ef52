import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyRetention, maintain } from '../../../../api-server/retention/retention.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';

const DAY = 86_400_000;
const NOW = new Date(Date.UTC(2026, 10, 22, 12));
const day = (offset: number) => new Date(NOW.getTime() - (NOW.getTime() % DAY) + offset * DAY).toISOString().slice(0, 10);

describe('retention', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => db.drop());

  const partitions = async (parent: string) => {
    const { rows } = await db.pool.query<{ name: string }>(
      `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
       where p.relname = $1 order by 1`,
      [parent],
    );
    return rows.map((r) => r.name);
  };

  it('drops only the daily partitions that ended more than 32 days ago, and addresses not seen since', async () => {
    await db.pool.query('select ensure_attack_partitions($1::date, $2::date)', [day(-40), day(0)]);
    for (const [offset, ip] of [[-35, '203.0.113.1'], [-32, '203.0.113.2'], [-31, '203.0.113.3'], [0, '203.0.113.4']] as const) {
      const ts = new Date(NOW.getTime() + offset * DAY);
      await db.pool.query(
        `insert into events (ts, id, src_ip, source, sensor) values ($1, gen_random_uuid(), $2, 'honeypot', 'hp')`,
        [ts, ip],
      );
      await db.pool.query(
        `insert into ip_hourly (hour, ip, attacks, first_seen, last_seen) values (date_bin('1 hour', $1::timestamptz, 'epoch'), $2, 1, $1, $1)`,
        [ts, ip],
      );
      await db.pool.query('insert into addresses (ip, first_seen, last_seen) values ($2, $1, $1)', [ts, ip]);
    }
    const r = await applyRetention(db.pool, NOW);
    // cutoff = NOW - 32 days = day(-32) 12:00: days up to day(-33) have ended; day(-32) has not.
    expect(r.droppedPartitions).toBe(3 * 8); // day(-40) … day(-33), events, ip_hourly and ip_daily each
    const kept = (await partitions('events')).map((n) => n.slice(-8));
    expect(kept[0]).toBe(day(-32).replaceAll('-', ''));
    expect(kept).toHaveLength(33);
    expect((await partitions('ip_hourly')).length).toBe(33);
    const { rows } = await db.pool.query<{ ip: string }>('select host(src_ip) as ip from events order by ts');
    expect(rows.map((x) => x.ip)).toEqual(['203.0.113.2', '203.0.113.3', '203.0.113.4']);
    const { rows: addrs } = await db.pool.query<{ ip: string }>('select host(ip) as ip from addresses order by ip');
    // .2 was last seen exactly at the cutoff: still inside.
    expect(addrs.map((x) => x.ip)).toEqual(['203.0.113.2', '203.0.113.3', '203.0.113.4']);
    expect(r.removedAddresses).toBe(1);

    const again = await applyRetention(db.pool, NOW);
    expect(again).toMatchObject({ droppedPartitions: 0, removedAddresses: 0 });
  });

  it('makes the partitions of today and the next two days ahead of any ingest', async () => {
    const later = new Date(NOW.getTime() + 10 * DAY);
    await maintain(db.pool, later);
    const days = (await partitions('events')).map((n) => n.slice(-8));
    for (const offset of [10, 11, 12]) expect(days).toContain(day(offset).replaceAll('-', ''));
    expect(days).not.toContain(day(13).replaceAll('-', ''));
    expect((await partitions('ip_hourly')).map((n) => n.slice(-8))).toContain(day(12).replaceAll('-', ''));
  });
});
