// Attack data for API tests and benchmarks, written into events / ip_hourly / addresses exactly as
// docs/data-model.md describes ingest leaving them (until ingest itself can be used). Times are given in
// hours before `now`.
import type pg from 'pg';
import { SERVICES, type Service } from '../../common/vocabulary.ts';

export interface FixtureAddress {
  ip: string;
  /** Hours ago the honeypot / telescope last saw it (at least one). */
  honeypot?: number;
  telescope?: number;
  /** Hours ago of the last honeypot interaction (action >= 1), authentication (high) and command (critical). */
  interaction?: number;
  high?: number;
  critical?: number;
  services?: Partial<Record<Service, number>>;
  /** Hours ago it was last confirmed by two sensors or both sources. */
  confirmed?: number;
  country?: string;
  province?: string;
  isp?: '电信' | '联通' | '移动';
  net?: 'idc' | 'broadband' | 'mobile' | 'edu';
  asn?: number;
  scannerKind?: 'research_scanner' | 'asset_scanner';
  attacks?: number;
  ports?: number[];
  command?: string;
}

function ago(now: Date, hours: number | undefined): Date | null {
  return hours === undefined ? null : new Date(now.getTime() - hours * 3_600_000);
}

function hourOf(at: Date): Date {
  return new Date(Math.floor(at.getTime() / 3_600_000) * 3_600_000);
}

function day(at: Date): string {
  return at.toISOString().slice(0, 10);
}

export async function ensurePartitions(pool: pg.Pool, now: Date, days = 32): Promise<void> {
  await pool.query('select ensure_attack_partitions($1::date, $2::date)', [day(new Date(now.getTime() - days * 86_400_000)), day(new Date(now.getTime() + 86_400_000))]);
}

export async function insertAddresses(pool: pg.Pool, list: FixtureAddress[], now = new Date()): Promise<void> {
  await ensurePartitions(pool, now);
  const sensorIds = new Map<string, number>();
  for (const name of ['hp-1', 'hp-2', 'scope-1']) {
    const { rows } = await pool.query<{ id: number }>(
      'insert into sensors (name) values ($1) on conflict (name) do update set name = excluded.name returning id',
      [name],
    );
    sensorIds.set(name, rows[0]?.id ?? 0);
  }
  // Ingest may keep confirmed_at as a column generated from the sensor sightings; write it only when it is not.
  const { rows: generated } = await pool.query<{ g: string }>(
    `select is_generated as g from information_schema.columns where table_name = 'addresses' and column_name = 'confirmed_at'`,
  );
  const writeConfirmed = generated[0]?.g !== 'ALWAYS';
  for (const a of list) {
    const lastHoneypot = ago(now, a.honeypot);
    const lastTelescope = ago(now, a.telescope);
    const seen = [lastHoneypot, lastTelescope].filter((d): d is Date => d !== null);
    if (!seen.length) throw new Error(`fixture ${a.ip}: needs honeypot or telescope`);
    const lastSeen = new Date(Math.max(...seen.map((d) => d.getTime())));
    const firstSeen = new Date(Math.min(...seen.map((d) => d.getTime())) - 3_600_000);
    const serviceLast = SERVICES.map((s) => ago(now, a.services?.[s]));
    const serviceMask = SERVICES.reduce((m, s, i) => (a.services?.[s] !== undefined ? m | (1 << i) : m), 0);
    const ports = a.ports ?? [22];
    const action = a.critical !== undefined ? 2 : a.interaction !== undefined || a.high !== undefined ? 1 : 0;
    // Sensor sightings newest first: the honeypot's and the telescope's sensors, plus a second honeypot
    // sensor at the confirmation time, so that confirmed_at (two sensors or both sources) comes out as asked.
    const sightings: [string, Date][] = [];
    if (lastHoneypot) sightings.push(['hp-1', lastHoneypot]);
    if (lastTelescope) sightings.push(['scope-1', lastTelescope]);
    const confirmedAt = ago(now, a.confirmed);
    if (confirmedAt && !(lastHoneypot && lastTelescope)) sightings.push(['hp-2', confirmedAt]);
    sightings.sort((x, y) => y[1].getTime() - x[1].getTime());
    const columns = ['ip', 'first_seen', 'last_seen', 'last_honeypot', 'last_telescope', 'last_interaction', 'last_high', 'last_critical',
      'service_last', 'sensor_ids', 'sensor_last', 'country', 'province', 'isp', 'asn', 'net', 'scanner_kind'];
    const values: unknown[] = [
      a.ip, firstSeen, lastSeen, lastHoneypot, lastTelescope, ago(now, a.interaction), ago(now, a.high), ago(now, a.critical),
      serviceLast, sightings.map(([name]) => sensorIds.get(name)), sightings.map(([, at]) => at),
      a.country ?? null, a.province ?? null, a.isp ?? null, a.asn ?? null, a.net ?? null, a.scannerKind ?? null,
    ];
    if (writeConfirmed) {
      columns.push('confirmed_at');
      values.push(confirmedAt);
    }
    await pool.query(`insert into addresses (${columns.join(', ')}) values (${columns.map((_, i) => `$${i + 1}`).join(', ')})`, values);
    await pool.query(
      `insert into ip_hourly (hour, ip, attacks, services, sources, max_action, ports, sensors, first_seen, last_seen)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $9)`,
      [hourOf(lastSeen), a.ip, a.attacks ?? 1, serviceMask, (lastHoneypot ? 1 : 0) | (lastTelescope ? 2 : 0), action, ports, [], lastSeen],
    );
    const firstService = SERVICES.find((s) => a.services?.[s] !== undefined) ?? null;
    await pool.query(
      `insert into events (ts, id, src_ip, dst_port, service, proto, source, sensor, action, command)
       values ($1, gen_random_uuid(), $2, $3, $4, 'tcp', $5, $6, $7, $8)`,
      [lastSeen, a.ip, ports[0] ?? null, firstService, lastHoneypot ? 'honeypot' : 'telescope', lastHoneypot ? 'hp-1' : 'scope-1', action, a.command ?? null],
    );
  }
}

/**
 * `count` distinct addresses (11.0.0.0 upwards, IPv4: global space, which lists publish) all seen by the
 * telescope within the last `withinHours`, with one ip_hourly row each. Made by generate_series in one
 * statement each: a million rows in seconds.
 */
export async function generateAddresses(pool: pg.Pool, count: number, withinHours: number, now = new Date()): Promise<void> {
  await ensurePartitions(pool, now);
  await pool.query(
    `insert into addresses (ip, first_seen, last_seen, last_telescope, service_last, country, net)
     select '11.0.0.0'::inet + g, t - interval '1 hour', t, t, array[t]::timestamptz[], 'CN', 'idc'
     from generate_series(0, $1::int - 1) g,
          lateral (select $2::timestamptz - ((g % ($3::int * 60)) * interval '1 minute') as t) x`,
    [count, now, withinHours - 1],
  );
  await pool.query(
    `insert into ip_hourly (hour, ip, attacks, services, sources, max_action, ports, first_seen, last_seen)
     select date_trunc('hour', last_seen), ip, 1, 1, 2, 0, '{22}', last_seen, last_seen from addresses
     on conflict do nothing`,
  );
  await pool.query('analyze addresses');
  await pool.query('analyze ip_hourly');
}
