// The browser tier's harness: Debian's Chromium (installed by .ci/system-deps, never downloaded) driven by
// playwright-core, axe-core run inside the page, screenshots kept as artifacts, and what a page logs that
// says something is wrong (a script error, a Content-Security-Policy violation).
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import AxeBuilder from '@axe-core/playwright';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Screenshots of every page in both languages (ignored by git; CI keeps them). */
export const ARTIFACTS = fileURLToPath(new URL('../browser/artifacts/', import.meta.url));

// On a closed network Chromium's background services would only flood the log with refused connections.
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Chromium with a fresh profile (playwright gives every launch its own temporary --user-data-dir). */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium (.ci/system-deps) or set CHROMIUM_PATH`);
  return chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
}

/**
 * A context (its own cookies) and a page that records what goes wrong in it: uncaught script errors,
 * console errors (a CSP violation among them) and subresources that failed. The status of a page itself
 * (a 400 for a form with mistakes) is the test's business, not a problem.
 */
export async function openPage(browser: Browser, options: { locale?: string } = {}): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext({ acceptDownloads: true, locale: options.locale ?? 'en-US', viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !msg.text().startsWith('Failed to load resource')) problems.push(`console error: ${msg.text()}`);
  });
  page.on('response', (res) => {
    if (res.status() >= 400 && res.request().resourceType() !== 'document') problems.push(`${res.status()} for ${res.url()}`);
  });
  // A page that turns into a download "fails" as a page, and leaving a page aborts what it still loads
  // (its icon, say): neither is a problem.
  page.on('requestfailed', (req) => {
    const error = req.failure()?.errorText ?? '';
    if (req.resourceType() !== 'document' && error !== 'net::ERR_ABORTED') problems.push(`failed: ${req.url()} (${error})`);
  });
  return { context, page, problems };
}

/** axe-core's findings of serious or critical impact on the page as it is now. */
export async function seriousA11yViolations(page: Page): Promise<string[]> {
  const { violations } = await new AxeBuilder({ page }).analyze();
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: `${ARTIFACTS}${name}.png`, fullPage: true });
}
