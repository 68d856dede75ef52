// Every page of the website in both languages, on demo data: axe-core (run in the page) finds nothing serious
// or critical, nothing fails to load, and a screenshot of each is kept in test/browser/artifacts/.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../common/logging.ts';
import { loadDemo } from '../../api-server/demo/demo.ts';
import { openPage, screenshot, seriousA11yViolations } from '../support/browser.ts';
import { activeMember, signIn, startSite, submit, type Site } from '../support/browser-site.ts';

const LANGUAGES = [
  { lang: 'en', locale: 'en-US', heading: 'Live attack statistics' },
  { lang: 'zh-CN', locale: 'zh-CN', heading: '实时攻击统计' },
] as const;

describe('every page, in both languages', () => {
  let site: Site;
  beforeAll(async () => {
    site = await startSite();
    await loadDemo(site.db.pool, createLogger({ level: 'warn' }), { events: 20_000, seed: 19 });
  });
  afterAll(async () => {
    await site?.close();
  });

  it('the accessibility check finds what it should (a control without a name)', async () => {
    const { context, page } = await openPage(site.browser);
    await page.setContent('<!doctype html><html lang="en"><title>t</title><main><input type="text"></main></html>');
    expect((await seriousA11yViolations(page)).join('\n')).toMatch(/^label \(critical\)/m);
    await context.close();
  });

  for (const { lang, locale, heading } of LANGUAGES) {
    it(`${lang}: no serious accessibility violations, nothing broken`, async () => {
      const base = site.api.base;
      const email = `pages-${lang}@example.org`;
      await activeMember(site, email, 'pro');
      const { context, page, problems } = await openPage(site.browser, { locale });
      const findings: Record<string, string[]> = {};
      const check = async (name: string) => {
        await page.waitForLoadState();
        expect(await page.locator('html').getAttribute('lang')).toBe(lang);
        findings[name] = await seriousA11yViolations(page);
        await screenshot(page, `${name}.${lang}`);
      };

      await page.goto(`${base}/`);
      expect((await page.locator('h1').textContent())?.trim()).toBe(heading);
      await check('home');
      await page.goto(`${base}/?hours=720`);
      await check('home-30-days');
      await page.goto(`${base}/docs`);
      await check('docs');
      await page.goto(`${base}/sign-up`);
      await check('sign-up');
      await page.locator('input[name=email]').fill('not an address');
      await page.locator('input[name=password]').fill('short');
      await submit(page, page.locator('main form button[type=submit]'));
      await check('sign-up-mistakes');
      await page.goto(`${base}/sign-in`);
      await check('sign-in');
      await page.goto(`${base}/no-such-page`);
      await check('not-found');

      await signIn(page, base, email);
      await check('download');
      await page.goto(`${base}/account/download?endpoint=export&type=attacker&level=high&hours=168&isp=电信`);
      await check('download-export');
      await page.goto(`${base}/account/keys`);
      await page.locator('input[name=name]').fill('edge firewall');
      await submit(page, page.locator('main form button[type=submit]'));
      await check('key-created');
      await page.goto(`${base}/account/keys`);
      await check('keys');
      await page.goto(`${base}/account`);
      await check('account');

      expect(findings).toEqual(Object.fromEntries(Object.keys(findings).map((name) => [name, []])));
      expect(problems).toEqual([]);
      await context.close();
    });
  }
});
