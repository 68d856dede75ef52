// Property: whatever the events and however they arrive (batches, duplicates, re-ingests), the rollups equal
// a brute-force aggregation over the raw events, for any hour-aligned window.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICES, serviceOfPort } from '../../../../common/vocabulary.ts';
import { parseAddress } from '../../../../common/ip.ts';
import { sharedEnricher } from '../../../../api-server/enrich/enricher.ts';
import type { Action } from '../../../../api-server/classify/classification.ts';
import { withId, type AttackEvent } from '../../../../api-server/ingest/event.ts';
import { EventBatch } from '../../../../api-server/ingest/batch.ts';
import { EventWriter } from '../../../../api-server/ingest/writer.ts';
import { compactHourly } from '../../../../api-server/retention/compaction.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';

const H = 3_600_000;
const BASE = Date.UTC(2026, 10, 20, 0);
const IPS = ['222.85.85.85', '61.135.169.125', '117.136.0.1', '162.142.125.7', '2001:db8::7', '8.8.8.8'];
const SENSORS = ['hp-1', 'hp-2', 'hp-3', 'tel-1'];
const PORTS = [22, 23, 80, 445, 3389, 5432, 6379, 8080, 60001];

const eventArb = fc
  .record({
    minute: fc.integer({ min: 0, max: 24 * 60 - 1 }),
    ms: fc.integer({ min: 0, max: 59_999 }),
    ip: fc.constantFrom(...IPS),
    port: fc.option(fc.constantFrom(...PORTS), { nil: null }),
    telescope: fc.boolean(),
    sensor: fc.constantFrom(...SENSORS),
    action: fc.constantFrom<Action>(0, 1, 2),
    username: fc.option(fc.constantFrom('root', 'admin'), { nil: null }),
  })
  .map(({ minute, ms, ip, port, telescope, sensor, action, username }): AttackEvent => {
    const service = port === null ? null : (serviceOfPort(port) ?? null);
    return withId({
      ts: BASE + minute * 60_000 + ms,
      src: parseAddress(ip) as AttackEvent['src'],
      dstPort: port,
      service,
      proto: 'tcp',
      source: telescope ? 'telescope' : 'honeypot',
      sensor,
      action: telescope ? 0 : action,
      username: telescope ? null : username,
      command: null,
    });
  });

interface Aggregate {
  attacks: number;
  services: number;
  sources: number;
  maxAction: number;
  ports: number[];
  sensors: string[];
  firstSeen: number;
  lastSeen: number;
}

function bruteForce(events: AttackEvent[], since: number): Map<string, Aggregate> {
  const out = new Map<string, Aggregate>();
  const unique = new Map(events.map((e) => [`${e.ts}|${e.id}`, e]));
  for (const e of unique.values()) {
    if (e.ts < since) continue;
    const a = out.get(e.src.text) ?? { attacks: 0, services: 0, sources: 0, maxAction: 0, ports: [], sensors: [], firstSeen: e.ts, lastSeen: e.ts };
    a.attacks++;
    if (e.service) a.services |= 1 << SERVICES.indexOf(e.service);
    a.sources |= e.source === 'honeypot' ? 1 : 2;
    a.maxAction = Math.max(a.maxAction, e.action);
    if (e.dstPort !== null && !a.ports.includes(e.dstPort)) a.ports.push(e.dstPort);
    if (!a.sensors.includes(e.sensor)) a.sensors.push(e.sensor);
    a.firstSeen = Math.min(a.firstSeen, e.ts);
    a.lastSeen = Math.max(a.lastSeen, e.ts);
    out.set(e.src.text, a);
  }
  for (const a of out.values()) {
    a.ports.sort((x, y) => x - y);
    a.sensors.sort();
  }
  return out;
}

