// As root the embedded PostgreSQL runs as the `postgres` user, which must reach its binaries. A checkout in
// root's home (mode 0700 on Debian) is out of its reach: the binaries are then run from a copy it can reach.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createLogger } from '../../../../common/logging.ts';
import { binaries, runnableBinaries } from '../../../../api-server/store/embedded.ts';

const log = createLogger({ level: 'silent' });

describe('embedded PostgreSQL binaries', () => {
  it('are run where they are when the server runs as the calling user', async () => {
    const found = await binaries();
    expect(await runnableBinaries(found, undefined, log)).toEqual(found);
    expect(await runnableBinaries(found, { uid: userInfo().uid }, log)).toEqual(found);
  });

  // Only root switches to another user (as a developer the server runs as you, and nothing is copied).
  it.skipIf(userInfo().uid !== 0)('as root, out of the postgres user\'s reach, are copied once to where it can run them', async () => {
    const found = await binaries();
    const packageDir = path.dirname(path.dirname(path.dirname(found.postgres)));
    const home = mkdtempSync(path.join(tmpdir(), 'blockfeed-home-'));
    const copyDir = mkdtempSync(path.join(tmpdir(), 'blockfeed-copies-'));
    onTestFinished(() => {
      rmSync(home, { recursive: true, force: true });
      rmSync(copyDir, { recursive: true, force: true });
    });
    chmodSync(home, 0o700);
    cpSync(packageDir, path.join(home, 'pkg'), { recursive: true, verbatimSymlinks: true });
    const unreachable = { initdb: path.join(home, 'pkg/native/bin/initdb'), postgres: path.join(home, 'pkg/native/bin/postgres') };
    const owner = { uid: Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), gid: Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' })) };
    expect(spawnSync(unreachable.postgres, ['--version'], owner).error).toMatchObject({ code: 'EACCES' });

    chmodSync(copyDir, 0o755);
    const runnable = await runnableBinaries(unreachable, owner, log, copyDir);
    expect(runnable.postgres.startsWith(`${copyDir}/postgres-`)).toBe(true);
    const version = spawnSync(runnable.postgres, ['--version'], { ...owner, encoding: 'utf8' });
    expect(version.status, version.stderr).toBe(0);
    expect(version.stdout).toMatch(/^postgres \(PostgreSQL\) \d+/);
    expect(spawnSync(runnable.initdb, ['--version'], { ...owner, encoding: 'utf8' }).stdout).toMatch(/^initdb \(PostgreSQL\) \d+/);

    // Once: the next process uses the same copy.
    const made = statSync(path.dirname(path.dirname(runnable.postgres))).mtimeMs;
    expect(await runnableBinaries(unreachable, owner, log, copyDir)).toEqual(runnable);
    expect(statSync(path.dirname(path.dirname(runnable.postgres))).mtimeMs).toBe(made);
  });
});
