// The member centre end to end in Chromium, without SMTP (so the operator approves accounts): sign up, the
// operator approves, sign in, download the basic list, the operator upgrades the account, create an API key
// on the page, use it on the API, revoke it on the page.
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settledStatus } from '../support/api-server.ts';
import { openPage, screenshot } from '../support/browser.ts';
import { OLDER, RECENT, lines, signIn, signUp, startSite, submit, textOf, type Site } from '../support/browser-site.ts';

describe('member centre: sign up to a revoked key', () => {
  let site: Site;
  beforeAll(async () => {
    site = await startSite();
  });
  afterAll(async () => {
    await site?.close();
  });

  it('signs up, is approved, downloads the basic list, becomes pro, creates a key that works and revokes it', async () => {
    const base = site.api.base;
    const email = 'Ops.Team@Example.org';
    const { context, page, problems } = await openPage(site.browser);

    await signUp(page, base, email);
    expect(await textOf(page.locator('h1'))).toBe('Account requested');

    // Not before the operator has approved it.
    await signIn(page, base, email);
    expect(await textOf(page.getByRole('alert'))).toBe('Your account is waiting for the operator’s approval.');
    const listed = await site.cli(['members', 'list']);
    expect(listed.stdout).toMatch(/^1\s+pending\s+member\s+0\s+\S+\s+ops\.team@example\.org$/m);
    const approved = await site.cli(['members', 'approve', 'ops.team@example.org']);
    expect(approved.code).toBe(0);
    expect(approved.stdout).toBe('activated member 1 <ops.team@example.org> (was pending); it can sign in now\n');

    await signIn(page, base, email.toUpperCase());
    expect(new URL(page.url()).pathname).toBe('/account/download');
    await page.getByText('Feeds and API keys come with a subscription').waitFor();

    // The basic list, as a file, is the list of /api/honeypot/dedup for the same window.
    await page.getByLabel('Window').selectOption('24');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download the list' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^blockfeed-basic-24h-\d{4}-\d\d-\d\d\.txt$/);
    const file = lines(await readFile(await download.path(), 'utf8'));
    const api = await fetch(`${base}/api/honeypot/dedup?hours=24`);
    expect(api.status).toBe(200);
    expect(file).toEqual(lines(await api.text()));
    expect(file).toEqual(RECENT.map((a) => a.ip).sort());
    expect(file).not.toContain(OLDER[0]?.ip);

    // A member has no keys: the page says so and offers no form.
    await page.goto(`${base}/account/keys`);
    await page.getByText('API keys come with a subscription').waitFor();
    expect(await page.getByRole('button', { name: 'Create key' }).count()).toBe(0);

    const upgraded = await site.cli(['members', 'set-tier', email, 'pro']);
    expect(upgraded.stdout).toBe('member 1 <ops.team@example.org>: tier member -> pro\n');

    await page.goto(`${base}/account/keys`);
    await page.getByText('Your tier is Pro: 10,000 calls per UTC day.').waitFor();
    await page.getByLabel('Name').fill('edge firewall');
    await submit(page, page.getByRole('button', { name: 'Create key' }));
    expect(await textOf(page.locator('#created-title'))).toBe('Your new key “edge firewall”');
    const key = await textOf(page.locator('#new-key'));
    expect(key).toMatch(/^bf_[a-z0-9]{8}_[A-Za-z0-9_-]{32}$/);
    // The snippets carry the new key, ready to paste.
    expect(await textOf(page.locator('#snippet-curl'))).toContain(`X-API-Key: ${key}`);
    expect(await textOf(page.locator('#snippet-yaml'))).toContain(`apiKey: ${key}`);
    await screenshot(page, 'flow-key-created.en');

    const exported = await fetch(`${base}/api/export?hours=24`, { headers: { 'x-api-key': key } });
    expect(exported.status).toBe(200);
    expect(lines(await exported.text())).toEqual(RECENT.map((a) => a.ip).sort());

    // The secret is not shown again; the list has its prefix, last use and calls today against the quota.
    await page.goto(`${base}/account/keys`);
    expect(await page.locator('#new-key').count()).toBe(0);
    expect(await page.content()).not.toContain(key.slice(12));
    const row = page.getByRole('row', { name: /edge firewall/ });
    const rowText = await textOf(row);
    expect(rowText).toContain(`${key.slice(0, 11)}_…`);
    expect(rowText).toContain('1 / 10,000');
    expect(rowText).not.toContain('never');

    page.once('dialog', (dialog) => void dialog.accept());
    await submit(page, row.getByRole('button', { name: 'Revoke the key “edge firewall”' }));
    expect(await textOf(page.getByRole('status'))).toBe('The key “edge firewall” is revoked.');

    // Every server forgets a revoked key at once (NOTIFY).
    expect(await settledStatus(`${base}/api/export?hours=24`, { 'x-api-key': key }, 401)).toBe(401);

    expect(problems).toEqual([]);
    await context.close();
  });
});
