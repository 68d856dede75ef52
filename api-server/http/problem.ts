// RFC 9457 problem details for every error the API answers: 400 (naming each bad parameter and what it
// allows), 401, 403, 404, 429 and 503 (both with Retry-After), 500 without internals.
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaCompiler } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { Value } from 'typebox/value';
import { describeAllowed, type JsonSchemaLike } from '../schema-text.ts';
import { isStoreUnavailable } from '../store/unavailable.ts';
import { SECURITY_HEADERS } from './security-headers.ts';
import { parseQuery, type ParamProblem } from '../query/validate-query.ts';

interface ProblemInit {
  status: number;
  title: string;
  detail: string;
  /** Short slug; the problem type is `urn:blockfeed:problem:<slug>`. */
  slug: string;
  errors?: ParamProblem[];
  retryAfterSeconds?: number;
  headers?: Record<string, string>;
}

export class ProblemError extends Error {
  readonly problem: ProblemInit;
  readonly statusCode: number;
  constructor(problem: ProblemInit) {
    super(problem.detail);
    this.name = 'ProblemError';
    this.problem = problem;
    this.statusCode = problem.status;
  }
}

function badParameters(problems: ParamProblem[]): ProblemError {
  const names = problems.map((p) => p.name).join(', ');
  return new ProblemError({
    status: 400,
    slug: 'invalid-parameter',
    title: 'Invalid query parameter',
    detail: problems.length === 1 ? `parameter ${names}: ${problems[0]?.reason}; allowed: ${problems[0]?.allowed}` : `invalid parameters: ${names}`,
    errors: problems,
  });
}

/**
 * Validates every part a route declares a schema for. Query strings go through query/validate-query.ts (every
 * problem at once, each with what the parameter allows); bodies, path parameters and headers through
 * TypeBox's compiled checker. Either way a failure is a problem+json 400 naming what was wrong.
 */
const validatorCompiler: FastifySchemaCompiler<TSchema> = (route) => {
  if (route.httpPart === 'querystring') {
    const schema = route.schema as { properties: Record<string, TSchema> };
    return (data: unknown) => {
      const result = parseQuery(schema, data as Record<string, unknown>);
      return result.ok ? { value: result.value } : { error: badParameters(result.problems) };
    };
  }
  const check = Compile(route.schema);
  const part = route.httpPart ?? 'request';
  return (data: unknown) => {
    const value = part === 'body' ? data : Value.Convert(route.schema, data);
    if (check.Check(value)) return { value };
    const problems = check.Errors(value).map((e) => ({ name: `${part}${e.instancePath}`, reason: e.message, allowed: describeAllowed(schemaAt(route.schema, e.schemaPath)) }));
    return {
      error: new ProblemError({
        status: 400,
        slug: 'invalid-request',
        title: `Invalid request ${part}`,
        detail: problems.map((p) => `${p.name}: ${p.reason}`).join('; '),
        errors: problems,
      }),
    };
  };
};

/** The subschema a JSON pointer such as `#/properties/name` names. */
function schemaAt(schema: TSchema, pointer: string): JsonSchemaLike {
  let at: unknown = schema;
  for (const step of pointer.replace(/^#\/?/, '').split('/').filter(Boolean)) at = (at as Record<string, unknown> | undefined)?.[decodeURIComponent(step)];
  return (at ?? {});
}

function sendProblem(reply: FastifyReply, p: ProblemInit): FastifyReply {
  // Headers a success path may have set already do not describe a problem.
  for (const h of ['etag', 'last-modified', 'age', 'content-disposition', 'content-encoding', 'x-blocklist-truncated', 'x-blocklist-data-changed']) reply.removeHeader(h);
  reply.code(p.status).type('application/problem+json').header('cache-control', 'no-store');
  if (p.retryAfterSeconds !== undefined) reply.header('retry-after', String(Math.max(1, Math.ceil(p.retryAfterSeconds))));
  for (const [k, v] of Object.entries(p.headers ?? {})) reply.header(k, v);
  return reply.send(
    JSON.stringify({
      type: `urn:blockfeed:problem:${p.slug}`,
      title: p.title,
      status: p.status,
      detail: p.detail,
      instance: reply.request.url.split('?')[0],
      ...(p.errors ? { errors: p.errors } : {}),
    }),
  );
}

/**
 * The validator and the error handler of the context it is registered in — not a child context of its own
 * (fastify-plugin): registered on the server, every route's invalid request and error is problem+json, a
 * store that is down a 503 with Retry-After. Not-found answers: sendNotFoundProblem.
 */
export const problemAnswers = fastifyPlugin(async (app: FastifyInstance) => {
  app.setValidatorCompiler(validatorCompiler);
  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err instanceof ProblemError) return sendProblem(reply, err.problem);
    if (isStoreUnavailable(err)) {
      req.log.warn({ reqId: req.id, err: { message: err.message, code: err.code } }, 'store unavailable');
      return sendProblem(reply, { status: 503, slug: 'store-unavailable', title: 'Service unavailable', detail: 'the blocklist store is unavailable; retry later', retryAfterSeconds: 5 });
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return sendProblem(reply, { status: err.statusCode, slug: 'bad-request', title: 'Bad request', detail: err.message });
    }
    req.log.error({ reqId: req.id, err }, 'request failed');
    return sendProblem(reply, { status: 500, slug: 'internal', title: 'Internal error', detail: 'the request failed; the error is in the server log' });
  });
}, { name: 'blockfeed-problem-answers', fastify: '5.x' });

/**
 * The API's 404. Fastify takes one not-found handler per URL prefix for the whole server, and the website
 * shares the prefix `/`, so app.ts installs one that chooses between this and the website's page.
 */
export function sendNotFoundProblem(req: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendProblem(reply, { status: 404, slug: 'not-found', title: 'Not found', detail: `no endpoint ${req.method} ${req.url.split('?')[0]}` });
}

const SECURITY_HEAD = Object.entries(SECURITY_HEADERS).map(([name, value]) => `${name}: ${value}\r\n`).join('');

/**
 * fastify's clientErrorHandler: a request Node's parser refused (malformed, headers too large, too slow) is
 * answered on the socket itself, as problem+json with the security headers, and the connection closed.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, detail] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? [408, 'the request did not arrive in time']
    : err.code === 'HPE_HEADER_OVERFLOW' ? [431, 'the request header fields are too large']
    : [400, 'the request is not valid HTTP'];
  const title = STATUS_CODES[status] ?? 'Bad Request';
  const body = JSON.stringify({ type: `urn:blockfeed:problem:${status === 400 ? 'bad-request' : title.toLowerCase().replace(/ /g, '-')}`, title, status, detail });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${title}\r\ncontent-type: application/problem+json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n` +
        `cache-control: no-store\r\nconnection: close\r\n${SECURITY_HEAD}\r\n${body}`,
    );
  }
  socket.destroy(err);
}
