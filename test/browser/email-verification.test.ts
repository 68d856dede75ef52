// With SMTP configured, an account is confirmed by the link emailed to it (no operator involved). The test
// runs its own SMTP server (smtp-server) and follows the link in Chromium.
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPage } from '../support/browser.ts';
import { freePort } from '../support/cli.ts';
import { activeMember, signIn, signUp, startSite, textOf, type Site } from '../support/browser-site.ts';

describe('email verification', () => {
  let site: Site;
  let smtp: SMTPServer;
  const mail: ParsedMail[] = [];

  /** The next message to arrive (they come from the sign-up request itself, so it is already there or close). */
  async function nextMail(count: number): Promise<ParsedMail> {
    for (const deadline = Date.now() + 10_000; mail.length < count && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 50));
    const message = mail[count - 1];
    if (!message) throw new Error(`expected ${count} emails, got ${mail.length}`);
    return message;
  }

  function linkIn(message: ParsedMail): string {
    const link = /https?:\/\/\S+/.exec(message.text ?? '')?.[0];
    if (!link) throw new Error(`no link in: ${message.text}`);
    return link;
  }

  beforeAll(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      onData(stream, _session, done) {
        simpleParser(stream).then((m) => {
          mail.push(m);
          done();
        }, done);
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    const smtpPort = (smtp.server.address() as AddressInfo).port;
    const port = await freePort();
    site = await startSite({ smtpUrl: `smtp://127.0.0.1:${smtpPort}`, siteUrl: `http://127.0.0.1:${port}`, mailFrom: 'blockfeed <noreply@example.org>' }, { port });
  });
  afterAll(async () => {
    await site?.close();
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
  });

  it('sends a link that activates the account once; signing in waits for it', async () => {
    const { context, page, problems } = await openPage(site.browser);
    await signUp(page, site.api.base, 'new.member@example.org');
    expect(await textOf(page.locator('h1'))).toBe('Check your email');

    const first = await nextMail(1);
    expect(first.to && 'text' in first.to ? first.to.text : '').toBe('new.member@example.org');
    expect(first.from?.value[0]?.address).toBe('noreply@example.org');
    expect(first.subject).toBe('Confirm your blockfeed account');
    const firstLink = linkIn(first);
    expect(firstLink).toMatch(new RegExp(`^${site.api.base}/verify\\?token=[A-Za-z0-9_-]{43}$`));

    await signIn(page, site.api.base, 'new.member@example.org');
    expect(await textOf(page.getByRole('alert'))).toMatch(/^Confirm your email address first/);

    // Signing up again sends a new link; the old one stops working.
    await signUp(page, site.api.base, 'new.member@example.org');
    const second = linkIn(await nextMail(2));
    expect(second).not.toBe(firstLink);
    await page.goto(firstLink);
    expect(await textOf(page.locator('.message'))).toMatch(/^This link does not work/);
    await page.goto(second);
    expect(await textOf(page.locator('.message'))).toBe('Your email address is confirmed. You can sign in now.');
    await page.goto(second);
    expect(await textOf(page.locator('.message'))).toMatch(/^This link does not work/);

    await signIn(page, site.api.base, 'new.member@example.org');
    expect(new URL(page.url()).pathname).toBe('/account/download');
    expect((await site.cli(['members', 'list'])).stdout).toMatch(/\sactive\s+member\s.*new\.member@example\.org$/m);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('answers a sign-up for a taken address alike, and tells the owner by email instead', async () => {
    await activeMember(site, 'owner@example.org');
    const { context, page } = await openPage(site.browser, { locale: 'zh-CN' });
    const before = mail.length;
    await signUp(page, site.api.base, 'owner@example.org');
    // The page is in Chinese (Accept-Language), and so is the email.
    expect(await textOf(page.locator('h1'))).toBe('请查收邮件');
    const note = await nextMail(before + 1);
    expect(note.subject).toBe('您的 blockfeed 账户');
    expect(linkIn(note)).toBe(`${site.api.base}/sign-in`);
    await context.close();
  });
});
