// The last user of the embedded PostgreSQL stops it, and only the last: a process that found the server
// running and has not connected yet (a CLI command between its start and its first query) keeps it running
// when another leaves, and a user that died without leaving keeps nothing running.
import { spawn } from 'node:child_process';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../../common/logging.ts';
import { startEmbedded } from '../../../../api-server/store/embedded.ts';
import { BLOCKFEED, cliEnv, postmasterPid, tempDataDir } from '../../../support/cli.ts';
import { processAlive } from '../../../support/processes.ts';

const log = createLogger({ level: 'silent' });

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

describe('the last one out of the embedded PostgreSQL', () => {
  it('leaves the server running for a user that has found it but not connected yet', async () => {
    const dataDir = await tempDataDir();
    const first = await startEmbedded({ dataDir, log });
    // The second user has the server and no connection open: the moment the race used to take it away.
    const second = await startEmbedded({ dataDir, log });
    expect([first.owned, second.owned]).toEqual([true, false]);
    const pid = postmasterPid(dataDir);
    try {
      await first.release();
      expect(processAlive(pid), 'the server after the first user left').toBe(true);
      expect(await answers(second.url)).toBe(true);
      await second.release();
      expect(processAlive(pid), 'the server after the last user left').toBe(false);
    } finally {
      if (processAlive(pid)) process.kill(pid, 'SIGKILL');
    }
  });

  it('stops the server though a user died without leaving', async () => {
    const dataDir = await tempDataDir();
    const first = await startEmbedded({ dataDir, log });
    const pid = postmasterPid(dataDir);
    // `ingest -` uses the server until its stdin ends; killed, it never says it is done.
    const ingest = spawn(BLOCKFEED, ['ingest', '--format', 'native', '--sensor', 'hp-1', '-'], { env: cliEnv({ BLOCKFEED_DATA_DIR: dataDir }) });
    let stderr = '';
    ingest.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise((resolve) => ingest.once('exit', resolve));
    try {
      while (!/reusing the embedded PostgreSQL/.test(stderr)) {
        if (ingest.exitCode !== null) throw new Error(`ingest exited early: ${stderr}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      ingest.kill('SIGKILL');
      await exited;
      await first.release();
      expect(processAlive(pid), 'the server after the last live user left').toBe(false);
    } finally {
      ingest.kill('SIGKILL');
      if (processAlive(pid)) process.kill(pid, 'SIGKILL');
    }
  });
});
