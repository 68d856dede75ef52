// The check page and the removal request form over plain HTTP: the check in words in both languages, the
// page's throttle per client network, a request stored and acknowledged (on the page and by mail), and what
// an anonymous client can make the table hold — one pending request per network, three per client network,
// five posts an hour, a thousand pending in all — and hostile input refused whole with nothing stored, mailed
// or logged. Clients are told apart by X-Forwarded-For from a trusted proxy; throttle windows follow an
// injected clock.
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHECK_PER_ADDRESS, REMOVAL_PER_ADDRESS } from '../../../../api-server/website/throttle.ts';
import { REMOVAL_REQUEST_CAPS } from '../../../../api-server/exclusions/store.ts';
import { startApi, type TestApi } from '../../../support/api-server.ts';
import { insertAddresses } from '../../../support/attack-fixtures.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';
import { FormClient } from '../../../support/form-client.ts';

let db: TestDatabase;
let api: TestApi;
let smtp: SMTPServer;
const delivered: { rcpt: string[]; text: string }[] = [];
/** A minute into the current hour: every throttle window has time left. */
const now = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 + 60_000);

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    onData(stream, session, done) {
      let text = '';
      stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
      stream.on('end', () => {
        delivered.push({ rcpt: session.envelope.rcptTo.map((r) => r.address), text });
        done();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  db = await freshDatabase();
  // 203.0.113.0/24 and 2001:db8::/120 seen an hour ago (listed); 198.51.100.0/24 never.
  await insertAddresses(db.pool, [
    ...Array.from({ length: 40 }, (_, i) => ({ ip: `203.0.113.${i}`, honeypot: 1, interaction: 1, country: 'CN', province: '广东省', isp: '电信' as const })),
    { ip: '2001:db8::5', telescope: 1 },
  ]);
  api = await startApi(
    db.url,
    { trustedProxies: ['127.0.0.1'], smtpUrl: `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}`, siteUrl: 'http://blockfeed.example' },
    { clock: () => now },
  );
});
afterAll(async () => {
  await api?.close();
  await db?.drop();
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
});

const requests = async () => (await db.pool.query<{ n: number }>('select count(*)::int as n from removal_requests')).rows[0]?.n;

/** A browser at a client address, with the removal form loaded (its CSRF token). */
async function requester(address: string, lang = 'en'): Promise<FormClient> {
  const client = new FormClient(api.base, { 'x-forwarded-for': address, 'accept-language': lang });
  await client.get('/check/removal');
  return client;
}

describe('the check page', () => {
  it('says in words what the lists say, in both languages, and links a listed address to the removal form', async () => {
    const client = new FormClient(api.base, { 'x-forwarded-for': '192.0.2.1' });
    const empty = await client.get('/check');
    expect(empty.status).toBe(200);
    expect(empty.text).toContain('<h1>Check an address</h1>');
    expect(empty.text).not.toContain('id="verdict"');

    const listed = await client.get('/check?ip=203.0.113.7');
    expect(listed.status).toBe(200);
    expect(listed.text).toMatch(/id="verdict">Listed: in \d+ of the 20 lists and windows below\./);
    expect(listed.text).toContain('href="/check/removal?network=203.0.113.7"');
    expect(listed.text).toContain('Guangdong (广东省)');

    const chinese = await client.get('/check?ip=203.0.113.7&lang=zh-CN');
    expect(chinese.text).toContain('<html lang="zh-CN">');
    expect(chinese.text).toMatch(/id="verdict">已列入：在下列 20 个名单与时间范围中的 \d+ 个里。/);

    expect((await client.get('/check?ip=198.51.100.9&lang=en')).text).toContain('Not listed: our sensors have not seen this address in the last 30 days.');
    expect((await client.get('/check?ip=10.0.0.1')).text).toContain('Never listed: this address is not globally reachable');
    const network = await client.get('/check?ip=203.0.113.0/24');
    expect(network.status).toBe(400);
    expect(network.text).toContain('Enter one address, not a network.');
    const bogus = await client.get(`/check?ip=${encodeURIComponent('<script>alert(1)</script>')}`);
    expect(bogus.status).toBe(400);
    expect(bogus.text).toContain('value="&lt;script&gt;alert(1)&lt;/script&gt;"');
    expect(bogus.text).not.toContain('<script>alert');
  });

  it('is throttled per client network like sign-in: 30 checks a quarter hour, then 429 with Retry-After', async () => {
    const client = new FormClient(api.base, { 'x-forwarded-for': '192.0.2.200' });
    const statuses: number[] = [];
    for (let i = 0; i <= CHECK_PER_ADDRESS.limit; i++) statuses.push((await client.get(`/check?ip=203.0.113.${i % 40}`)).status);
    expect(statuses.slice(0, -1).every((s) => s === 200)).toBe(true);
    const refused = await client.get('/check?ip=203.0.113.1');
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.text).toMatch(/Too many checks from your network\. Try again in \d+ minutes?\./);
    // Another network is not affected; the empty form never counts.
    expect((await client.get('/check')).status).toBe(200);
    expect((await new FormClient(api.base, { 'x-forwarded-for': '192.0.2.201' }).get('/check?ip=203.0.113.1')).status).toBe(200);
  });
});

