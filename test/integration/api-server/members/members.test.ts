// `blockfeed members` as the operator runs it, against a running api-server: approving, moving an account and
// its keys to another tier (at once or not at all), disabling it (its keys refused at once, its sessions
// gone), hostile arguments and stored addresses that must not drive the operator's terminal; and the session
// store, which keeps no usable session id.
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createKey } from '../../../../api-server/keys/store.ts';
import { SessionStore } from '../../../../api-server/members/sessions.ts';
import { createMember, findMember } from '../../../../api-server/members/store.ts';
import { apiOnFreshDatabase, settledStatus } from '../../../support/api-server.ts';
import { BLOCKFEED, cliEnv, runCli, type CliResult } from '../../../support/cli.ts';

const server = apiOnFreshDatabase();
const cli = (...args: string[]) => runCli(['members', ...args], { DATABASE_URL: server.db.url, LOG_LEVEL: 'warn' });
/** The CLI's one-line message on stderr (structured log lines aside). */
const message = (stderr: string) => stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('{'));


function sessionStore() {
  return new SessionStore(server.db.pool, 3_600_000);
}

function storeSession(store: SessionStore, id: string, memberId?: number): Promise<void> {
  const session = { cookie: { originalMaxAge: 3_600_000, expires: new Date(Date.now() + 3_600_000) }, memberId } as unknown as Parameters<SessionStore['set']>[1];
  return new Promise((resolve, reject) => store.set(id, session, (err) => (err ? reject(err) : resolve())));
}

describe('blockfeed members', () => {
  it('lists, approves, moves to a tier and disables accounts, with their keys and sessions', async () => {
    const member = await createMember(server.db.pool, { email: 'Customer@Example.org', passwordHash: 'x', status: 'pending' });
    if (!member) throw new Error('not created');
    expect(member.email).toBe('customer@example.org');
    expect(await createMember(server.db.pool, { email: 'customer@example.ORG', passwordHash: 'y', status: 'pending' })).toBeUndefined();

    expect((await cli('list')).stdout).toMatch(/^ID\s+STATUS\s+TIER\s+KEYS\s+CREATED\s+EMAIL\n1\s+pending\s+member\s+0\s+\S+Z\s+customer@example\.org\n$/);
    expect((await cli('approve', '1')).stdout).toBe('activated member 1 <customer@example.org> (was pending); it can sign in now\n');
    expect((await cli('approve', 'customer@example.org')).stdout).toBe('member 1 <customer@example.org> is already active\n');

    const { key } = await createKey(server.db.pool, 'basic', 'script', member.id);
    expect((await cli('set-tier', 'CUSTOMER@example.org', 'enterprise')).stdout).toBe('member 1 <customer@example.org>: tier member -> enterprise\n');
    expect((await server.db.pool.query('select tier from api_keys where member_id = $1', [member.id])).rows).toEqual([{ tier: 'enterprise' }]);
    expect((await fetch(`${server.api.base}/api/export`, { headers: { 'x-api-key': key } })).status).toBe(200);

    const store = sessionStore();
    await storeSession(store, 'session-on-the-laptop', member.id);
    await storeSession(store, 'a-visitor', undefined);
    expect((await cli('disable', '1')).stdout).toBe('disabled member 1 <customer@example.org>; revoked 1 key\n');
    expect((await findMember(server.db.pool, member.id))?.status).toBe('disabled');
    expect((await server.db.pool.query('select member_id from web_sessions')).rows).toEqual([{ member_id: null }]);
    expect(await settledStatus(`${server.api.base}/api/export`, { 'x-api-key': key }, 401)).toBe(401);
    expect((await cli('list')).stdout).toMatch(/^1\s+disabled\s+enterprise\s+0\s/m);
  });

  it('names the problem in one line: an unknown account, an unknown tier', async () => {
    const unknown = await cli('approve', 'nobody@example.org');
    expect(unknown.code).toBe(1);
    expect(message(unknown.stderr)).toEqual(['blockfeed: no member with id or email "nobody@example.org" (see blockfeed members list)']);
    const tier = await cli('set-tier', '1', 'gold');
    expect(tier.code).toBe(1);
    expect(message(tier.stderr)).toEqual(['blockfeed: <tier> must be one of: member, basic, pro, enterprise; got "gold"']);
  });

  it('moves an account and its keys together or not at all', async () => {
    const member = await createMember(server.db.pool, { email: 'atomic@example.org', passwordHash: 'x', status: 'pending' });
    if (!member) throw new Error('not created');
    await createKey(server.db.pool, 'member', 'script', member.id);
    const tiers = async () => ({
      member: (await findMember(server.db.pool, member.id))?.tier,
      keys: (await server.db.pool.query<{ tier: string }>('select tier from api_keys where member_id = $1', [member.id])).rows.map((r) => r.tier),
    });
    // The store refuses to move keys to `pro` (a constraint on new values only): the second step fails.
    await server.db.pool.query(`alter table api_keys add constraint test_no_pro_keys check (tier <> 'pro') not valid`);
    try {
      const failed = await cli('set-tier', 'atomic@example.org', 'pro');
      expect(failed.code).toBe(1);
      expect(failed.stderr).toContain('test_no_pro_keys');
      expect(await tiers()).toEqual({ member: 'member', keys: ['member'] });
    } finally {
      await server.db.pool.query('alter table api_keys drop constraint test_no_pro_keys');
    }
    expect((await cli('set-tier', 'atomic@example.org', 'pro')).code).toBe(0);
    expect(await tiers()).toEqual({ member: 'pro', keys: ['pro'] });
  });

  it('answers hostile arguments with one line that shows them without letting them drive the terminal', async () => {
    const hostile = [
      'evil\r\n\u001b[31mred@example.org',
      'line\nbreak',
      '\u202egro.elpmaxe@evil',
      'x'.repeat(5000),
      '\u0007bell@example.org',
    ];
    const runs: CliResult[] = [];
    for (const ref of hostile) for (const command of ['approve', 'disable']) runs.push(await cli(command, ref));
    for (const ref of hostile) runs.push(await cli('set-tier', ref, 'pro'), await cli('set-tier', '1', ref));
    // Bytes that are not UTF-8, as a shell passes them.
    runs.push(await viaShell(`"$BLOCKFEED" members approve "$(printf 'caf\\351@example.org')"`));
    for (const run of runs) {
      expect(run.code).toBe(1);
      const lines = message(run.stderr);
      expect(lines).toHaveLength(1);
      const [line = ''] = lines;
      expect(line).toMatch(/^blockfeed: /);
      expect(line).not.toMatch(/[\p{Cc}\p{Cf}\uFFFD]/u);
      expect(line.length).toBeLessThan(400);
    }
    expect(message(runs[0]?.stderr ?? '')).toEqual([
      'blockfeed: <member> must be an account id or email address, without control characters (see blockfeed members list); got "evil\\u{d}\\u{a}\\u{1b}[31mred@example.org"',
    ]);
    expect(message(runs[4]?.stderr ?? '')).toEqual(['blockfeed: no member with id or email "\\u{202e}gro.elpmaxe@evil" (see blockfeed members list)']);
    expect((await server.db.pool.query(`select count(*)::int as n from members where status = 'disabled'`)).rows).toEqual([{ n: 1 }]);
  });

  it('lists stored addresses so that none can drive the terminal', async () => {
    // An address no form would take, put in the table by other means.
    await server.db.pool.query(`insert into members (email, password_hash, status) values ($1, 'x', 'pending')`, ['clear\u001b[2J\u001b[Hscreen@example.org']);
    const list = await cli('list');
    expect(list.code).toBe(0);
    expect(list.stdout).not.toContain('\u001b');
    expect(list.stdout).toContain('"clear\\u{1b}[2J\\u{1b}[Hscreen@example.org"');
  });
});

