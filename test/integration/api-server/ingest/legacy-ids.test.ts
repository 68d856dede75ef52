// Ids stored before ids counted connections (docs/data-model.md "Event ids"): on a store that holds such
// events, migration 0008 records the newest one's time, and ingest gives events up to it the ids they had, so
// a file stored before the upgrade adds nothing when ingested again (through the CLI or the push route), while
// what comes after it counts connections.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../../common/logging.ts';
import { createRegistry } from '../../../../common/metrics.ts';
import { loadMigrations, migrate } from '../../../../api-server/store/migrate.ts';
import { sharedEnricher } from '../../../../api-server/enrich/enricher.ts';
import { buildServer } from '../../../../api-server/app.ts';
import { parserFor } from '../../../../api-server/ingest/parsers/index.ts';
import { ingest } from '../../../../api-server/ingest/pipeline.ts';
import { EventWriter, legacyIdsUntil } from '../../../../api-server/ingest/writer.ts';
import { runCli } from '../../../support/cli.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';

const TOKEN = 'test-ingest-token-0123456789';
const log = createLogger({ level: 'silent' });

/**
 * Cowrie lines of two parallel hydra tasks on `day`: both connect, then try root, in the same milliseconds;
 * then one runs a command. Five events, three of them alike but for their connection to one of the others.
 */
function hydraLog(day: string): string {
  const line = (session: string, srcPort: number, time: string, eventid: string, extra: Record<string, string>) =>
    JSON.stringify({
      session, protocol: 'ssh', src_ip: '198.51.100.7', src_port: srcPort, dst_ip: '192.0.2.1', dst_port: 2222, ...extra,
      eventid, sensor: 'hp-legacy', timestamp: `${day}T${time}Z`,
    });
  return [
    line('0000000000a1', 40001, '10:00:00.100100', 'cowrie.session.connect', {}),
    line('0000000000b2', 40002, '10:00:00.100900', 'cowrie.session.connect', {}),
    line('0000000000a1', 40001, '10:00:01.500200', 'cowrie.login.failed', { username: 'root', password: '123456' }),
    line('0000000000b2', 40002, '10:00:01.500700', 'cowrie.login.failed', { username: 'root', password: 'admin' }),
    line('0000000000a1', 40001, '10:00:02.000000', 'cowrie.command.input', { input: 'uname -a' }),
    '',
  ].join('\n');
}
const EVENTS = 5;
const DISTINCT_BEFORE = 3;
const NEWEST = Date.parse('2026-11-20T10:00:02Z');

describe('ids stored before ids counted connections', () => {
  let db: TestDatabase;
  let dir: string;
  let file: string;
  let before: number;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'blockfeed-legacy-'));
    file = path.join(dir, 'cowrie.json');
    await writeFile(file, hydraLog('2026-11-20'));
    db = await freshDatabase({ migrated: false });
    const migrations = await loadMigrations();
    const upgrade = migrations.findIndex((m) => m.name === 'event_ids_count_connections');
    await migrate(db.pool, log, migrations.slice(0, upgrade));
    // The version before: the same parsers with every event up to the cut-over, which then was all of them.
    const stats = await ingest([{ name: 'old', stream: [hydraLog('2026-11-20')], parser: parserFor('cowrie', { legacyIdsUntil: Infinity }) }], {
      writer: new EventWriter(db.pool, sharedEnricher),
    });
    before = stats.inserted;
    await migrate(db.pool, log);
  });
  afterAll(async () => {
    await db?.drop();
    await rm(dir, { recursive: true, force: true });
  });

  const eventCount = async () => (await db.pool.query<{ n: number }>('select count(*)::int as n from events')).rows[0]?.n;

  it('collapsed attempts alike but for their connection; the upgrade records the newest stored event’s time', async () => {
    expect(before).toBe(DISTINCT_BEFORE);
    expect(await legacyIdsUntil(db.pool)).toBe(NEWEST);
  });

  it('stores nothing new when the same file comes again, by the CLI or the push route', async () => {
    const cli = await runCli(['ingest', file, '--format', 'cowrie'], { DATABASE_URL: db.url, LOG_LEVEL: 'warn' });
    expect(cli.stdout).toContain(`0 new events stored from ${EVENTS} lines (${EVENTS} already stored, 0 rejected`);
    const app = await buildServer({ db: { pool: db.pool, url: db.url, close: async () => {} }, log, registry: createRegistry(), ingestToken: TOKEN });
    try {
      const pushed = await app.inject({
        method: 'POST', url: '/internal/v1/events?format=cowrie', payload: hydraLog('2026-11-20'),
        headers: { 'content-type': 'application/x-ndjson', authorization: `Bearer ${TOKEN}` },
      });
      expect(pushed.json()).toMatchObject({ accepted: EVENTS, inserted: 0, duplicates: EVENTS, rejected: 0 });
    } finally {
      await app.close();
    }
    expect(await eventCount()).toBe(DISTINCT_BEFORE);
  });

  it('gives events after the cut-over ids that count their connection', async () => {
    // The same attack a day later: every attempt is an event of its own.
    const later = `${file}.later`;
    await writeFile(later, hydraLog('2026-11-21'));
    const cli = await runCli(['ingest', later, '--format', 'cowrie'], { DATABASE_URL: db.url, LOG_LEVEL: 'warn' });
    expect(cli.stdout).toContain(`${EVENTS} new events stored from ${EVENTS} lines (0 already stored, 0 rejected`);
  });

  it('has no cut-over on a store that was empty when it was upgraded', async () => {
    const empty = await freshDatabase();
    try {
      expect(await legacyIdsUntil(empty.pool)).toBeUndefined();
    } finally {
      await empty.drop();
    }
  });
});
