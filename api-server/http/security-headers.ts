// The headers every answer carries, whoever writes it: routes, problem answers, 304s, the cached-answer fast
// path that writes the head to Node itself (guard.ts), fastify's own 503 while closing and 400 for a bad
// URL. The server's responses are of a ServerResponse class that adds them to every head written, unless
// the answer set the header itself (a page's own CSP): no per-request hook, and no header set ahead on
// Node's response, which would take every head off Node's fast path (docs/http-api.md has the figures).
//
// The API answers JSON, CSV and text, never a page: nothing may be sniffed into HTML, framed, or loaded
// as a script or image by another site, and no URL leaks through Referer. Public endpoints may be read by
// pages of any origin with a plain GET (no credential); the keyed lists send no CORS header at all, so a
// page elsewhere can never use a key through a visitor's browser. HSTS is left to the TLS terminator: this
// server does not know whether it is reached over TLS.
import { ServerResponse, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest, onRequestHookHandler } from 'fastify';
import fastifyPlugin from 'fastify-plugin';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Any origin may read this route's answers (CORS `*`, no credentials): the public endpoints. */
    crossOriginRead?: boolean;
    /** This route's Content-Security-Policy instead of the API's (a page of the website). */
    contentSecurityPolicy?: string;
  }
}

/** On every answer. */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
};

/**
 * On the answers of routes with `crossOriginRead`. Without Access-Control-Allow-Credentials and without
 * answering preflights, a browser sends only simple GETs: no X-API-Key or Authorization from another origin.
 */
export const CROSS_ORIGIN_READ_HEADERS: Readonly<Record<string, string>> = {
  'access-control-allow-origin': '*',
  'access-control-expose-headers': 'Age, Content-Disposition, ETag, RateLimit, RateLimit-Policy, Retry-After',
};

type Defaults = readonly (readonly [string, string])[];
const EVERY_ANSWER: Defaults = Object.entries(SECURITY_HEADERS);
const CROSS_ORIGIN_ANSWER: Defaults = [...EVERY_ANSWER, ...Object.entries(CROSS_ORIGIN_READ_HEADERS)];

type HeadHeaders = OutgoingHttpHeaders | OutgoingHttpHeader[];

function pathOf(url: string | undefined): string {
  if (url === undefined) return '';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** A flat [name, value, ...] head with the defaults it lacks appended. Pure. */
function withDefaultsList(list: readonly OutgoingHttpHeader[], defaults: Defaults): OutgoingHttpHeader[] {
  const present = new Set<string>();
  for (let i = 0; i < list.length; i += 2) present.add(String(list[i]).toLowerCase());
  const out = [...list];
  for (const [name, value] of defaults) if (!present.has(name)) out.push(name, value);
  return out;
}

/**
 * The ServerResponse class of a server whose answers carry the defaults. Flat header lists (the cached
 * answers' prepared heads) are merged once per list and remembered.
 */
function answeringResponse(crossOriginPaths: ReadonlySet<string>): typeof ServerResponse {
  const merged = new WeakMap<readonly OutgoingHttpHeader[], { defaults: Defaults; list: OutgoingHttpHeader[] }>();
  return class AnsweringResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {
    override writeHead(statusCode: number, reasonOrHeaders?: string | HeadHeaders, maybeHeaders?: HeadHeaders): this {
      const reason = typeof reasonOrHeaders === 'string' ? reasonOrHeaders : undefined;
      const given = typeof reasonOrHeaders === 'string' ? maybeHeaders : reasonOrHeaders;
      const defaults = crossOriginPaths.size && crossOriginPaths.has(pathOf(this.req.url)) ? CROSS_ORIGIN_ANSWER : EVERY_ANSWER;
      let headers: HeadHeaders;
      if (Array.isArray(given)) {
        let known = merged.get(given);
        if (known?.defaults !== defaults) merged.set(given, (known = { defaults, list: withDefaultsList(given, defaults) }));
        headers = known.list;
      } else {
        // fastify's headers (lower-case names) and any set on this response beforehand win over the defaults.
        const object: OutgoingHttpHeaders = { ...given };
        for (const [name, value] of defaults) if (object[name] === undefined && !this.hasHeader(name)) object[name] = value;
        headers = object;
      }
      return reason === undefined ? super.writeHead(statusCode, headers) : super.writeHead(statusCode, reason, headers);
    }
  };
}

interface SecurityHeaderLayer {
  /** fastify's `http` option: the server's responses add the headers to every head. */
  http: { ServerResponse: typeof ServerResponse };
  /**
   * Reads each route's `crossOriginRead` and `contentSecurityPolicy` as it is added: registered on the server
   * before any route, in the server's own context (fastify-plugin), so it hears the routes of every plugin.
   */
  plugin: FastifyPluginAsync;
}

export function securityHeaderLayer(): SecurityHeaderLayer {
  const crossOriginPaths = new Set<string>();
  return {
    http: { ServerResponse: answeringResponse(crossOriginPaths) },
    plugin: fastifyPlugin(async (app: FastifyInstance) => {
      app.addHook('onRoute', (route) => {
        if (route.config?.crossOriginRead) crossOriginPaths.add(route.url);
        const csp = route.config?.contentSecurityPolicy;
        if (csp) {
          const own: onRequestHookHandler = (_req: FastifyRequest, reply: FastifyReply, done) => {
            reply.header('content-security-policy', csp);
            done();
          };
          const hooks = route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
          route.onRequest = [own, ...hooks];
        }
      });
    }, { name: 'blockfeed-security-headers', fastify: '5.x' }),
  };
}
