// `blockfeed keys` as users run it: the secret printed once, only hashes stored, revocation.
import { describe, expect, it } from 'vitest';
import { runCli, tempDataDir } from '../../../support/cli.ts';

describe('blockfeed keys', () => {
  it('creates (printing the secret once), lists without secrets, revokes; bad input is one clear line', async () => {
    const env = { BLOCKFEED_DATA_DIR: await tempDataDir(), LOG_LEVEL: 'warn' };
    const created = await runCli(['keys', 'create', '--tier', 'pro', '--name', 'edge firewall'], env);
    expect(created.code).toBe(0);
    const secret = created.stdout.trim();
    expect(secret).toMatch(/^bf_[a-z0-9]{8}_[A-Za-z0-9_-]{32}$/);
    expect(created.stderr).toMatch(/tier pro: 10000 calls\/day/);
    expect(created.stderr).toMatch(/shown only this once/);
    expect(created.stderr).not.toContain(secret.slice(12));

    const listed = await runCli(['keys', 'list'], env);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^ID\s+PREFIX\s+TIER/);
    expect(listed.stdout).toContain(secret.slice(0, 11));
    expect(listed.stdout).toContain('edge firewall');
    expect(listed.stdout).not.toContain(secret.slice(12));

    const revoked = await runCli(['keys', 'revoke', secret.slice(0, 11)], env);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toMatch(/^revoked key 1 /);
    expect((await runCli(['keys', 'list'], env)).stdout).toMatch(/\d{4}-\d\d-\d\dT[^ ]+Z\s+edge firewall/);

    const badTier = await runCli(['keys', 'create', '--tier', 'gold', '--name', 'x'], env);
    expect(badTier.code).not.toBe(0);
    // Structured log lines (JSON) may precede it on a loaded machine; the user-facing error is one line.
    const messages = badTier.stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('{'));
    expect(messages).toEqual(['blockfeed: --tier must be one of: member, basic, pro, enterprise; got "gold"']);
    const unknown = await runCli(['keys', 'revoke', '99'], env);
    expect(unknown.stderr).toMatch(/^blockfeed: no key with id or prefix "99"/m);
  });
});
