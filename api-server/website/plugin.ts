// The member centre website, served by `blockfeed serve` on the API's port: public statistics, API
// documentation and the address check with its removal requests, accounts (sign-up, sign-in, email verification or operator approval), the download page and
// API keys. Server-rendered pages (views/), a stylesheet and one small script (static/); see docs/website.md.
//
// Two contexts: static files without sessions, and the pages with cookies, server-side sessions for members
// (members/sessions.ts), CSRF tokens on every form (their secret in a signed cookie) and form bodies. Neither
// touches the API's routes.
import { createHmac } from 'node:crypto';
import { Signer, fastifyCookie } from '@fastify/cookie';
import fastifyCsrf from '@fastify/csrf-protection';
import fastifyFormbody from '@fastify/formbody';
import fastifySession from '@fastify/session';
import fastifyStatic from '@fastify/static';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import type { Config } from '../config.ts';
import { UserError } from '../../common/errors.ts';
import type { Logger } from '../../common/logging.ts';
import { parseTierQuotas } from '../keys/tiers.ts';
import { SessionStore, pruneSessions, storedSessionSecret } from '../members/sessions.ts';
import { findMember, type Member } from '../members/store.ts';
import type { StorePools } from '../store/database.ts';
import { isStoreUnavailable } from '../store/unavailable.ts';
import { accountRoutes } from './account.ts';
import { apiDocsPage } from './api-docs.ts';
import { checkRoutes } from './check.ts';
import { downloadRoutes } from './download.ts';
import { homePage } from './home.ts';
import { LANGUAGE_COOKIE, isLang } from './i18n.ts';
import { keysRoutes } from './keys.ts';
import { createMailer } from './mail.ts';
import { STATIC_DIR, sendMessage, visitOf, type Visit } from './pages.ts';
import { signInRoutes } from './sign-in.ts';
import { CSRF_COOKIE, SESSION_COOKIE, SESSION_HOURS, csrfBinding, parseForm, type SiteDeps } from './site.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** Who is asking, in which language (set before every page handler). */
    visit: Visit;
  }
  interface FastifyReply {
    /** The CSRF token for the forms of the page being answered (its secret goes in a cookie if the browser has none). */
    csrfToken(): string;
  }
}

export interface WebsiteOptions {
  /** The primary (accounts, sessions, keys, throttles) and the read pool (the charts, the basic list). */
  pools: StorePools;
  log: Logger;
  config: Pick<Config, 'siteUrl' | 'smtpUrl' | 'mailFrom' | 'sessionSecret' | 'tierQuotas'>;
  /** The clock sign-in throttles count by (default: the system clock). */
  clock?: () => Date;
}

export async function website(app: FastifyInstance, options: WebsiteOptions): Promise<void> {
  const { config } = options;
  if (config.smtpUrl && !config.siteUrl) {
    throw new UserError('BLOCKFEED_SMTP_URL is set but BLOCKFEED_SITE_URL is not: verification emails need the public URL of the website');
  }
  await app.register(async (files) => {
    await files.register(fastifyStatic, { root: STATIC_DIR, prefix: '/static/', immutable: true, maxAge: '365d', index: false, list: false });
  });
  await app.register(memberCentre, options);
}

async function memberCentre(app: FastifyInstance, { pools, log, config, clock = () => new Date() }: WebsiteOptions): Promise<void> {
  const { pool } = pools;
  const mailer = config.smtpUrl && config.siteUrl ? createMailer(config.smtpUrl, config.siteUrl, config.mailFrom) : undefined;
  const deps: SiteDeps = { pool, readPool: pools.readPool, log, clock, tiers: parseTierQuotas(config.tierQuotas), mailer, siteUrl: config.siteUrl };

  const keys = siteKeys(pool, config.sessionSecret);
  // Signs the CSRF and device cookies.
  await app.register(fastifyCookie, { secret: keys.cookieSigner });
  // Before the session plugin's own hook, which needs its signer.
  app.addHook('onRequest', keys.ready);
  await app.register(fastifySession, {
    secret: keys.sessionSigner,
    cookieName: SESSION_COOKIE,
    store: new SessionStore(pool, SESSION_HOURS * 3_600_000),
    // Only a signed-in member's session is stored: nothing else is ever put in one.
    saveUninitialized: false,
    rolling: false,
    // Secure over HTTPS (behind a proxy: TRUSTED_PROXIES and X-Forwarded-Proto), so `make run` works on http://localhost.
    cookie: { path: '/', httpOnly: true, sameSite: 'lax', secure: 'auto', maxAge: SESSION_HOURS * 3_600_000 },
  });
  // Signed double-submit: the secret in a signed cookie (for as long as the browser runs), the token in the
  // form. A member's tokens are bound to the session (keys.csrfBinding): made with a keyed hash of its id.
  await app.register(fastifyCsrf, {
    sessionPlugin: '@fastify/cookie',
    cookieKey: CSRF_COOKIE,
    cookieOpts: { path: '/', httpOnly: true, sameSite: 'lax', secure: 'auto', signed: true },
    // The library asks for a key of its own to hash userInfo with; the binding is keyed already, so a fixed
    // one serves (and no secret depends on how the library keeps its key).
    csrfOpts: { userInfo: true, hmacKey: 'blockfeed csrf binding' },
    getUserInfo: keys.csrfBinding,
    // Forms only: the token travels in the body, never in a header or the URL.
    getToken: (req) => {
      const token = (req.body as { _csrf?: unknown } | undefined)?._csrf;
      return typeof token === 'string' ? token : undefined;
    },
    logLevel: 'info',
  });
  // Pages take urlencoded forms and nothing else (JSON, text, multipart are refused with 415).
  app.removeAllContentTypeParsers();
  await app.register(fastifyFormbody, { bodyLimit: 16 * 1024, parser: parseForm });

  app.decorateReply('csrfToken', function csrfToken(this: FastifyReply) {
    return this.generateCsrf({ userInfo: keys.csrfBinding(this.request) });
  });
  app.decorateRequest('visit', null as unknown as Visit);
  app.addHook('preHandler', async (req, reply) => {
    const member = await signedInMember(req, pool);
    const asked = (req.query as { lang?: unknown } | undefined)?.lang;
    // A language chosen with the switch sticks for a year.
    if (isLang(asked)) reply.setCookie(LANGUAGE_COOKIE, asked, { path: '/', maxAge: 365 * 86_400, sameSite: 'lax', httpOnly: true, secure: 'auto' });
    req.visit = visitOf(req, member, member ? reply.csrfToken() : undefined);
  });
  app.setErrorHandler((err: FastifyError, req, reply) => sendErrorPage(err, req, reply, log));

  const prune = setInterval(() => void pruneSessions(pool).catch((err: Error) => log.warn({ err: { message: err.message } }, 'pruning sessions failed')), 3_600_000);
  prune.unref();
  app.addHook('onClose', async () => {
    clearInterval(prune);
    mailer?.close();
  });

  await app.register(homePage, deps);
  await app.register(apiDocsPage, deps);
  await app.register(signInRoutes, deps);
  await app.register(accountRoutes, deps);
  await app.register(downloadRoutes, deps);
  await app.register(keysRoutes, deps);
  await app.register(checkRoutes, deps);
}

