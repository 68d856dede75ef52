// "Is this address listed, and why?" end to end in Chromium: check a listed address on the public page, ask for
// its removal on the form, the operator approves it on the command line, the address leaves /api/export and
// the check says why. Every page of the way in both languages passes axe-core and is photographed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKey } from '../../api-server/keys/store.ts';
import { openPage, screenshot, seriousA11yViolations } from '../support/browser.ts';
import { lines, startSite, submit, textOf, type Site } from '../support/browser-site.ts';

describe('the address check and removal requests', () => {
  let site: Site;
  beforeAll(async () => {
    site = await startSite();
  });
  afterAll(async () => {
    await site?.close();
  });

  it('checks a listed address, requests its removal, the operator approves, it leaves the export and the check says why', async () => {
    const base = site.api.base;
    const { key } = await createKey(site.db.pool, 'pro', 'browser check');
    const exported = async () => {
      const res = await fetch(`${base}/api/export?hours=24`, { headers: { 'x-api-key': key } });
      expect(res.status).toBe(200);
      return lines(await res.text());
    };
    // Answered once, and so kept in the response cache.
    expect(await exported()).toContain('203.0.113.20');

    const { context, page, problems } = await openPage(site.browser);
    const findings: Record<string, string[]> = {};
    const check = async (name: string) => {
      await page.waitForLoadState();
      findings[name] = await seriousA11yViolations(page);
      await screenshot(page, name);
    };

    await page.goto(`${base}/`);
    await page.getByRole('link', { name: 'Check an address' }).click();
    await page.waitForLoadState();
    expect(await textOf(page.locator('h1'))).toBe('Check an address');
    await check('check.en');
    await page.getByLabel('IPv4 or IPv6 address').fill('203.0.113.20');
    await submit(page, page.getByRole('button', { name: 'Check' }));
    expect(await textOf(page.locator('#verdict'))).toMatch(/^Listed: in \d+ of the 20 lists and windows below\.$/);
    expect(await textOf(page.getByRole('row', { name: /^All attackers and scanners \(dedup\)/ }))).toMatch(/listed\s*listed\s*not offered/);
    await check('check-listed.en');

    await page.getByRole('link', { name: 'Request removal' }).click();
    await page.waitForLoadState();
    expect(await page.getByLabel('Address or network').inputValue()).toBe('203.0.113.20');
    await check('removal.en');
    await page.getByLabel('Your email address').fill('noc@example.net');
    await page.getByLabel('Why it should not be listed').fill('This is the NAT gateway of our office; the attacks came from a guest laptop, now gone.');
    await submit(page, page.getByRole('button', { name: 'Send the request' }));
    expect(await textOf(page.locator('h1'))).toBe('Request recorded');
    const id = /Your request no\. (\d+) for 203\.0\.113\.20\/32 is recorded\./.exec(await textOf(page.locator('main')))?.[1];
    expect(id).toBeDefined();
    await check('removal-sent.en');

    // Nothing has changed yet: the operator decides.
    expect(await exported()).toContain('203.0.113.20');
    const pending = await site.cli(['removals', 'list']);
    expect(pending.stdout).toMatch(new RegExp(`^${id}\\s+pending\\s+\\S+Z\\s+203\\.0\\.113\\.20/32\\s+127\\.0\\.0\\.1\\s+noc@example\\.net\\s+-\\s+This is the NAT gateway`, 'm'));
    const approved = await site.cli(['removals', 'approve', String(id), '--note', 'office NAT, confirmed']);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toMatch(new RegExp(`^approved removal request ${id}: 203\\.0\\.113\\.20/32 is left out of every list`));

    // The cached export is dropped by the operator's change; the address is gone from it.
    await expect.poll(exported, { timeout: 8000 }).not.toContain('203.0.113.20');
    expect(await exported()).toEqual(['198.51.100.10', '203.0.113.31']);

    await page.goto(`${base}/check?ip=203.0.113.20`);
    const verdict = await textOf(page.locator('#verdict'));
    expect(verdict).toMatch(/^Not listed: excluded by the operator on .+ UTC\. It stays out of every list whatever it does\. The exclusion was granted on a removal request\.$/);
    expect(await page.getByRole('link', { name: 'Request removal' }).count()).toBe(0);
    await check('check-excluded.en');

    // The same pages in Chinese.
    const zh = await openPage(site.browser, { locale: 'zh-CN' });
    const zhCheck = async (name: string) => {
      await zh.page.waitForLoadState();
      expect(await zh.page.locator('html').getAttribute('lang')).toBe('zh-CN');
      findings[name] = await seriousA11yViolations(zh.page);
      await screenshot(zh.page, name);
    };
    await zh.page.goto(`${base}/check`);
    await zhCheck('check.zh-CN');
    await zh.page.getByLabel('IPv4 或 IPv6 地址').fill('203.0.113.31');
    await submit(zh.page, zh.page.getByRole('button', { name: '查询' }));
    expect(await textOf(zh.page.locator('#verdict'))).toMatch(/^已列入：/);
    await zhCheck('check-listed.zh-CN');
    await zh.page.getByRole('link', { name: '申请移除' }).click();
    await zhCheck('removal.zh-CN');
    await zh.page.goto(`${base}/check?ip=203.0.113.20`);
    expect(await textOf(zh.page.locator('#verdict'))).toMatch(/^未列入：运营者已于 .+ 将其排除。/);
    await zhCheck('check-excluded.zh-CN');
    await zh.page.goto(`${base}/check?ip=203.0.113.0/24`);
    await zhCheck('check-mistake.zh-CN');

    expect(findings).toEqual(Object.fromEntries(Object.keys(findings).map((name) => [name, []])));
    expect([...problems, ...zh.problems]).toEqual([]);
    await zh.context.close();
    await context.close();
  });
});