/** A shell line with $BLOCKFEED set, as an operator would type it (for arguments only a shell can make). */
function viaShell(line: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', line], { env: cliEnv({ BLOCKFEED, DATABASE_URL: server.db.url, LOG_LEVEL: 'warn' }) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the session store', () => {
  it('keeps sessions under the hash of their id, with their member, until they expire or are destroyed', async () => {
    const store = sessionStore();
    await storeSession(store, 'the-cookie-session-id', undefined);
    const { rows } = await server.db.pool.query<{ id_hash: Buffer; data: unknown }>('select id_hash, data from web_sessions');
    expect(rows.some((r) => r.id_hash.toString('utf8').includes('the-cookie-session-id') || JSON.stringify(r.data).includes('the-cookie-session-id'))).toBe(false);
    const got = await new Promise((resolve, reject) => store.get('the-cookie-session-id', (err, s) => (err ? reject(err) : resolve(s))));
    expect(got).toMatchObject({ cookie: { originalMaxAge: 3_600_000 } });
    await new Promise<void>((resolve, reject) => store.destroy('the-cookie-session-id', (err) => (err ? reject(err) : resolve())));
    expect(await new Promise((resolve, reject) => store.get('the-cookie-session-id', (err, s) => (err ? reject(err) : resolve(s))))).toBeNull();
    await storeSession(store, 'soon-expired', undefined);
    await server.db.pool.query(`update web_sessions set expires_at = now() - interval '1 second'`);
    expect(await new Promise((resolve, reject) => store.get('soon-expired', (err, s) => (err ? reject(err) : resolve(s))))).toBeNull();
  });
});
