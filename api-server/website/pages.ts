// Rendering a page: an Eta template (views/) inside the layout, with the headers every page carries — a
// strict Content-Security-Policy (no inline script or style anywhere: the stylesheet and the one script are
// files under /static/), no framing, no caching of signed-in pages.
//
// Eta directly rather than through @fastify/view: the not-found page is rendered for the whole server, outside
// the website's encapsulated context where a reply decorator would exist, and one way of rendering is simpler
// than two.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Eta } from 'eta';
import { fastifyCookie } from '@fastify/cookie';
import type { Member } from '../members/store.ts';
import { LANGUAGE_COOKIE, LANGUAGES, chooseLanguage, localeOf, type Locale } from './i18n.ts';

export const VIEWS_DIR = fileURLToPath(new URL('./views/', import.meta.url));
export const STATIC_DIR = fileURLToPath(new URL('./static/', import.meta.url));

const eta = new Eta({ views: VIEWS_DIR, cache: true, autoEscape: true });

/** Everything comes from this origin; nothing runs or styles inline; the site cannot be framed. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** Static files by name → their URL with a content hash, so they can be cached for a year (immutable). */
const ASSETS: ReadonlyMap<string, string> = new Map(
  readdirSync(STATIC_DIR).map((name) => [name, `/static/${name}?v=${createHash('sha256').update(readFileSync(STATIC_DIR + name)).digest('hex').slice(0, 12)}`]),
);

function asset(name: string): string {
  const url = ASSETS.get(name);
  if (!url) throw new Error(`no static file ${name}`);
  return url;
}

/** Who is asking, in which language, from which page. */
export interface Visit {
  locale: Locale;
  member: Member | null;
  /** The request path without its query (navigation, language links). */
  path: string;
  /** The query without `lang`, kept by the language links. */
  query: URLSearchParams;
  /** The CSRF token for this page's forms (every page of a signed-in member has the sign-out form). */
  csrf?: string;
}

export function visitOf(req: FastifyRequest, member: Member | null, csrf?: string): Visit {
  const url = new URL(req.url, 'http://x');
  const query = url.searchParams;
  const asked = query.get('lang');
  query.delete('lang');
  const cookies = req.cookies ?? fastifyCookie.parse(req.headers.cookie ?? '');
  return { locale: localeOf(chooseLanguage(asked, cookies[LANGUAGE_COOKIE], req.headers['accept-language'])), member, path: url.pathname, query, csrf };
}

function languageLinks(visit: Visit): { lang: string; label: string; href: string; current: boolean }[] {
  return LANGUAGES.map((lang) => {
    const query = new URLSearchParams(visit.query);
    query.set('lang', lang);
    return { lang, label: localeOf(lang).t.languageName, href: `${visit.path}?${query.toString()}`, current: lang === visit.locale.lang };
  });
}

interface PageOptions {
  status?: number;
  /** The page's <title> and <h1>. */
  title: string;
}

/** Renders `view` in the layout and sends it with the page headers. */
export async function sendPage(reply: FastifyReply, view: string, visit: Visit, options: PageOptions, data: Record<string, unknown> = {}): Promise<FastifyReply> {
  const { locale } = visit;
  const html = await eta.renderAsync(view, {
    ...data,
    title: options.title,
    t: locale.t,
    f: locale,
    member: visit.member,
    csrf: visit.csrf,
    path: visit.path,
    languages: languageLinks(visit),
    asset,
  });
  return reply
    .code(options.status ?? 200)
    .type('text/html; charset=utf-8')
    .header('content-security-policy', CONTENT_SECURITY_POLICY)
    .header('referrer-policy', 'same-origin')
    // Pages carry CSRF tokens, one-time secrets and account details: never stored by browsers or proxies.
    .header('cache-control', visit.member || visit.csrf ? 'no-store' : 'no-cache')
    .header('vary', 'cookie, accept-language')
    .send(html);
}

/** A page with a heading and one message (errors, notices). */
export function sendMessage(reply: FastifyReply, visit: Visit, status: number, title: string, message: string): Promise<FastifyReply> {
  return sendPage(reply, 'message', visit, { status, title }, { message });
}

/** The not-found page, for any request of the server that a browser makes for a page (see wantsPage). */
export function sendPageNotFound(req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const visit = visitOf(req, null);
  return sendMessage(reply, visit, 404, visit.locale.t.errors.notFoundTitle, visit.locale.t.errors.notFound(visit.path));
}

/** Whether an unmatched request is a browser asking for a page (else the API answers it with problem+json). */
export function wantsPage(req: FastifyRequest): boolean {
  const path = req.url;
  if (path.startsWith('/api/') || path.startsWith('/internal/') || path === '/openapi.json') return false;
  return (req.method === 'GET' || req.method === 'HEAD') && (req.headers.accept ?? '').includes('text/html');
}
