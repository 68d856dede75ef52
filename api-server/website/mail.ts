// The emails of the member centre, through the SMTP server of BLOCKFEED_SMTP_URL (nodemailer): the link that
// confirms an address, the note sent instead when the address already has an account (so that signing up
// answers the same whether or not it does), and the acknowledgement of a removal request. Plain text, in the
// language of the page that asked.
//
// The recipient is the one thing in a message that a visitor typed. It is a checked address (isEmailAddress:
// no control characters, quotes, commas or angle brackets), checked again here, and handed to nodemailer as
// an address object, never as a header line it would parse: it cannot become a list of recipients or carry
// a header of its own. Subjects and bodies are the site's own text.
import nodemailer from 'nodemailer';
import { VERIFICATION_HOURS, isEmailAddress } from '../members/store.ts';
import type { Locale } from './i18n.ts';

export interface Mailer {
  sendVerification(to: string, locale: Locale, link: string): Promise<void>;
  sendAlreadyRegistered(to: string, locale: Locale, signInLink: string): Promise<void>;
  /** The acknowledgement of a removal request: its number and network, and where to check an address. */
  sendRemovalReceived(to: string, locale: Locale, request: { id: number; network: string }, checkLink: string): Promise<void>;
  close(): void;
}

/** `from` defaults to noreply@ the site's host. */
export function createMailer(smtpUrl: string, siteUrl: string, from?: string): Mailer {
  const transport = nodemailer.createTransport(smtpUrl);
  const sender = from ?? `blockfeed <noreply@${new URL(siteUrl).hostname}>`;
  const send = async (to: string, subject: string, text: string) => {
    if (!isEmailAddress(to)) throw new Error('refused to mail a recipient that is not one address');
    await transport.sendMail({ from: sender, to: { name: '', address: to }, subject, text });
  };
  return {
    sendVerification: (to, { t }, link) => send(to, t.mail.verifySubject, t.mail.verifyBody(link, VERIFICATION_HOURS)),
    sendAlreadyRegistered: (to, { t }, link) => send(to, t.mail.existingSubject, t.mail.existingBody(link)),
    sendRemovalReceived: (to, { t }, { id, network }, link) => send(to, t.mail.removalSubject, t.mail.removalBody(id, network, link)),
    close: () => transport.close(),
  };
}