/** Stores `batches` in one window of `writer`, a batch at a time, as the ingest pipeline does. */
async function writeWindow(writer: EventWriter, batches: AttackEvent[][]): Promise<void> {
  const window = writer.window();
  try {
    for (const events of batches) {
      const batch = new EventBatch(window.facts, writer.sensors);
      for (const e of events) batch.add(e);
      if (batch.count) await window.store(batch);
    }
    await window.commit();
  } finally {
    await window.abort();
  }
}

describe('rollups', () => {
  let db: TestDatabase;
  let writer: EventWriter;
  beforeAll(async () => {
    db = await freshDatabase();
    writer = new EventWriter(db.pool, sharedEnricher);
  });
  afterAll(async () => db.drop());

  it('appends a partial row per batch for the same hour and address, and compaction merges them', async () => {
    await db.pool.query('truncate events, ip_hourly, addresses, ip_hourly_dirty');
    const [a, b] = fc.sample(eventArb, { numRuns: 2, seed: 7 });
    const src = parseAddress('61.135.169.125') as AttackEvent['src'];
    const first = { ...(a as AttackEvent), ts: BASE + 60_000, src, dstPort: 22, service: 'ssh' as const };
    const second = { ...(b as AttackEvent), ts: BASE + 120_000, src, dstPort: 80, service: 'web' as const, id: '00000000-0000-4000-8000-000000000002' };
    await writer.write([first]);
    await writer.write([second]);
    const rows = async () =>
      (await db.pool.query<{ attacks: number; ports: number[] }>('select attacks, ports from ip_hourly order by attacks, ports')).rows;
    expect(await rows()).toEqual([{ attacks: 1, ports: [22] }, { attacks: 1, ports: [80] }]);
    expect(await compactHourly(db.pool)).toEqual({ days: 1, mergedRows: 1 });
    expect(await rows()).toEqual([{ attacks: 2, ports: [22, 80] }]);
    // The mark is cleared: a second run has nothing to do.
    expect(await compactHourly(db.pool)).toEqual({ days: 0, mergedRows: 0 });
  });

  it('ip_hourly and addresses equal a brute-force aggregation over raw events for random windows', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(eventArb, { minLength: 20, maxLength: 300, size: "medium" }),
        fc.array(fc.integer({ min: 1, max: 25 }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.integer({ min: 0, max: 24 }), { minLength: 1, maxLength: 5 }),
        fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 1, maxLength: 3 }),
        fc.boolean(),
        async (events, batchSizes, windowStarts, windowSizes, compact) => {
          await db.pool.query('truncate events, ip_hourly, addresses, ip_hourly_dirty');
          // Arrive in batches of varying size, grouped into windows (transactions) of one to four batches, then
          // re-ingest a slice (duplicates must add nothing). Batches overlap their predecessor by a few events,
          // so some batches are partly stored already, some even by the same window.
          const batches: AttackEvent[][] = [];
          let pos = 0;
          for (let i = 0; pos < events.length; i++) {
            const size = batchSizes[i % batchSizes.length] as number;
            batches.push(events.slice(Math.max(0, pos - (i % 3)), pos + size));
            pos += size;
          }
          for (let i = 0, w = 0; i < batches.length; w++) {
            const n = windowSizes[w % windowSizes.length] as number;
            await writeWindow(writer, batches.slice(i, i + n));
            i += n;
          }
          await writer.write(events.slice(0, Math.ceil(events.length / 2)));
          if (compact) {
            await compactHourly(db.pool);
            const { rows: dups } = await db.pool.query('select hour, ip from ip_hourly group by hour, ip having count(*) > 1');
            expect(dups).toEqual([]);
          }

          for (const startHour of windowStarts) {
            const since = BASE + startHour * H;
            const expected = bruteForce(events, since);
            const { rows } = await db.pool.query<{ ip: string; attacks: number; services: number; sources: number; max_action: number; ports: number[]; sensors: string[]; first_seen: Date; last_seen: Date }>(
              `select host(h.ip) as ip, sum(attacks)::int as attacks, bit_or(services) as services, bit_or(sources)::int as sources,
                      max(max_action)::int as max_action,
                      (select array_agg(distinct p order by p) from ip_hourly h2, unnest(h2.ports) p where h2.ip = h.ip and h2.hour >= $1) as ports,
                      (select array_agg(distinct s.name order by s.name) from ip_hourly h2, unnest(h2.sensors) i join sensors s on s.id = i
                        where h2.ip = h.ip and h2.hour >= $1) as sensors,
                      min(first_seen) as first_seen, max(last_seen) as last_seen
               from ip_hourly h where hour >= $1 group by h.ip`,
              [new Date(since)],
            );
            const actual = new Map(
              rows.map((r) => [
                r.ip,
                { attacks: r.attacks, services: r.services, sources: r.sources, maxAction: r.max_action, ports: r.ports ?? [], sensors: r.sensors,
                  firstSeen: r.first_seen.getTime(), lastSeen: r.last_seen.getTime() },
              ]),
            );
            expect(actual).toEqual(expected);
          }

          // addresses keeps "the last time each fact held"; compare with the same facts computed directly.
          const all = [...new Map(events.map((e) => [`${e.ts}|${e.id}`, e])).values()];
          const { rows: addrs } = await db.pool.query<{ ip: string; facts: (number | null)[]; service_last: (number | null)[]; sensors: string[]; lasts: number[]; confirmed: number | null }>(
            `select host(ip) as ip,
                    array[extract(epoch from first_seen), extract(epoch from last_seen), extract(epoch from last_honeypot),
                          extract(epoch from last_telescope), extract(epoch from last_interaction), extract(epoch from last_high),
                          extract(epoch from last_critical)]::float8[] as facts,
                    (select array_agg(extract(epoch from t)::float8 order by i) from unnest(service_last) with ordinality u(t, i)) as service_last,
                    (select array_agg(s.name order by i) from unnest(sensor_ids) with ordinality u(id, i) join sensors s on s.id = u.id) as sensors,
                    (select array_agg(extract(epoch from t)::float8 order by i) from unnest(sensor_last) with ordinality u(t, i)) as lasts,
                    extract(epoch from confirmed_at)::float8 as confirmed
             from addresses`,
          );
          expect(addrs.length).toBe(new Set(all.map((e) => e.src.text)).size);
          const sec = (ms: number | undefined) => (ms === undefined ? null : ms / 1000);
          for (const a of addrs) {
            const mine = all.filter((e) => e.src.text === a.ip);
            const max = (f: (e: AttackEvent) => boolean) => sec(mine.filter(f).reduce<number | undefined>((m, e) => Math.max(m ?? e.ts, e.ts), undefined));
            expect(a.facts).toEqual([
              sec(Math.min(...mine.map((e) => e.ts))),
              max(() => true),
              max((e) => e.source === 'honeypot'),
              max((e) => e.source === 'telescope'),
              max((e) => e.source === 'honeypot' && e.action >= 1),
              max((e) => e.action >= 1),
              max((e) => e.action === 2),
            ]);
            expect(a.service_last).toEqual(SERVICES.map((s) => max((e) => e.service === s)));
            const perSensor = [...new Set(mine.map((e) => e.sensor))]
              .map((s) => ({ s, last: Math.max(...mine.filter((e) => e.sensor === s).map((e) => e.ts)) }))
              .sort((x, y) => y.last - x.last || 0);
            expect(a.lasts).toEqual(perSensor.map((p) => p.last / 1000));
            expect(new Set(a.sensors)).toEqual(new Set(perSensor.map((p) => p.s)));
            const hp = max((e) => e.source === 'honeypot');
            const tel = max((e) => e.source === 'telescope');
            const second = perSensor[1] ? perSensor[1].last / 1000 : null;
            const both = hp !== null && tel !== null ? Math.min(hp, tel) : null;
            expect(a.confirmed).toBe(second === null ? both : both === null ? second : Math.max(second, both));
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});
