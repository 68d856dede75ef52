// The embedded database's data outlives its credentials file. embedded.json (port, user, password) is small and
// easy to lose — deleted, left out of a backup, never written because a first start died after initdb — and
// losing it must never cost the data: the cluster gets a new password and keeps every row. A cluster
// directory that is not a cluster, or a credentials file that is not one, stops start-up with a clear error
// and is left as it was.
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { withDatabase } from '../../../../api-server/store/database.ts';
import { startEmbedded, type EmbeddedServer } from '../../../../api-server/store/embedded.ts';
import { createLogger } from '../../../../common/logging.ts';
import { runCli, tempDataDir } from '../../../support/cli.ts';

const log = createLogger({ level: 'silent' });

async function count(server: EmbeddedServer, sql: string): Promise<number> {
  const client = new pg.Client({ connectionString: server.url });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>(sql)).rows[0]?.n);
  } finally {
    await client.end();
  }
}

async function withServer<T>(dataDir: string, work: (server: EmbeddedServer) => Promise<T>): Promise<T> {
  const server = await startEmbedded({ dataDir, log });
  try {
    return await work(server);
  } finally {
    await server.stop();
  }
}

const MARKS = 'select count(*) as n from marks';

describe('the embedded database without its credentials file', () => {
  it('keeps keys and events when embedded.json is deleted between CLI commands', async () => {
    const dataDir = await tempDataDir();
    const env = { BLOCKFEED_DATA_DIR: dataDir };
    expect((await runCli(['demo', '--events', '2000', '--days', '1'], env)).code).toBe(0);
    const created = await runCli(['keys', 'create', '--tier', 'pro', '--name', 'kept'], env);
    expect(created.code, created.stderr).toBe(0);
    const before = await runCli(['keys', 'list'], env);
    expect(before.stdout).toMatch(/kept/);

    rmSync(path.join(dataDir, 'embedded.json'));
    const after = await runCli(['keys', 'list'], env);
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout).toBe(before.stdout);
    expect(after.stderr).toMatch(/no credentials file; setting a new password \(the data is kept\)/);
    expect(statSync(path.join(dataDir, 'embedded.json')).mode & 0o777).toBe(0o600);

    // The demo's events are all still there: a second demo-if-empty start would have loaded none.
    const info = JSON.parse(readFileSync(path.join(dataDir, 'embedded.json'), 'utf8')) as { password: string };
    expect(after.stdout + after.stderr).not.toContain(info.password);
    await withServer(dataDir, async (server) => {
      const client = new pg.Client({ connectionString: withDatabase(server.url, 'blockfeed') });
      await client.connect();
      try {
        expect(Number((await client.query<{ n: string }>('select count(*) as n from events')).rows[0]?.n)).toBe(2000);
      } finally {
        await client.end();
      }
    });
  });

  it('recovers a cluster whose first start died between initdb and writing the file, before and after data', async () => {
    const dataDir = await tempDataDir();
    const infoFile = path.join(dataDir, 'embedded.json');
    // The state such a crash leaves: a whole cluster, no file, the init lock of a process that is gone.
    await withServer(dataDir, async () => undefined);
    rmSync(infoFile);
    writeFileSync(path.join(dataDir, 'init.lock'), '999999999');
    await withServer(dataDir, async (server) => {
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      await client.query('create table marks (n int); insert into marks select generate_series(1, 100)');
      await client.end();
    });

    rmSync(infoFile);
    await withServer(dataDir, async (server) => expect(await count(server, MARKS)).toBe(100));
    expect(existsSync(path.join(dataDir, 'init.lock'))).toBe(false);
  });

  it('finishes a first start that died during initdb: the half-made staging directory goes, no cluster is touched', async () => {
    const dataDir = await tempDataDir();
    mkdirSync(path.join(dataDir, 'pg.initdb-999999999', 'base'), { recursive: true });
    await withServer(dataDir, async (server) => expect(await count(server, 'select 1 as n')).toBe(1));
    expect(readdirSync(dataDir).filter((name) => name.startsWith('pg.initdb-'))).toEqual([]);
    expect(existsSync(path.join(dataDir, 'pg', 'PG_VERSION'))).toBe(true);
  });

  it('refuses a cluster directory that holds files but no PG_VERSION, and leaves them', async () => {
    const dataDir = await tempDataDir();
    mkdirSync(path.join(dataDir, 'pg'), { recursive: true });
    writeFileSync(path.join(dataDir, 'pg', 'notes.txt'), 'precious');
    await expect(startEmbedded({ dataDir, log })).rejects.toThrow(/pg holds files but no PG_VERSION.*does not remove it/);
    expect(readFileSync(path.join(dataDir, 'pg', 'notes.txt'), 'utf8')).toBe('precious');
  });

  it('refuses a credentials file that is not one, then recovers with the data once it is moved away', async () => {
    const dataDir = await tempDataDir();
    const infoFile = path.join(dataDir, 'embedded.json');
    await withServer(dataDir, async (server) => {
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      await client.query('create table marks (n int); insert into marks values (1), (2)');
      await client.end();
    });
    writeFileSync(infoFile, '{"port": 5432');
    await expect(startEmbedded({ dataDir, log })).rejects.toThrow(/embedded\.json is not a blockfeed credentials file.*move it away/);
    rmSync(infoFile);
    await withServer(dataDir, async (server) => expect(await count(server, MARKS)).toBe(2));
  });

  it('refuses a credentials file whose password the cluster does not take, rather than waiting forever', async () => {
    const dataDir = await tempDataDir();
    const infoFile = path.join(dataDir, 'embedded.json');
    await withServer(dataDir, async () => undefined);
    const info = JSON.parse(readFileSync(infoFile, 'utf8')) as { password: string };
    writeFileSync(infoFile, JSON.stringify({ ...info, password: 'not-the-password' }));
    await expect(startEmbedded({ dataDir, log })).rejects.toThrow(/refuses the credentials in .*embedded\.json/);
    // It did not leave its server running.
    expect(existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
  });

  it('will not recover while a server still runs on the cluster without the file', async () => {
    const dataDir = await tempDataDir();
    const first = await startEmbedded({ dataDir, log });
    try {
      rmSync(path.join(dataDir, 'embedded.json'));
      await expect(startEmbedded({ dataDir, log })).rejects.toThrow(/embedded\.json is missing while PostgreSQL \(pid \d+\) runs/);
    } finally {
      await first.stop();
    }
    await withServer(dataDir, async (server) => expect(await count(server, 'select 1 as n')).toBe(1));
  });

  it('lets two processes starting on a new data dir share one cluster', async () => {
    const dataDir = await tempDataDir();
    const env = { BLOCKFEED_DATA_DIR: dataDir };
    const runs = await Promise.all([runCli(['migrate'], env), runCli(['migrate'], env)]);
    for (const run of runs) expect(run.code, run.stderr).toBe(0);
    expect(readdirSync(dataDir).filter((name) => name.startsWith('pg.initdb-') || name === 'init.lock')).toEqual([]);
    expect(existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);
  });
});
