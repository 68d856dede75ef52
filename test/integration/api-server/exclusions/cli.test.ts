// `blockfeed exclusions` and `blockfeed removals` as the operator runs them, against a running api-server: an
// exclusion added on the command line leaves the lists at once and the check says why; a removal request is
// approved into an exclusion (both or neither, once) or rejected; arguments are checked and every mistake is
// one line naming the argument; what anonymous visitors typed into a request cannot drive the terminal.
import { describe, expect, it } from 'vitest';
import { requestRemoval } from '../../../../api-server/exclusions/store.ts';
import { createKey } from '../../../../api-server/keys/store.ts';
import { apiOnFreshDatabase } from '../../../support/api-server.ts';
import { insertAddresses } from '../../../support/attack-fixtures.ts';
import { runCli } from '../../../support/cli.ts';

const server = apiOnFreshDatabase();
const cli = (...args: string[]) => runCli(args, { DATABASE_URL: server.db.url, LOG_LEVEL: 'warn' });
/** The CLI's one-line message on stderr (structured log lines aside). */
const message = (stderr: string) => stderr.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('{'));

async function exported(key: string): Promise<string[]> {
  return (await (await fetch(`${server.api.base}/api/export?hours=24`, { headers: { 'x-api-key': key } })).text()).split('\n').filter(Boolean);
}

async function checked(ip: string, key: string): Promise<{ listed: boolean; excluded: { network: string; source: string } | null }> {
  return (await (await fetch(`${server.api.base}/api/check?ip=${ip}`, { headers: { 'x-api-key': key } })).json()) as { listed: boolean; excluded: { network: string; source: string } | null };
}

describe('blockfeed exclusions', () => {
  it('adds, lists and removes exclusions; the lists and the check follow at once', async () => {
    await insertAddresses(server.db.pool, [
      { ip: '203.0.113.20', honeypot: 1, interaction: 1 },
      { ip: '203.0.113.21', honeypot: 1 },
      { ip: '198.51.100.10', telescope: 1 },
    ]);
    const { key } = await createKey(server.db.pool, 'enterprise', 'cli test');
    expect(await exported(key)).toEqual(['198.51.100.10', '203.0.113.20', '203.0.113.21']);

    const added = await cli('exclusions', 'add', '::ffff:203.0.113.0/120', '--reason', 'our own scanner', '--until', '2099-01-01');
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toBe('added exclusion 1 (203.0.113.0/24, until 2099-01-01T00:00:00Z): left out of every list from now on; it covers 2 addresses the sensors have seen\n');
    // Cached lists are dropped when the server hears the command's notice.
    await expect.poll(() => exported(key), { timeout: 8000 }).toEqual(['198.51.100.10']);
    expect(await checked('203.0.113.20', key)).toMatchObject({ listed: false, excluded: { network: '203.0.113.0/24', source: 'operator' } });

    const again = await cli('exclusions', 'add', '203.0.113.0/24', '--reason', 'twice');
    expect(again.code).toBe(1);
    expect(message(again.stderr)).toEqual(['blockfeed: 203.0.113.0/24 is excluded already: exclusion 1 (203.0.113.0/24, until 2099-01-01T00:00:00Z) (blockfeed exclusions remove 1 first to change it)']);
    expect((await cli('exclusions', 'add', '2001:db8::7', '--reason', 'one address')).stdout).toMatch(/^added exclusion 2 \(2001:db8::7\/128\): .* it covers 0 addresses /);

    expect((await cli('exclusions', 'list')).stdout).toMatch(
      /^ID\s+STATE\s+NETWORK\s+SINCE\s+UNTIL\s+SOURCE\s+BY\s+REASON\n1\s+active\s+203\.0\.113\.0\/24\s+\S+Z\s+2099-01-01T00:00:00Z\s+operator\s+\S+\s+our own scanner\n2\s+active\s+2001:db8::7\/128\s+\S+Z\s+-\s+operator\s+\S+\s+one address\n$/,
    );
    expect((await cli('exclusions', 'remove', '203.0.113.0/24')).stdout).toBe('removed exclusion 1 (203.0.113.0/24, until 2099-01-01T00:00:00Z)\n');
    expect((await cli('exclusions', 'remove', '2')).stdout).toBe('removed exclusion 2 (2001:db8::7/128)\n');
    await expect.poll(() => exported(key), { timeout: 8000 }).toEqual(['198.51.100.10', '203.0.113.20', '203.0.113.21']);
    expect((await cli('exclusions', 'list')).stdout).toBe('ID  STATE  NETWORK  SINCE  UNTIL  SOURCE  BY  REASON\n');
    // Kept on record.
    expect((await cli('exclusions', 'list', '--all')).stdout).toMatch(/^1\s+removed\s+203\.0\.113\.0\/24\s/m);
    const gone = await cli('exclusions', 'remove', '1');
    expect(message(gone.stderr)).toEqual(['blockfeed: no exclusion in force is numbered 1 (see blockfeed exclusions list)']);
  });

  it.each([
    [['exclusions', 'add', '203.0.113.1/24', '--reason', 'r'], '<network> must be an IPv4 or IPv6 address or network such as 203.0.113.0/24; "203.0.113.1/24" has host bits set after the prefix length; the network is 203.0.113.0/24'],
    [['exclusions', 'add', '2001:db8::1/64', '--reason', 'r'], '<network> must be an IPv4 or IPv6 address or network such as 203.0.113.0/24; "2001:db8::1/64" has host bits set after the prefix length; the network is 2001:db8::/64'],
    [['exclusions', 'add', 'example.org', '--reason', 'r'], '<network> must be an IPv4 or IPv6 address or network such as 203.0.113.0/24; "example.org" is not an IPv4 or IPv6 address or network'],
    [['exclusions', 'add', '203.0.113.0/33', '--reason', 'r'], '<network> must be an IPv4 or IPv6 address or network such as 203.0.113.0/24; "203.0.113.0/33" has a prefix length that is not a number from 0 to 32'],
    [['exclusions', 'add', '203.0.113.0/24', '--reason', 'line\u001b[2J'], '--reason must be one line of 1 to 500 characters without control characters; got "line\\u{1b}[2J"'],
    [['exclusions', 'add', '203.0.113.0/24', '--reason', ' '], '--reason must be one line of 1 to 500 characters without control characters; got " "'],
    [['exclusions', 'add', '203.0.113.0/24', '--reason', 'r', '--until', 'tomorrow'], '--until must be a day (2026-12-31) or an instant with its zone (2026-12-31T18:00:00Z); got "tomorrow"'],
    [['exclusions', 'add', '203.0.113.0/24', '--reason', 'r', '--until', '2001-01-01'], '--until must lie in the future; got "2001-01-01"'],
    [['exclusions', 'remove', '10.0.0.1/8'], '<exclusion> must be an IPv4 or IPv6 address or network such as 203.0.113.0/24; "10.0.0.1/8" has host bits set after the prefix length; the network is 10.0.0.0/8'],
    [['removals', 'list', '--status', 'open'], '--status must be one of: pending, approved, rejected, all; got "open"'],
    [['removals', 'approve', '99'], 'no removal request 99 (see blockfeed removals list --status all)'],
  ])('%j: one line naming the argument', async (args, expected) => {
    const result = await cli(...args);
    expect(result.code).toBe(1);
    expect(message(result.stderr)).toEqual([`blockfeed: ${expected}`]);
  });
});

