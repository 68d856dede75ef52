// What a hostile client sends the website's forms: fields too long, bytes that are not UTF-8, control
// characters (CR/LF for a mail header, NUL for the database, ESC for a terminal), addresses that would be a
// list of recipients, other content types, redirects off the site. Each is a clear 4xx page in the visitor's
// language; nothing is stored or mailed; no log line carries what was typed.
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApi, type TestApi } from '../../../support/api-server.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';
import { FormClient, PASSWORD, activeMember } from '../../../support/form-client.ts';

let db: TestDatabase;
let api: TestApi;
let smtp: SMTPServer;
/** Envelope recipients of every message the SMTP server accepted, and the To header of each. */
const delivered: { rcpt: string[]; to: string }[] = [];

beforeAll(async () => {
  smtp = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    // As real servers answer, with the address in the refusal: it must not reach the log from there.
    onRcptTo(address, _session, done) {
      if (address.address.startsWith('bounce')) done(Object.assign(new Error(`5.1.1 <${address.address}>: Recipient address rejected`), { responseCode: 550 }));
      else done();
    },
    onData(stream, session, done) {
      let text = '';
      stream.on('data', (chunk: Buffer) => (text += chunk.toString()));
      stream.on('end', () => {
        delivered.push({ rcpt: session.envelope.rcptTo.map((r) => r.address), to: /^To: (.*)$/m.exec(text)?.[1] ?? '' });
        done();
      });
    },
  });
  await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
  const smtpPort = (smtp.server.address() as AddressInfo).port;
  db = await freshDatabase();
  api = await startApi(db.url, { smtpUrl: `smtp://127.0.0.1:${smtpPort}`, siteUrl: 'http://blockfeed.example', mailFrom: 'blockfeed <noreply@example.org>' });
});
afterAll(async () => {
  await api?.close();
  await db?.drop();
  await new Promise<void>((resolve) => smtp.close(() => resolve()));
});

async function counts(): Promise<{ members: number; keys: number; sessions: number }> {
  const { rows } = await db.pool.query<{ members: number; keys: number; sessions: number }>(
    `select (select count(*)::int from members) as members, (select count(*)::int from api_keys) as keys, (select count(*)::int from web_sessions) as sessions`,
  );
  const row = rows[0];
  if (!row) throw new Error('no counts');
  return row;
}

/** Waits for the mail a sign-up may have sent (sent from the request itself, so it is there or close). */
async function mailSettled(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, 300));
}

