// `blockfeed ingest` as a user runs it, against a real PostgreSQL.
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../../../support/cli.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';

const sample = (name: string) => fileURLToPath(new URL(`../../../../examples/sensor-logs/${name}`, import.meta.url));

describe('blockfeed ingest', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshDatabase();
  });
  afterAll(async () => db.drop());

  const counts = async () => {
    const { rows } = await db.pool.query<Record<string, number>>(`
      select (select count(*)::int from events) as events,
             (select count(*)::int from ip_hourly) as hourly,
             (select coalesce(sum(attacks), 0)::int from ip_hourly) as attacks,
             (select count(*)::int from addresses) as addresses,
             (select count(*)::int from sensors) as sensors`);
    return rows[0];
  };

  it('stores the good lines, reports the bad ones as file:line: reason and exits 1', async () => {
    const r = await runCli(['ingest', sample('cowrie.json'), '--format', 'cowrie'], { DATABASE_URL: db.url, LOG_LEVEL: 'warn' });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('8 new events stored from 14 lines (0 already stored, 4 rejected, 2 without an attack, 0 from non-global sources, not stored)');
    expect(r.stderr).toContain(`${sample('cowrie.json')}:10: src_ip "not-an-ip" is not an IP address`);
    expect(r.stderr).toContain(`${sample('cowrie.json')}:14: eventid is missing`);
    expect(await counts()).toMatchObject({ events: 8, attacks: 8 });
  });

  it('leaves every count unchanged when the same file is ingested again', async () => {
    const before = await counts();
    const { rows: addrBefore } = await db.pool.query('select * from addresses order by ip');
    const r = await runCli(['ingest', sample('cowrie.json'), '--format', 'cowrie'], { DATABASE_URL: db.url, LOG_LEVEL: 'warn' });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('0 new events stored from 14 lines (8 already stored');
    expect(await counts()).toEqual(before);
    const { rows: addrAfter } = await db.pool.query('select * from addresses order by ip');
    expect(addrAfter).toEqual(addrBefore);
  });

  it('reads several files and stdin, enriches and rolls up what it stores', async () => {
    const r = await runCli(['ingest', sample('telescope.csv'), '-', '--format', 'telescope-csv'], { DATABASE_URL: db.url, LOG_LEVEL: 'warn' },
      'ts,src_ip,dst_port,proto\n2026-11-21T06:00:00Z,222.85.85.85,22,tcp\n');
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('6 new events stored');
    const { rows } = await db.pool.query(`
      select host(ip) as ip, country, province, isp, net, scanner_kind, last_honeypot is not null as honeypot,
             last_telescope is not null as telescope, last_critical is not null as critical, confirmed_at is not null as confirmed,
             array_length(sensor_ids, 1) as sensors
      from addresses where host(ip) in ('222.85.85.85', '162.142.125.7') order by ip`);
    expect(rows).toEqual([
      { ip: '162.142.125.7', country: 'US', province: null, isp: null, net: 'broadband', scanner_kind: 'research_scanner', honeypot: false, telescope: true, critical: false, confirmed: false, sensors: 1 },
      { ip: '222.85.85.85', country: 'CN', province: '河南省', isp: '电信', net: 'broadband', scanner_kind: null, honeypot: true, telescope: true, critical: true, confirmed: true, sensors: 2 },
    ]);
  });

  it('exits 2 when nothing could be stored, 0 when every line was', async () => {
    const bad = await runCli(['ingest', '-', '--format', 'native'], { DATABASE_URL: db.url, LOG_LEVEL: 'warn' }, '{"ts":"2026-11-21T07:00:00Z"}\nnope\n');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('stdin:1: src_ip is missing');
    const good = await runCli(['ingest', '--format', 'native', '--sensor', 'hp-x'], { DATABASE_URL: db.url, LOG_LEVEL: 'warn' },
      '{"ts":"2026-11-21T07:00:00Z","src_ip":"117.136.0.1","dst_port":3389}\n');
    expect(good.code).toBe(0);
    const missing = await runCli(['ingest', '/nonexistent.log', '--format', 'native'], { DATABASE_URL: db.url });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('/nonexistent.log: cannot read (ENOENT)');
  });

  it('counts and drops events from non-global sources, through the byte reader and the parsers alike', async () => {
    const cowrie = (src: string, i: number) =>
      `{"eventid":"cowrie.session.connect","src_ip":"${src}","src_port":4000${i},"dst_ip":"192.0.2.9","dst_port":22,"session":"ng${i}","protocol":"ssh","message":"x","sensor":"hp-ng","timestamp":"2026-11-21T10:00:0${i}.000000Z"}`;
    const sources = ['10.1.2.3', '127.0.0.5', '203.0.113.77', '100.64.1.1', '::1', 'fc00::5', '::ffff:192.168.1.1', '2001:db8::77'];
    const r = await runCli(['ingest', '-', '--format', 'cowrie'], { DATABASE_URL: db.url, LOG_LEVEL: 'warn' }, `${sources.map(cowrie).join('\n')}\n`);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('2 new events stored from 8 lines (0 already stored, 0 rejected, 0 without an attack, 6 from non-global sources, not stored)');
    const { rows } = await db.pool.query<{ ip: string }>("select host(src_ip) as ip from events where sensor = 'hp-ng' order by 1");
    expect(rows.map((row) => row.ip)).toEqual(['2001:db8::77', '203.0.113.77']);
    const { rows: known } = await db.pool.query<{ n: number }>("select count(*)::int as n from addresses where ip << '10.0.0.0/8' or ip << '127.0.0.0/8' or ip << 'fc00::/7' or ip = '::1'");
    expect(known[0]?.n).toBe(0);
  });

  it('fails cleanly on a bad configuration, or a store it cannot open', async () => {
    const before = await counts();
    const badConfig = await runCli(['ingest', sample('cowrie.json'), '--format', 'cowrie'], { DATABASE_URL: db.url, LOG_LEVEL: 'loud' });
    expect(badConfig.code).not.toBe(0);
    expect(badConfig.stderr).toContain('LOG_LEVEL');
    expect(badConfig.stdout).toBe('');
    // Nothing to store, and still the store must be there: no silent success.
    const unreachable = await runCli(['ingest', '-', '--format', 'native'], { DATABASE_URL: 'postgresql://nobody:x@127.0.0.1:1/none', LOG_LEVEL: 'warn' }, '');
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toBe('blockfeed: cannot use the database at 127.0.0.1:1/none as nobody: connection refused (ECONNREFUSED); set DATABASE_URL, or leave it unset for the embedded database\n');
    expect(await counts()).toEqual(before);
  });
});