describe('blockfeed removals', () => {
  it('approves a request into an exclusion once, rejects another, and shows hostile text escaped', async () => {
    await insertAddresses(server.db.pool, [{ ip: '192.0.2.33', honeypot: 1 }, { ip: '192.0.2.34', honeypot: 1 }]);
    const { key } = await createKey(server.db.pool, 'enterprise', 'removals test');
    const ask = (network: string, reason: string) => requestRemoval(server.db.pool, { email: 'noc@example.net', network, reason, clientNetwork: '198.51.100.1', lang: 'en' });
    const first = await ask('192.0.2.33/32', 'a shared resolver\u202e of ours');
    const second = await ask('192.0.2.34/32', 'please');
    if (first.kind !== 'created' || second.kind !== 'created') throw new Error('not created');

    const listed = await cli('removals', 'list');
    expect(listed.stdout).toMatch(/^ID\s+STATUS\s+CREATED\s+NETWORK\s+FROM\s+EMAIL\s+DECIDED\s+REASON\n/);
    expect(listed.stdout).toContain('192.0.2.33/32  198.51.100.1  noc@example.net  -        "a shared resolver\\u{202e} of ours"\n');

    const approved = await cli('removals', 'approve', String(first.request.id), '--note', 'confirmed with their NOC');
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toMatch(new RegExp(`^approved removal request ${first.request.id}: 192\\.0\\.2\\.33/32 is left out of every list \\(exclusion \\d+ \\(192\\.0\\.2\\.33/32\\)\\); it covers 1 address the sensors have seen\\n$`));
    await expect.poll(() => exported(key), { timeout: 8000 }).not.toContain('192.0.2.33');
    expect(await checked('192.0.2.33', key)).toMatchObject({ listed: false, excluded: { network: '192.0.2.33/32', source: 'removal-request' } });
    expect((await cli('exclusions', 'list')).stdout).toMatch(new RegExp(`192\\.0\\.2\\.33/32\\s+\\S+Z\\s+-\\s+request ${first.request.id}\\s+\\S+\\s+confirmed with their NOC\\n`));

    const twice = await cli('removals', 'approve', String(first.request.id));
    expect(twice.code).toBe(1);
    expect(message(twice.stderr)[0]).toMatch(new RegExp(`^blockfeed: removal request ${first.request.id} was approved already, on \\S+Z by \\S+$`));

    expect((await cli('removals', 'reject', String(second.request.id), '--note', 'a scanner, listed rightly')).stdout).toBe(`rejected removal request ${second.request.id} (192.0.2.34/32)\n`);
    expect(await exported(key)).toContain('192.0.2.34');
    expect((await cli('removals', 'list')).stdout).toBe('ID  STATUS  CREATED  NETWORK  FROM  EMAIL  DECIDED  REASON\n');
    expect((await cli('removals', 'list', '--status', 'all')).stdout.split('\n').filter(Boolean)).toHaveLength(3);
  });
});
