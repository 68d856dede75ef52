// Visitors cost the server no state: the forms' CSRF secret travels in a signed cookie, and a session row is
// written only when someone signs in. Every form still refuses a post without its token, and a member's
// tokens are bound to the session: a cookie and token taken elsewhere (planted from a sibling site, say) do
// not pass.
import { describe, expect, it } from 'vitest';
import { SESSION_COOKIE } from '../../../../api-server/website/site.ts';
import { apiOnFreshDatabase } from '../../../support/api-server.ts';
import { FormClient, PASSWORD, activeMember } from '../../../support/form-client.ts';

const CSRF_COOKIE = 'blockfeed_csrf';

const server = apiOnFreshDatabase();

async function storedSessions(): Promise<number> {
  const { rows } = await server.db.pool.query<{ n: number }>('select count(*)::int as n from web_sessions');
  return rows[0]?.n ?? -1;
}

async function signedIn(email: string): Promise<FormClient> {
  const client = new FormClient(server.api.base);
  await client.get('/sign-in');
  const res = await client.post('/sign-in', { email, password: PASSWORD });
  expect(res.status).toBe(303);
  return client;
}

describe('website sessions', () => {
  it('stores nothing for visitors: 10,000 views of the forms and failed posts add no session row', async () => {
    await activeMember(server.db.pool, 'owner@example.org');
    const pages = ['/sign-in', '/sign-up', '/sign-in?next=/account/keys', '/sign-up?lang=zh-CN', '/sign-in?signed-out'];
    // Half of the views from one returning browser, half from new ones (each would have been a row).
    const returning = new FormClient(server.api.base);
    let next = 0;
    const statuses = new Map<number, number>();
    const viewer = async () => {
      for (let n = next++; n < 10_000; n = next++) {
        const client = n % 2 ? returning : new FormClient(server.api.base);
        const res = await client.get(pages[n % pages.length] ?? '/');
        const status = res.status === 200 && !res.text.includes('name="_csrf"') ? -1 : res.status;
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: 8 }, viewer));
    expect(statuses).toEqual(new Map([[200, 10_000]]));

    const visitor = new FormClient(server.api.base);
    await visitor.get('/sign-in');
    const token = visitor.token;
    expect((await visitor.post('/sign-in', { email: 'owner@example.org', password: 'not the password at all' })).status).toBe(400);
    expect((await visitor.post('/sign-in', { email: 'nobody@example.org', password: 'not the password at all' })).status).toBe(400);
    expect((await visitor.post('/sign-in', { _csrf: '', email: 'owner@example.org', password: PASSWORD })).status).toBe(403);
    expect((await visitor.post('/sign-in', { _csrf: `${token.slice(0, -2)}xx`, email: 'owner@example.org', password: PASSWORD })).status).toBe(403);
    const cookieless = new FormClient(server.api.base);
    cookieless.token = token;
    expect((await cookieless.post('/sign-in', { email: 'owner@example.org', password: PASSWORD })).status).toBe(403);
    for (let attempt = 1; attempt <= 6; attempt++) await visitor.post('/sign-in', { email: 'guessed@example.org', password: `guess number ${attempt}` });
    expect((await visitor.post('/sign-in', { email: 'guessed@example.org', password: 'one more guess' })).status).toBe(429);

    await visitor.get('/sign-up');
    expect((await visitor.post('/sign-up', { email: 'new@example.org', password: 'short', confirm: 'short' })).status).toBe(400);
    expect((await visitor.post('/sign-up', { email: 'new@example.org', password: 'a long enough passphrase', confirm: 'another one' })).status).toBe(400);
    expect((await visitor.post('/sign-up', { email: 'not an address', password: PASSWORD, confirm: PASSWORD })).status).toBe(400);
    expect((await visitor.post('/sign-up', { _csrf: '', email: 'new@example.org', password: PASSWORD, confirm: PASSWORD })).status).toBe(403);

    expect(await storedSessions()).toBe(0);
    expect(visitor.cookie(SESSION_COOKIE)).toBeUndefined();
    // The secret of a visitor's forms is a signed cookie for as long as the browser runs, kept from scripts.
    const first = await new FormClient(server.api.base).get('/sign-up');
    expect(first.headers.getSetCookie()).toEqual([expect.stringMatching(/^blockfeed_csrf=[\w-]+\.[\w+/]+; Path=\/; HttpOnly; SameSite=Lax$/)]);

    // Signing in makes the one row, and signing out removes it.
    const member = new FormClient(server.api.base);
    await member.get('/sign-in');
    const signingIn = await member.post('/sign-in', { email: 'owner@example.org', password: PASSWORD });
    expect(signingIn.status).toBe(303);
    expect(signingIn.headers.getSetCookie().sort()).toEqual([
      expect.stringMatching(/^blockfeed_device=[\w-]+\.[\w-]+\.\d+\.[\w+/]+; Max-Age=15552000; Path=\/; HttpOnly; SameSite=Lax$/),
      expect.stringMatching(/^blockfeed_session=[\w-]+\.[\w+/]+; Path=\/; Expires=[^;]+; HttpOnly; SameSite=Lax$/),
    ]);
    expect(await storedSessions()).toBe(1);
    await member.get('/account');
    expect((await member.post('/sign-out', {})).status).toBe(303);
    expect(await storedSessions()).toBe(0);
  });

  it('refuses every form without its token, and a member’s form with a cookie and token from elsewhere', async () => {
    await activeMember(server.db.pool, 'member@example.org', 'pro');
    await activeMember(server.db.pool, 'other@example.org', 'pro');
    const member = await signedIn('member@example.org');
    await member.get('/account/keys');
    const fields = { name: 'forged', email: 'member@example.org', password: 'a new passphrase here', confirm: 'a new passphrase here', current: PASSWORD };
    for (const path of ['/sign-up', '/sign-in', '/sign-out', '/account/password', '/account/keys', '/account/keys/abcdefgh/revoke']) {
      expect((await member.post(path, { ...fields, _csrf: '' })).status, path).toBe(403);
    }

    // A visitor's cookie and token, or another member's, planted in the member's browser: refused, since a
    // member's tokens are bound to the session.
    const own = { cookie: member.cookie(CSRF_COOKIE), token: member.token };
    const visitor = new FormClient(server.api.base);
    await visitor.get('/sign-in');
    const other = await signedIn('other@example.org');
    await other.get('/account/keys');
    for (const planted of [visitor, other]) {
      member.setCookie(CSRF_COOKIE, planted.cookie(CSRF_COOKIE));
      expect((await member.post('/account/keys', { _csrf: planted.token, name: 'forged' })).status).toBe(403);
    }
    expect((await server.db.pool.query(`select 1 from api_keys where name = 'forged'`)).rows).toEqual([]);

    member.setCookie(CSRF_COOKIE, own.cookie);
    expect((await member.post('/account/keys', { _csrf: own.token, name: 'made here' })).status).toBe(201);
  });
});