/**
 * The keys of the site's cookies and tokens, all from BLOCKFEED_SESSION_SECRET, else from the secret kept in
 * the database, read at the first request: a server starts without its store (and answers 503 until it is
 * back). Session cookies are signed with the secret itself; the CSRF and device cookies, and the binding of
 * members' CSRF tokens, with keys derived from it for each purpose, so that no value of one passes for another.
 */
function siteKeys(pool: pg.Pool, configured: string | undefined) {
  let session: Signer | undefined;
  let cookies: Signer | undefined;
  const derive = (secret: string, purpose: string) => createHmac('sha256', secret).update(`blockfeed ${purpose}`).digest();
  let binding: Buffer | undefined;
  const load = (secret: string) => {
    session = new Signer(secret);
    cookies = new Signer(derive(secret, 'cookies'));
    binding = derive(secret, 'csrf binding');
  };
  if (configured) load(configured);
  const lazy = (signer: () => Signer | undefined) => ({
    sign: (value: string) => loaded(signer()).sign(value),
    unsign: (value: string) => loaded(signer()).unsign(value),
  });
  return {
    sessionSigner: lazy(() => session),
    cookieSigner: lazy(() => cookies),
    /** What a member's CSRF tokens are bound to: their session (csrfBinding), by a hash only the servers can make. */
    csrfBinding: (req: FastifyRequest): string => {
      const bound = csrfBinding(req);
      return bound === 'visitor' ? bound : createHmac('sha256', loaded(binding)).update(bound).digest('base64url');
    },
    ready: async () => {
      if (!session) load(await storedSessionSecret(pool));
    },
  };
}

function loaded<T>(key: T | undefined): T {
  if (!key) throw new Error('the session secret is not loaded yet');
  return key;
}

/** The member of the session, if it is still active; a session of a disabled or deleted account ends here. */
async function signedInMember(req: FastifyRequest, pool: pg.Pool): Promise<Member | null> {
  const id = req.session.memberId;
  if (id === undefined) return null;
  const member = await findMember(pool, id);
  if (member?.status === 'active') return member;
  await req.session.destroy();
  return null;
}

function sendErrorPage(err: FastifyError, req: FastifyRequest, reply: FastifyReply, log: Logger): Promise<FastifyReply> {
  // The visit is made before the handler; an error before it (a bad form body) still gets a page.
  const visit = req.visit ?? visitOf(req, null);
  const { t } = visit.locale;
  if (err.code === 'FST_CSRF_INVALID_TOKEN' || err.code === 'FST_CSRF_MISSING_SECRET') return sendMessage(reply, visit, 403, t.errors.forbiddenTitle, t.errors.csrf);
  if (err.code === 'BLOCKFEED_FORM_TEXT') return sendMessage(reply, visit, 400, t.errors.badRequestTitle, t.errors.formText);
  if (isStoreUnavailable(err)) {
    log.warn({ reqId: req.id, err: { message: err.message, code: err.code } }, 'store unavailable');
    reply.header('retry-after', '5');
    return sendMessage(reply, visit, 503, t.errors.unavailableTitle, t.errors.unavailable);
  }
  if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) return sendMessage(reply, visit, err.statusCode, t.errors.badRequestTitle, t.errors.badRequest);
  log.error({ reqId: req.id, err }, 'page failed');
  return sendMessage(reply, visit, 500, t.errors.internalTitle, t.errors.internal);
}