/** A form body as a browser would not send it: `fields` encoded by hand (`raw` values go in as they are). */
function body(fields: Record<string, string>, raw: Record<string, string> = {}): string {
  return [...Object.entries(fields).map(([k, v]) => `${k}=${encodeURIComponent(v)}`), ...Object.entries(raw).map(([k, v]) => `${k}=${v}`)].join('&');
}

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describe('hostile input to the website', () => {
  it('answers hostile fields of the visitors’ forms with a 4xx page in the visitor’s language, storing and mailing nothing', async () => {
    const before = await counts();
    const sent = delivered.length;
    const cases: { name: string; path: string; send: (c: FormClient) => Promise<{ status: number; text: string }> }[] = [];
    const signUp = (email: string) => ({ email, password: PASSWORD, confirm: PASSWORD });
    for (const [name, email] of [
      ['CR/LF and a header', 'victim@example.org\r\nBcc: everyone@example.net'],
      ['NUL', 'nul\u0000@example.org'],
      ['ESC', 'esc\u001b[2J@example.org'],
      ['DEL', 'del\u007f@example.org'],
      ['C1 control', 'next\u0085line@example.org'],
    ] as const) {
      cases.push({ name: `sign-up: ${name}`, path: '/sign-up', send: (c) => c.post('/sign-up', signUp(email)) });
      cases.push({ name: `sign-in: ${name}`, path: '/sign-in', send: (c) => c.post('/sign-in', { email, password: PASSWORD }) });
    }
    cases.push(
      { name: 'sign-in: control character in the password', path: '/sign-in', send: (c) => c.post('/sign-in', { email: 'x@example.org', password: `${PASSWORD}\u0000` }) },
      { name: 'sign-up: percent-encoded Latin-1', path: '/sign-up', send: (c) => c.postRaw('/sign-up', body({ _csrf: c.token, password: PASSWORD, confirm: PASSWORD }, { email: 'caf%E9@example.org' }), FORM) },
      { name: 'sign-up: an encoded surrogate', path: '/sign-up', send: (c) => c.postRaw('/sign-up', body({ _csrf: c.token, password: PASSWORD, confirm: PASSWORD }, { email: 'x%ED%A0%80@example.org' }), FORM) },
      { name: 'sign-up: a stray percent sign', path: '/sign-up', send: (c) => c.postRaw('/sign-up', body({ _csrf: c.token, password: PASSWORD, confirm: PASSWORD }, { email: '100%@example.org' }), FORM) },
      {
        name: 'sign-up: raw bytes that are not UTF-8',
        path: '/sign-up',
        send: (c) => c.postRaw('/sign-up', Buffer.concat([Buffer.from(`${body({ _csrf: c.token, password: PASSWORD, confirm: PASSWORD })}&email=caf`), Buffer.from([0xe9]), Buffer.from('@example.org')]), FORM),
      },
      { name: 'sign-up: an overlong address', path: '/sign-up', send: (c) => c.post('/sign-up', signUp(`${'a'.repeat(5000)}@example.org`)) },
      { name: 'sign-up: an overlong password', path: '/sign-up', send: (c) => c.post('/sign-up', { email: 'long@example.org', password: 'p'.repeat(5000), confirm: 'p'.repeat(5000) }) },
      { name: 'sign-up: an overlong body', path: '/sign-up', send: (c) => c.post('/sign-up', { ...signUp('body@example.org'), padding: 'x'.repeat(20_000) }) },
      { name: 'sign-up: a field twice', path: '/sign-up', send: (c) => c.postRaw('/sign-up', `${body({ _csrf: c.token, ...signUp('twice@example.org') })}&email=second%40example.org`, FORM) },
      { name: 'sign-up: JSON', path: '/sign-up', send: (c) => c.postRaw('/sign-up', JSON.stringify({ _csrf: c.token, ...signUp('json\u0000@example.org') }), { 'content-type': 'application/json' }) },
      { name: 'sign-up: plain text', path: '/sign-up', send: (c) => c.postRaw('/sign-up', body({ _csrf: c.token, ...signUp('text@example.org') }), { 'content-type': 'text/plain' }) },
    );
    for (const lang of ['en', 'zh-CN']) {
      for (const { name, path, send } of cases) {
        const client = new FormClient(api.base, { 'accept-language': lang });
        await client.get(path);
        const res = await send(client);
        expect(res.status, `${lang} ${name}`).toBeGreaterThanOrEqual(400);
        expect(res.status, `${lang} ${name}`).toBeLessThan(500);
        expect(res.text, `${lang} ${name}`).toContain(`<html lang="${lang}">`);
      }
    }
    // The page says what was wrong with such a form, in the visitor's words.
    const chinese = new FormClient(api.base, { 'accept-language': 'zh-CN' });
    await chinese.get('/sign-up');
    const page = await chinese.post('/sign-up', signUp('nul\u0000@example.org'));
    expect(page.status).toBe(400);
    expect(page.text).toContain('<title>无法理解的请求 · blockfeed</title>');
    expect(page.text).toContain('控制字符');

    await mailSettled();
    expect(await counts()).toEqual(before);
    expect(delivered.length).toBe(sent);
  });

  it('answers hostile fields of members’ forms alike, changing nothing', async () => {
    await activeMember(db.pool, 'member@example.org', 'pro');
    const member = new FormClient(api.base);
    await member.get('/sign-in');
    expect((await member.post('/sign-in', { email: 'member@example.org', password: PASSWORD })).status).toBe(303);
    await member.get('/account/keys');
    const before = await counts();
    const passwordHash = async () => (await db.pool.query<{ password_hash: string }>(`select password_hash from members where email = 'member@example.org'`)).rows[0]?.password_hash;
    const hash = await passwordHash();
    for (const name of ['nul\u0000key', 'line\r\nbreak', 'esc\u001b[31m', 'x'.repeat(1000)]) {
      const res = await member.post('/account/keys', { name });
      expect(res.status, JSON.stringify(name)).toBe(400);
    }
    await member.get('/account');
    const newPassword = 'a new passphrase\u0000with a NUL';
    expect((await member.post('/account/password', { current: PASSWORD, password: newPassword, confirm: newPassword })).status).toBe(400);
    expect((await member.post('/account/password', { current: `${PASSWORD}\r\n`, password: 'a fine new passphrase', confirm: 'a fine new passphrase' })).status).toBe(400);
    expect(await counts()).toEqual(before);
    expect(await passwordHash()).toBe(hash);
    // Still signed in, and the forms work with ordinary input.
    await member.get('/account/keys');
    expect((await member.post('/account/keys', { name: 'deploy 🚀' })).status).toBe(201);
  });

  it('mails the one address typed, never a list of them or a header smuggled in it', async () => {
    for (const email of ['someone,victim@example.net', 'victim@example.net,someone@example.org', '"victim@example.net"@example.org', '<victim@example.net>', 'victim@example.net>', 'a b@example.org']) {
      const client = new FormClient(api.base);
      await client.get('/sign-up');
      const res = await client.post('/sign-up', { email, password: PASSWORD, confirm: PASSWORD });
      expect(res.status, email).toBe(400);
      expect(res.text, email).toContain('Enter an email address such as name@example.com.');
    }
    await mailSettled();
    expect(delivered.filter((d) => d.rcpt.some((r) => r.includes('victim')))).toEqual([]);

    const sent = delivered.length;
    const client = new FormClient(api.base);
    await client.get('/sign-up');
    expect((await client.post('/sign-up', { email: 'Ops.Team+blockfeed@Example.org', password: PASSWORD, confirm: PASSWORD })).status).toBe(200);
    for (const deadline = Date.now() + 10_000; delivered.length === sent && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
    expect(delivered.slice(sent)).toEqual([{ rcpt: ['ops.team+blockfeed@example.org'], to: 'ops.team+blockfeed@example.org' }]);
  });

  it('keeps every redirect on the site, whatever `next` says', async () => {
    await activeMember(db.pool, 'redirect@example.org');
    const hostile = ['//evil.example/', 'https://evil.example/', '/\\evil.example', '\\\\evil.example', '/account/../\\evil.example', 'javascript:alert(1)', '/account/keys?then=//evil.example', ' /account', '/account%0d%0aSet-Cookie: x=1'];
    for (const next of hostile) {
      const client = new FormClient(api.base);
      const form = await client.get(`/sign-in?next=${encodeURIComponent(next)}`);
      expect(form.text).not.toMatch(/name="next"/);
      const res = await client.post('/sign-in', { email: 'redirect@example.org', password: PASSWORD, next });
      expect(res.status, next).toBe(303);
      expect(res.location, next).toBe('/account/download');
      const again = await client.get(`/sign-in?next=${encodeURIComponent(next)}`);
      expect(again.location, next).toBe('/account/download');
    }
    // A line break in `next` is a form no browser sends: refused whole, nobody signed in.
    const split = new FormClient(api.base);
    await split.get('/sign-in?next=%2Faccount%0D%0ASet-Cookie%3A%20x%3D1');
    const refused = await split.post('/sign-in', { email: 'redirect@example.org', password: PASSWORD, next: '/account\r\nSet-Cookie: x=1' });
    expect(refused.status).toBe(400);
    expect(refused.headers.get('set-cookie') ?? '').not.toMatch(/x=1|blockfeed_session/);
    // The pages sign-in may lead back to, and only those.
    const client = new FormClient(api.base);
    await client.get('/sign-in?next=%2Faccount%2Fkeys');
    expect((await client.post('/sign-in', { email: 'redirect@example.org', password: PASSWORD, next: '/account/keys' })).location).toBe('/account/keys');
    // A members' page asked for without a session sends to sign-in with the path alone.
    expect((await new FormClient(api.base).get('/account/download?endpoint=//evil.example')).location).toBe('/sign-in?next=%2Faccount%2Fdownload');
  });

  it('writes no address, password or token a client sent to the log, not even from a refusal of the mail server', async () => {
    const client = new FormClient(api.base);
    await client.get('/sign-up');
    const token = client.token;
    expect((await client.post('/sign-up', { email: 'bounce.me@example.org', password: 'a password for the log test', confirm: 'a password for the log test' })).status).toBe(200);
    for (const deadline = Date.now() + 10_000; !api.log().includes('sign-up email could not be sent') && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
    expect(api.log()).toContain('sign-up email could not be sent');
    await client.get('/sign-in');
    await client.post('/sign-in', { email: 'member@example.org', password: 'a wrong password for the log test' });

    const log = api.log();
    for (const secret of ['bounce.me', 'member@example.org', 'victim', 'everyone@example.net', 'password for the log test', PASSWORD, token, client.token]) {
      expect(log, secret).not.toContain(secret);
    }
    // Every line is one JSON object: nothing a client typed breaks a line.
    for (const line of log.split('\n').filter(Boolean)) expect(() => JSON.parse(line) as unknown, line).not.toThrow();
  });
});
