// bench/web: Lighthouse's performance and accessibility scores of the website's home and download pages, in
// Debian's Chromium (chrome-launcher), on the real `blockfeed serve` over demo data. Each figure is the
// median of RUNS audits, for Lighthouse's mobile profile (simulated slow 4G and a 4× slower CPU) and its
// desktop profile. The target is 95 or more for both categories on both pages; the scores are printed, not
// asserted (they move with the machine's load).
import * as chromeLauncher from 'chrome-launcher';
import lighthouse, { type Config, type Flags } from 'lighthouse';
import desktopConfig from 'lighthouse/core/config/desktop-config.js';
import { createLogger } from '../common/logging.ts';
import { loadDemo } from '../api-server/demo/demo.ts';
import { hashPassword } from '../api-server/members/passwords.ts';
import { activateMember, createMember, setMemberTier } from '../api-server/members/store.ts';
import { CHROMIUM } from '../test/support/browser.ts';
import { benchStore, median, startServeChild } from './harness.ts';

const RUNS = Number(process.env.RUNS ?? 3);
const EVENTS = Number(process.env.EVENTS ?? 100_000);
const TARGET = 95;
const EMAIL = 'lighthouse@example.org';
const PASSWORD = 'a passphrase only the benchmark knows';

// The flags the browser tests use (a closed network would otherwise flood the log), headless.
const CHROME_FLAGS = ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** Signs in through the site's own form, as a browser would: the session cookie of a pro member. */
async function signedInCookie(base: string): Promise<string> {
  const form = await fetch(`${base}/sign-in`);
  const visitor = form.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  if (!csrf || !visitor) throw new Error('the sign-in page has no CSRF token or session cookie');
  const res = await fetch(`${base}/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: visitor, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, email: EMAIL, password: PASSWORD }).toString(),
  });
  const session = res.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  if (res.status !== 303 || !session) throw new Error(`signing in answered ${res.status}`);
  return session;
}

interface Scores {
  performance: number;
  accessibility: number;
  metrics: string;
}

async function audit(url: string, cookie: string | undefined, config: Config | undefined): Promise<Scores> {
  const chrome = await chromeLauncher.launch({ chromePath: CHROMIUM, chromeFlags: CHROME_FLAGS });
  try {
    const flags: Flags = { port: chrome.port, output: 'json', logLevel: 'error', onlyCategories: ['performance', 'accessibility'], extraHeaders: cookie ? { cookie } : undefined };
    const result = await lighthouse(url, flags, config);
    if (!result) throw new Error(`lighthouse gave no result for ${url}`);
    const { categories, audits, finalDisplayedUrl } = result.lhr;
    // A lost session would audit the sign-in page instead.
    if (finalDisplayedUrl !== url) throw new Error(`${url} ended at ${finalDisplayedUrl}`);
    const ms = (id: string) => `${id.replace(/-/g, ' ')} ${Math.round(audits[id]?.numericValue ?? NaN)} ms`;
    return {
      performance: Math.round((categories.performance?.score ?? 0) * 100),
      accessibility: Math.round((categories.accessibility?.score ?? 0) * 100),
      metrics: [ms('first-contentful-paint'), ms('largest-contentful-paint'), ms('total-blocking-time'), `CLS ${audits['cumulative-layout-shift']?.numericValue?.toFixed(3)}`].join(', '),
    };
  } finally {
    chrome.kill();
  }
}

const store = await benchStore(0, 1);
const log = createLogger({ level: 'warn' });
process.stderr.write(`loading ${EVENTS} demo events...\n`);
await loadDemo(store.pool, log, { events: EVENTS });
const member = await createMember(store.pool, { email: EMAIL, passwordHash: await hashPassword(PASSWORD), status: 'pending' });
if (!member) throw new Error('no member');
await activateMember(store.pool, member.id);
await setMemberTier(store.pool, member.id, 'pro');
const serve = await startServeChild(store.url);
let belowTarget = false;
try {
  const cookie = await signedInCookie(serve.base);
  const pages = [
    { name: 'home', url: `${serve.base}/`, cookie: undefined },
    { name: 'download', url: `${serve.base}/account/download`, cookie },
  ];
  const profiles: { name: string; config: Config | undefined }[] = [
    { name: 'mobile', config: undefined },
    { name: 'desktop', config: desktopConfig },
  ];
  process.stdout.write(`Lighthouse ${RUNS} runs each, median; target >= ${TARGET} for performance and accessibility\n`);
  for (const page of pages) {
    for (const profile of profiles) {
      const runs: Scores[] = [];
      for (let i = 0; i < RUNS; i++) runs.push(await audit(page.url, page.cookie, profile.config));
      const performance = median(runs.map((r) => r.performance));
      const accessibility = median(runs.map((r) => r.accessibility));
      belowTarget ||= performance < TARGET || accessibility < TARGET;
      const middle = runs.find((r) => r.performance === performance) ?? runs[0];
      process.stdout.write(
        `${page.name.padEnd(8)} ${profile.name.padEnd(7)} performance ${performance} (runs ${runs.map((r) => r.performance).join(' ')}), ` +
          `accessibility ${accessibility}; ${middle?.metrics}\n`,
      );
    }
  }
  process.stdout.write(belowTarget ? `some scores are below ${TARGET}\n` : `every score is ${TARGET} or more\n`);
} finally {
  await serve.stop();
  await store.close();
}
