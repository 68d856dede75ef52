// Windows (writer.ts): an ingest commits in windows that close on size, age or a pause in the input, and
// however its input is cut into windows and batches, what it stores is the same.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sharedEnricher } from '../../../../api-server/enrich/enricher.ts';
import { parserFor } from '../../../../api-server/ingest/parsers/index.ts';
import { ingest, type IngestOptions } from '../../../../api-server/ingest/pipeline.ts';
import { EventWriter } from '../../../../api-server/ingest/writer.ts';
import { cowrieLines } from '../../../../bench/cowrie-gen.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';

const LINES = [...cowrieLines(3000, 5, Date.now() - 3_600_000, 30)];

let db: TestDatabase;
beforeAll(async () => {
  db = await freshDatabase();
});
afterAll(async () => {
  await db.drop();
});

/** Everything the ingest stored, summed so that how it was cut into rows does not matter. */
async function stored() {
  const { rows } = await db.pool.query<Record<string, string>>(`
    select (select count(*) from events) as events,
           (select md5(string_agg(id::text, ',' order by id)) from events) as ids,
           (select sum(attacks) from ip_hourly) as attacks,
           (select md5(string_agg(concat_ws('|', m.ip, m.hour, attacks, services, sources, max_action, first_seen, last_seen, p.ports, s.sensors), ','
                                  order by m.ip, m.hour))
              from (select ip, hour, sum(attacks) as attacks, bit_or(services) as services, bit_or(sources) as sources,
                           max(max_action) as max_action, min(first_seen) as first_seen, max(last_seen) as last_seen
                    from ip_hourly group by ip, hour) as m
              left join (select ip, hour, array_agg(distinct p order by p) as ports from ip_hourly, unnest(ports) as p group by ip, hour) as p
                on p.ip = m.ip and p.hour = m.hour
              left join (select ip, hour, array_agg(distinct s order by s) as sensors from ip_hourly, unnest(sensors) as s group by ip, hour) as s
                on s.ip = m.ip and s.hour = m.hour) as hourly,
           (select md5(string_agg(concat_ws('|', ip, first_seen, last_seen, last_honeypot, last_interaction, last_high, last_critical,
                                            service_last, sensor_last, country, asn, net), ',' order by ip)) from addresses) as addresses`);
  return rows[0];
}

async function ingestLines(options: Omit<IngestOptions, 'writer'>, stream: AsyncIterable<string | Buffer> | Iterable<string | Buffer> = [`${LINES.join('\n')}\n`]) {
  await db.pool.query('truncate events, ip_hourly, addresses, ip_hourly_dirty');
  const writer = new EventWriter(db.pool, sharedEnricher);
  return ingest([{ name: 'test', stream, parser: parserFor('cowrie') }], { writer, ...options });
}

describe('ingest windows', () => {
  it('store the same whether an input is one window of one batch, or many windows of small batches', async () => {
    const one = await ingestLines({});
    const whole = await stored();
    expect(one.inserted).toBe(LINES.length);
    const many = await ingestLines({ batchSize: 97, windowLimits: { addresses: 40 } });
    expect(many.inserted).toBe(LINES.length);
    expect(await stored()).toEqual(whole);
  });

  it('read a line cut across chunks as one line, though the input refills its chunk meanwhile', async () => {
    const text = Buffer.from(`${LINES.slice(0, 300).join('\n')}\n`);
    await ingestLines({}, [text]);
    const whole = await stored();
    const refilled = Buffer.alloc(997);
    const chunks = function* () {
      for (let at = 0; at < text.length; at += refilled.length) yield refilled.subarray(0, text.copy(refilled, 0, at, at + refilled.length));
    };
    expect((await ingestLines({}, chunks())).lines).toBe(300);
    expect(await stored()).toEqual(whole);
  });

  it('commit what a stream has sent when it pauses, before it ends, and store what follows as the rest', async () => {
    await ingestLines({}, [`${LINES.slice(0, 200).join('\n')}\n`]);
    const atOnce = await stored();
    let committedDuringPause: string | undefined;
    const stream = async function* () {
      yield `${LINES.slice(0, 100).join('\n')}\n`;
      // The stream goes quiet (the pipeline flushes after 100 ms of it) until the first lines are visible to
      // another connection, or 10 s have passed.
      const deadline = Date.now() + 10_000;
      do {
        await new Promise((resolve) => setTimeout(resolve, 50));
        committedDuringPause = (await db.pool.query<{ n: string }>('select count(*) as n from events')).rows[0]?.n;
      } while (committedDuringPause !== '100' && Date.now() < deadline);
      yield `${LINES.slice(100, 200).join('\n')}\n`;
    };
    const stats = await ingestLines({ windowLimits: { idleMilliseconds: 100 } }, stream());
    expect(committedDuringPause).toBe('100');
    expect(stats.inserted).toBe(200);
    // The lines after the pause went into a new window: their addresses and rollups too.
    expect(await stored()).toEqual(atOnce);
  });
});
