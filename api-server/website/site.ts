// What the website's page plugins share: their dependencies, the public base URL, the cookies, the guard of
// members' pages, the CSRF token of a page, and how form bodies are read and what their fields may hold.
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerHookHandler } from 'fastify';
import Type from 'typebox';
import type { Logger } from '../../common/logging.ts';
import type { Quota } from '../keys/tiers.ts';
import type { StorePools } from '../store/database.ts';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH, passwordProblem } from '../members/passwords.ts';
import type { Member } from '../members/store.ts';
import { hasForbiddenCharacters } from '../members/untrusted-text.ts';
import type { Messages } from './messages/en.ts';
import type { Mailer } from './mail.ts';

/** The session of a signed-in member (a signed id; the session itself is in web_sessions). */
export const SESSION_COOKIE = 'blockfeed_session';
/** The CSRF secret of the browser's forms, signed: visitors' forms need no state on the server. */
export const CSRF_COOKIE = 'blockfeed_csrf';
/** Signed, names the account a browser signed in to: it lets that browser past the account's sign-in ceiling (throttle.ts). */
export const DEVICE_COOKIE = 'blockfeed_device';
/** A session ends 12 hours after sign-in, whatever happens in between (rolling would write on every page). */
export const SESSION_HOURS = 12;

export interface SiteDeps extends StorePools {
  log: Logger;
  /** The clock throttles and quotas count by. */
  clock: () => Date;
  tiers: Map<string, Quota>;
  /** Emails go out only with SMTP configured; without it the operator approves accounts. */
  mailer?: Mailer;
  /** BLOCKFEED_SITE_URL, else undefined (each request's own origin is used). */
  siteUrl?: string;
}

/** The public base URL: BLOCKFEED_SITE_URL, or the origin the request came to. */
export function siteBase(deps: Pick<SiteDeps, 'siteUrl'>, req: FastifyRequest): string {
  return (deps.siteUrl ?? `${req.protocol}://${req.host}`).replace(/\/+$/, '');
}

/** Whether a tier is a subscription: its keys reach the API (`member` and unknown tiers do not). */
export function isSubscribed(tiers: Map<string, Quota>, tier: string): boolean {
  return (tiers.get(tier)?.kind ?? 'none') !== 'none';
}

/** A form field: a string of bounded length (a longer one is a 400 before anything else runs). */
export const FormText = (maxLength: number) => Type.Optional(Type.String({ maxLength }));

/** A password field as long as the longest password can be in UTF-8 (longer is a 400). */
export const PasswordText = FormText(4 * PASSWORD_MAX_LENGTH);

/** What is wrong with a new password and its repetition, by field (`password`, `confirm`), in the page's words. */
export function newPasswordErrors(password: string, confirm: string | undefined, t: Messages): Record<string, string> {
  const problem = passwordProblem(password);
  if (problem === 'too-short') return { password: t.problems['too-short'](PASSWORD_MIN_LENGTH) };
  if (problem === 'too-long') return { password: t.problems['too-long'](PASSWORD_MAX_LENGTH) };
  return password === confirm ? {} : { confirm: t.problems.mismatch };
}

/** A form that carries only its CSRF token. */
export const CsrfForm = Type.Object({ _csrf: FormText(200) });

/** A form body that is not UTF-8 text or holds control characters: no field of the site takes either. */
export class FormTextError extends Error {
  readonly code = 'BLOCKFEED_FORM_TEXT';
  readonly statusCode = 400;
}

/**
 * Reads an urlencoded form body (@fastify/formbody's parser). Browsers send the site's forms as UTF-8 with
 * every byte outside ASCII percent-encoded: a raw byte that was not UTF-8 (decoded to U+FFFD), a
 * percent-encoding that is not UTF-8, or a control character (NUL, CR/LF, ESC, …) in any field means the
 * body did not come from the form, and is refused whole, before any field is looked at.
 */
export function parseForm(body: string): Record<string, string | string[]> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(body.replaceAll('+', ' '));
  } catch {
    throw new FormTextError('the form body is not UTF-8');
  }
  if (hasForbiddenCharacters(decoded)) throw new FormTextError('a form field holds control characters or text that was not UTF-8');
  const fields: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  for (const [name, value] of new URLSearchParams(body)) {
    const had = fields[name];
    fields[name] = had === undefined ? value : [had, value].flat();
  }
  return fields;
}

/**
 * What a member's CSRF tokens are bound to: the session, whose id only that browser knows. A cookie and
 * token planted from elsewhere (a sibling site can set cookies for this one) then fail in a member's
 * session; visitors' forms (sign-in, sign-up) have no session to bind to.
 */
export function csrfBinding(req: FastifyRequest): string {
  // After destroy() (a disabled member's session) the request holds no session.
  const session = req.session as FastifyRequest['session'] | null;
  return session?.memberId === undefined ? 'visitor' : `member:${session.sessionId}`;
}


/** preHandler of every form: @fastify/csrf-protection's check of the `_csrf` field against the signed cookie. */
export function csrfCheck(app: FastifyInstance): preHandlerHookHandler {
  return (req, reply, done) => app.csrfProtection(req, reply, done);
}

/**
 * preHandler of members' pages: the signed-in member, else a redirect to sign-in (which comes back here).
 * Runs before the CSRF check, so an expired session leads to sign-in rather than to a refused form.
 */
export async function requireMember(req: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (req.visit.member) return;
  const path = req.visit.path;
  await reply.redirect(`/sign-in?next=${encodeURIComponent(path)}`, 303);
}

/** The member of a page guarded by requireMember. */
export function memberOf(req: FastifyRequest): Member {
  const member = req.visit.member;
  if (!member) throw new Error('a members page ran without a member (requireMember missing)');
  return member;
}
