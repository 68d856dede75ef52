// The member centre's defences, exercised from Chromium: throttled sign-in, CSRF tokens, sessions that end on
// the server and change at sign-in, no account enumeration, and a Content-Security-Policy the pages live with.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CSRF_COOKIE, SESSION_COOKIE } from '../../api-server/website/site.ts';
import { CONTENT_SECURITY_POLICY } from '../../api-server/website/pages.ts';
import { openPage } from '../support/browser.ts';
import { PASSWORD, activeMember, inOneThrottleWindow, signIn, signUp, startSite, submit, textOf, type Site } from '../support/browser-site.ts';

describe('member centre security', () => {
  let site: Site;
  beforeAll(async () => {
    site = await startSite();
  });
  afterAll(async () => {
    await site?.close();
  });

  it('throttles sign-in after five wrong passwords for an account from one address, even with the right one, and not other accounts', async () => {
    await activeMember(site, 'victim@example.org');
    await activeMember(site, 'bystander@example.org');
    const { context, page, problems } = await openPage(site.browser);
    await inOneThrottleWindow();
    for (let attempt = 1; attempt <= 5; attempt++) {
      await signIn(page, site.api.base, 'victim@example.org', `wrong password number ${attempt}`);
      expect(await textOf(page.getByRole('alert'))).toBe('The email address or the password is not right.');
    }
    await signIn(page, site.api.base, 'victim@example.org', PASSWORD);
    expect(await textOf(page.getByRole('alert'))).toMatch(/^Too many sign-in attempts\. Try again in \d+ minutes?\.$/);
    expect(new URL(page.url()).pathname).toBe('/sign-in');
    // An address that has no account is throttled alike (nothing tells the two apart).
    for (let attempt = 1; attempt <= 6; attempt++) await signIn(page, site.api.base, 'nobody@example.org', 'whatever it may be');
    expect(await textOf(page.getByRole('alert'))).toMatch(/^Too many sign-in attempts/);

    await signIn(page, site.api.base, 'bystander@example.org', PASSWORD);
    expect(new URL(page.url()).pathname).toBe('/account/download');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('refuses a form sent without its CSRF token, or with another session’s', async () => {
    await activeMember(site, 'csrf@example.org', 'pro');
    const { context, page } = await openPage(site.browser);
    // Signing in without the token: the form is refused before the password is looked at.
    await page.goto(`${site.api.base}/sign-in`);
    await page.locator('input[name=_csrf]').evaluate((input: { remove(): void }) => input.remove());
    await page.getByLabel('Email address').fill('csrf@example.org');
    await page.getByLabel('Password').fill(PASSWORD);
    await submit(page, page.getByRole('main').getByRole('button', { name: 'Sign in' }));
    expect(await textOf(page.locator('h1'))).toBe('Form refused');

    await signIn(page, site.api.base, 'csrf@example.org');
    expect(new URL(page.url()).pathname).toBe('/account/download');
    const refused = await page.request.post(`${site.api.base}/account/keys`, { form: { name: 'forged' } });
    expect(refused.status()).toBe(403);
    const { context: other, page: otherPage } = await openPage(site.browser);
    await otherPage.goto(`${site.api.base}/sign-in`);
    const foreignToken = await otherPage.locator('input[name=_csrf]').getAttribute('value');
    const forged = await page.request.post(`${site.api.base}/account/keys`, { form: { _csrf: foreignToken ?? '', name: 'forged' } });
    expect(forged.status()).toBe(403);
    const { rows } = await site.db.pool.query(`select 1 from api_keys where name = 'forged'`);
    expect(rows).toEqual([]);
    // Every form of the site, not only these two, refuses a post without its token.
    const fields = { name: 'forged', email: 'csrf@example.org', password: 'a new passphrase here', confirm: 'a new passphrase here', current: PASSWORD };
    for (const path of ['/sign-up', '/sign-in', '/sign-out', '/account/password', '/account/keys', '/account/keys/abcdefgh/revoke']) {
      expect((await page.request.post(`${site.api.base}${path}`, { form: fields })).status(), path).toBe(403);
    }
    await page.goto(`${site.api.base}/account/keys`);
    expect(new URL(page.url()).pathname).toBe('/account/keys'); // the refused sign-out ended nothing
    await other.close();
    await context.close();
  });

  it('stores a session only from sign-in, under a new id, and ends it on the server at sign-out', async () => {
    await activeMember(site, 'session@example.org');
    await activeMember(site, 'planter@example.org');
    const { context, page, problems } = await openPage(site.browser);
    await page.goto(`${site.api.base}/sign-in`);
    // A visitor has no session: the form's secret is a signed cookie, kept from scripts.
    expect((await context.cookies()).map((c) => c.name)).toEqual([CSRF_COOKIE]);
    const csrf = (await context.cookies()).find((c) => c.name === CSRF_COOKIE);
    expect(csrf?.httpOnly).toBe(true);
    expect(csrf?.sameSite).toBe('Lax');
    // A session id planted before sign-in (session fixation: one the attacker got by signing in and out
    // again, since visitors get none) is replaced by a new one.
    const { context: planter, page: planterPage } = await openPage(site.browser);
    await signIn(planterPage, site.api.base, 'planter@example.org');
    const planted = (await planter.cookies()).find((c) => c.name === SESSION_COOKIE);
    if (!planted) throw new Error('no session cookie to plant');
    await submit(planterPage, planterPage.getByRole('button', { name: 'Sign out' }));
    await context.addCookies([planted]);
    await signIn(page, site.api.base, 'session@example.org');
    const during = (await context.cookies()).find((c) => c.name === SESSION_COOKIE);
    expect(during?.value).toBeTruthy();
    expect(during?.value).not.toBe(planted.value);
    expect(during?.httpOnly).toBe(true);
    expect(during?.sameSite).toBe('Lax');
    await page.goto(`${site.api.base}/account`);
    expect(await textOf(page.locator('main'))).toContain('session@example.org');
    await planter.close();
    const sessionsOf = async () =>
      (await site.db.pool.query(`select 1 from web_sessions s join members m on m.id = s.member_id where m.email = 'session@example.org'`)).rowCount;
    expect(await sessionsOf()).toBe(1);

    await submit(page, page.getByRole('button', { name: 'Sign out' }));
    expect(await textOf(page.getByRole('status'))).toBe('You are signed out.');
    expect(await sessionsOf()).toBe(0);

    // The old cookie, replayed from elsewhere, signs nobody in.
    const { context: thief, page: thiefPage } = await openPage(site.browser);
    if (!during) throw new Error('no session cookie');
    await thief.addCookies([during]);
    await thiefPage.goto(`${site.api.base}/account`);
    expect(new URL(thiefPage.url()).pathname).toBe('/sign-in');
    expect(problems).toEqual([]);
    await thief.close();
    await context.close();
  });

  it('throttles guesses of the current password on the account page as it throttles sign-in', async () => {
    await activeMember(site, 'guessed@example.org');
    const { context, page, problems } = await openPage(site.browser);
    await signIn(page, site.api.base, 'guessed@example.org');
    await inOneThrottleWindow();
    const change = async (current: string) => {
      await page.goto(`${site.api.base}/account`);
      await page.locator('input[name=current]').fill(current);
      await page.locator('input[name=password]').fill('a passphrase nobody will guess');
      await page.locator('input[name=confirm]').fill('a passphrase nobody will guess');
      await submit(page, page.locator('main form button[type=submit]'));
      return textOf(page.locator('#f-current-error'));
    };
    for (let attempt = 1; attempt <= 5; attempt++) expect(await change(`guess number ${attempt}`)).toBe('The current password is not right.');
    expect(await change(PASSWORD)).toMatch(/^Too many sign-in attempts\. Try again in \d+ minutes?\.$/);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('changes the password after checking the current one, signing out every other session', async () => {
    await activeMember(site, 'rotate@example.org');
    const { context, page, problems } = await openPage(site.browser);
    const { context: laptop, page: laptopPage } = await openPage(site.browser);
    await signIn(page, site.api.base, 'rotate@example.org');
    await signIn(laptopPage, site.api.base, 'rotate@example.org');
    const cookie = async () => (await context.cookies()).find((c) => c.name === SESSION_COOKIE)?.value;
    const before = await cookie();

    await page.goto(`${site.api.base}/account`);
    const newPassword = 'a brand new passphrase for this account';
    await page.locator('input[name=current]').fill('not the current one at all');
    await page.locator('input[name=password]').fill(newPassword);
    await page.locator('input[name=confirm]').fill(newPassword);
    await submit(page, page.locator('main form button[type=submit]'));
    expect(await textOf(page.locator('#f-current-error'))).toBe('The current password is not right.');

    await page.locator('input[name=current]').fill(PASSWORD);
    await page.locator('input[name=password]').fill(newPassword);
    await page.locator('input[name=confirm]').fill(newPassword);
    await submit(page, page.locator('main form button[type=submit]'));
    expect(await textOf(page.getByRole('status'))).toBe('Your password is changed. Your other sessions are signed out.');
    expect(await cookie()).not.toBe(before);
    await page.goto(`${site.api.base}/account/keys`);
    expect(new URL(page.url()).pathname).toBe('/account/keys');
    await laptopPage.goto(`${site.api.base}/account/keys`);
    expect(new URL(laptopPage.url()).pathname).toBe('/sign-in');

    await signIn(laptopPage, site.api.base, 'rotate@example.org', PASSWORD);
    expect(await textOf(laptopPage.getByRole('alert'))).toBe('The email address or the password is not right.');
    await signIn(laptopPage, site.api.base, 'rotate@example.org', newPassword);
    expect(new URL(laptopPage.url()).pathname).toBe('/account/download');
    expect(problems).toEqual([]);
    await laptop.close();
    await context.close();
  });

  it('answers a sign-up the same whether or not the address has an account', async () => {
    await activeMember(site, 'taken@example.org');
    const { context, page } = await openPage(site.browser);
    await signUp(page, site.api.base, 'taken@example.org');
    const taken = await textOf(page.locator('main'));
    await signUp(page, site.api.base, 'free@example.org');
    expect(await textOf(page.locator('main'))).toBe(taken);
    // The unknown address and the wrong password read alike too.
    await signIn(page, site.api.base, 'free-but-unknown@example.org', 'some password here');
    const unknown = await textOf(page.getByRole('alert'));
    await signIn(page, site.api.base, 'taken@example.org', 'not the password at all');
    expect(await textOf(page.getByRole('alert'))).toBe(unknown);
    await context.close();
  });

  it('serves every page with the strict Content-Security-Policy, and the pages keep to it', async () => {
    await activeMember(site, 'csp@example.org', 'enterprise');
    const { context, page, problems } = await openPage(site.browser);
    const violations: string[] = [];
    await page.exposeFunction('reportViolation', (v: string) => violations.push(v));
    await page.addInitScript({
      content: "document.addEventListener('securitypolicyviolation', (e) => window.reportViolation(e.violatedDirective + ' ' + e.blockedURI))",
    });
    await signIn(page, site.api.base, 'csp@example.org');
    for (const path of ['/', '/?hours=168', '/docs', '/account', '/account/download?endpoint=export&level=high', '/account/keys', '/no-such-page']) {
      const res = await page.goto(`${site.api.base}${path}`);
      expect(res?.headers()['content-security-policy']).toBe(CONTENT_SECURITY_POLICY);
      // Pages of a signed-in member are never stored (the not-found page knows no member).
      expect(res?.headers()['cache-control']).toBe(path === '/no-such-page' ? 'no-cache' : 'no-store');
    }
    expect((await page.goto(`${site.api.base}/no-such-page`))?.status()).toBe(404);
    expect(violations).toEqual([]);
    expect(problems).toEqual([]);
    expect(CONTENT_SECURITY_POLICY).not.toMatch(/unsafe/);
    // The watch works: an image from elsewhere is refused and reported.
    await page.evaluate("document.body.append(Object.assign(document.createElement('img'), { src: 'https://elsewhere.example/x.png' }))");
    for (const deadline = Date.now() + 5000; !violations.length && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
    expect(violations).toEqual(['img-src https://elsewhere.example/x.png']);
    await context.close();
  });
});
