// What the browser tests share: an api-server (with its website) on a fresh database holding known attack
// data, Chromium, the operator's CLI on the same database, and the steps a person takes on the site.
import type { Browser, Locator, Page } from 'playwright-core';
import type { Config } from '../../api-server/config.ts';
import { hashPassword } from '../../api-server/members/passwords.ts';
import { activateMember, createMember, setMemberTier } from '../../api-server/members/store.ts';
import { SIGN_IN_PER_PAIR } from '../../api-server/website/throttle.ts';
import { startApi, type TestApi } from './api-server.ts';
import { insertAddresses, type FixtureAddress } from './attack-fixtures.ts';
import { launchChromium } from './browser.ts';
import { runCli, type CliResult } from './cli.ts';
import { freshDatabase, type TestDatabase } from './db.ts';

/** Seen in the last 24 hours: the basic list of a 24-hour window. */
export const RECENT: FixtureAddress[] = [
  { ip: '203.0.113.20', honeypot: 1, interaction: 1, critical: 1, services: { ssh: 1 }, country: 'CN', province: '广东省', isp: '电信', ports: [22], attacks: 40 },
  { ip: '198.51.100.10', telescope: 2, services: { web: 2 }, country: 'US', net: 'idc', ports: [80], attacks: 3 },
  { ip: '203.0.113.31', honeypot: 5, high: 5, services: { rdp: 5 }, country: 'DE', ports: [3389], attacks: 12 },
];
/** Seen only before it: in no 24-hour list. */
export const OLDER: FixtureAddress[] = [{ ip: '203.0.113.99', honeypot: 60, interaction: 60, services: { ssh: 60 }, country: 'FR', ports: [22], attacks: 5 }];

export const PASSWORD = 'correct horse battery staple';

export interface Site {
  db: TestDatabase;
  api: TestApi;
  browser: Browser;
  /** `blockfeed <args>` on the site's database, as the operator runs it. */
  cli(args: string[]): Promise<CliResult>;
  close(): Promise<void>;
}

export async function startSite(overrides: Partial<Config> = {}, options: { port?: number } = {}): Promise<Site> {
  const db = await freshDatabase();
  await insertAddresses(db.pool, [...RECENT, ...OLDER]);
  const api = await startApi(db.url, overrides, options);
  const browser = await launchChromium();
  return {
    db,
    api,
    browser,
    cli: (args) => runCli(args, { DATABASE_URL: db.url, LOG_LEVEL: 'warn' }),
    close: async () => {
      await browser.close();
      await api.close();
      await db.drop();
    },
  };
}

/** An approved account made directly in the store (for tests about what comes after signing up). */
export async function activeMember(site: Site, email: string, tier = 'member'): Promise<void> {
  const member = await createMember(site.db.pool, { email, passwordHash: await hashPassword(PASSWORD), status: 'pending' });
  if (!member) throw new Error(`${email} exists already`);
  await activateMember(site.db.pool, member.id);
  if (tier !== 'member') await setMemberTier(site.db.pool, member.id, tier);
}

/** Clicks a button that sends a form and waits for the page that answers it. */
export async function submit(page: Page, button: Locator): Promise<void> {
  await Promise.all([page.waitForEvent('framenavigated'), button.click()]);
  await page.waitForLoadState();
}

/** The text of an element, once it is there. */
export async function textOf(locator: Locator): Promise<string> {
  await locator.first().waitFor();
  return ((await locator.first().textContent()) ?? '').trim();
}

// The account forms are filled in by their fields' names, so the steps work in either language.

export async function signUp(page: Page, base: string, email: string, password = PASSWORD): Promise<void> {
  await page.goto(`${base}/sign-up`);
  await page.locator('input[name=email]').fill(email);
  await page.locator('input[name=password]').fill(password);
  await page.locator('input[name=confirm]').fill(password);
  await submit(page, page.locator('main form button[type=submit]'));
}

export async function signIn(page: Page, base: string, email: string, password = PASSWORD): Promise<void> {
  await page.goto(`${base}/sign-in`);
  await page.locator('input[name=email]').fill(email);
  await page.locator('input[name=password]').fill(password);
  await submit(page, page.locator('main form button[type=submit]'));
}

export function lines(text: string): string[] {
  return text.split('\n').filter(Boolean).sort();
}

/**
 * Waits, when needed, until the sign-in throttle's fixed window (of an account from one address, as the
 * browser is) has `marginMs` left, so that a burst of attempts falls in one window: one that straddles a
 * quarter hour is split across two, by design, and is not throttled.
 */
export async function inOneThrottleWindow(marginMs = 60_000): Promise<void> {
  const windowMs = SIGN_IN_PER_PAIR.windowSeconds * 1000;
  const left = windowMs - (Date.now() % windowMs);
  if (left < marginMs) await new Promise((resolve) => setTimeout(resolve, left + 1000));
}