describe('removal requests', () => {
  it('are stored, acknowledged on the page and by mail, once per network', async () => {
    const client = await requester('198.51.100.1');
    const form = await client.get('/check/removal?network=203.0.113.7');
    expect(form.text).toContain('value="203.0.113.7"');
    const sent = await client.post('/check/removal', { email: 'NOC@Example.net', network: '203.0.113.7', reason: 'our office gateway' });
    expect(sent.status).toBe(200);
    expect(sent.text).toMatch(/Your request no\. (\d+) for 203\.0\.113\.7\/32 is recorded\. The operator reviews it; nothing is removed until then\. A confirmation is on its way to noc@example\.net\./);
    const stored = await db.pool.query('select email, network::text, reason, status, client_network, lang from removal_requests');
    expect(stored.rows).toEqual([{ email: 'noc@example.net', network: '203.0.113.7/32', reason: 'our office gateway', status: 'pending', client_network: '198.51.100.1', lang: 'en' }]);
    await expect.poll(() => delivered.length, { timeout: 5000 }).toBe(1);
    expect(delivered[0]?.rcpt).toEqual(['noc@example.net']);
    expect(delivered[0]?.text).toContain('We received your request no. ');
    expect(delivered[0]?.text).toContain('http://blockfeed.example/check');

    // The same network again, from anywhere: the waiting request is the answer; nothing new is stored or mailed.
    const again = await (await requester('198.51.100.2', 'zh-CN')).post('/check/removal', { email: 'other@example.net', network: '::ffff:203.0.113.7', reason: 'again' });
    expect(again.status).toBe(200);
    expect(again.text).toMatch(/针对 203\.0\.113\.7\/32 的申请（第 \d+ 号）已在等待运营者审核/);
    expect(await requests()).toBe(1);
    expect(delivered.length).toBe(1);
    // Nothing is removed until the operator decides.
    expect((await client.get('/check?ip=203.0.113.7')).text).toMatch(/id="verdict">Listed:/);
  });

  it('refuse what would change nothing: a network never seen, one excluded already', async () => {
    const client = await requester('198.51.100.3');
    const unseen = await client.post('/check/removal', { email: 'noc@example.net', network: '198.51.100.0/24', reason: 'ours' });
    expect(unseen.status).toBe(400);
    expect(unseen.text).toContain('Our sensors have not seen any address of this network in the last 30 days');
    await db.pool.query(`insert into exclusions (network, reason, created_by) values ('2001:db8::/120', 'test', 'test')`);
    const excluded = await client.post('/check/removal', { email: 'noc@example.net', network: '2001:db8::5', reason: 'ours' });
    expect(excluded.status).toBe(200);
    expect(excluded.text).toContain('2001:db8::/120 has been left out of every list since');
    expect(await requests()).toBe(1);
  });

  it('hold at most three pending per client network, five posts an hour, a thousand pending in all', async () => {
    const client = await requester('198.51.100.4');
    const ask = (i: number) => client.post('/check/removal', { email: 'noc@example.net', network: `203.0.113.${10 + i}`, reason: 'ours' });
    for (let i = 0; i < REMOVAL_REQUEST_CAPS.perClientNetwork; i++) expect((await ask(i)).status).toBe(200);
    const capped = await ask(3);
    expect(capped.status).toBe(429);
    expect(capped.text).toContain('3 requests from your network are waiting for the operator.');
    expect((await ask(4)).status).toBe(429);
    // The fifth post of the hour was the last: the throttle refuses the sixth before anything is looked at.
    expect(REMOVAL_PER_ADDRESS.limit).toBe(5);
    const throttled = await ask(5);
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(throttled.text).toMatch(/Too many requests from your network\. Try again in \d+ minutes?\./);
    expect(await requests()).toBe(1 + REMOVAL_REQUEST_CAPS.perClientNetwork);

    // A thousand pending in all: the next is refused, whoever asks.
    await db.pool.query(
      `insert into removal_requests (email, network, reason, client_network, lang)
       select 'x@example.net', ('198.18.' || (g / 256) || '.' || (g % 256) || '/32')::cidr, 'filler', 'filler ' || g, 'en' from generate_series(1, $1::int) g`,
      [REMOVAL_REQUEST_CAPS.pending - ((await requests()) ?? 0)],
    );
    const full = await (await requester('198.51.100.5')).post('/check/removal', { email: 'noc@example.net', network: '203.0.113.30', reason: 'ours' });
    expect(full.status).toBe(503);
    expect(full.text).toContain('The operator has many requests to review at the moment.');
    expect(await requests()).toBe(REMOVAL_REQUEST_CAPS.pending);
    await db.pool.query(`delete from removal_requests where reason = 'filler'`);
  });

  it('refuse hostile input whole, in the visitor’s language, storing, mailing and logging nothing', async () => {
    const before = await requests();
    const mails = delivered.length;
    const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
    const cases: [string, (c: FormClient) => Promise<{ status: number; text: string }>][] = [
      ['no token', (c) => c.post('/check/removal', { _csrf: '', email: 'noc@example.net', network: '203.0.113.31', reason: 'x' })],
      ['a line break in the reason', (c) => c.post('/check/removal', { email: 'noc@example.net', network: '203.0.113.31', reason: 'ours\r\nBcc: x@example.org' })],
      ['NUL in the network', (c) => c.post('/check/removal', { email: 'noc@example.net', network: '203.0.113.31\u0000', reason: 'ours' })],
      ['ESC in the email', (c) => c.post('/check/removal', { email: 'noc\u001b[2J@example.net', network: '203.0.113.31', reason: 'ours' })],
      ['bytes that are not UTF-8', (c) => c.postRaw('/check/removal', Buffer.concat([Buffer.from(`_csrf=${encodeURIComponent(c.token)}&email=noc%40example.net&network=203.0.113.31&reason=caf`), Buffer.from([0xe9])]), FORM)],
      ['an overlong reason', (c) => c.post('/check/removal', { email: 'noc@example.net', network: '203.0.113.31', reason: 'r'.repeat(1001) })],
      ['a far too long reason', (c) => c.post('/check/removal', { email: 'noc@example.net', network: '203.0.113.31', reason: 'r'.repeat(5000) })],
      ['an empty reason', (c) => c.post('/check/removal', { email: 'noc@example.net', network: '203.0.113.31', reason: '  ' })],
      ['host bits', (c) => c.post('/check/removal', { email: 'noc@example.net', network: '203.0.113.31/24', reason: 'ours' })],
      ['a list of recipients', (c) => c.post('/check/removal', { email: 'noc@example.net,victim@example.org', network: '203.0.113.31', reason: 'ours' })],
      ['JSON', (c) => c.postRaw('/check/removal', JSON.stringify({ _csrf: c.token, email: 'noc@example.net', network: '203.0.113.31', reason: 'ours' }), { 'content-type': 'application/json' })],
    ];
    for (const lang of ['en', 'zh-CN']) {
      for (const [name, send] of cases) {
        const res = await send(await requester(`198.51.100.${lang === 'en' ? 60 : 61}`, lang));
        expect(res.status, `${lang} ${name}`).toBeGreaterThanOrEqual(400);
        expect(res.status, `${lang} ${name}`).toBeLessThan(500);
        expect(res.text, `${lang} ${name}`).toContain(`<html lang="${lang}">`);
      }
    }
    expect(await requests()).toBe(before);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(delivered.length).toBe(mails);
    expect(api.log()).not.toContain('Bcc: x@example.org');
    expect(api.log()).not.toContain('victim@example.org');
  });
});
