// POST /internal/v1/events: sensors push their logs over HTTP. The body is the log text (NDJSON, or CSV for
// telescope-csv), `format` and `sensor` are query parameters as on the CLI; a bearer ingest token is
// required (compared in constant time). Registered only when BLOCKFEED_INGEST_TOKEN is set.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { Counter, type Registry } from 'prom-client';
import { Type } from 'typebox';
import { sharedEnricher } from '../enrich/enricher.ts';
import { ProblemError } from './problem.ts';
import { INPUT_FORMATS, parserFor } from '../ingest/parsers/index.ts';
import { ingest } from '../ingest/pipeline.ts';
import { EventWriter, legacyIdsUntil } from '../ingest/writer.ts';

interface IngestRouteOptions {
  pool: pg.Pool;
  registry: Registry;
  token: string;
  /** Largest body accepted, bytes (default 32 MiB). */
  bodyLimit?: number;
}

const MAX_REPORTED = 100;
const digest = (s: string) => createHash('sha256').update(s).digest();

const PushParams = Type.Object({
  format: Type.Enum([...INPUT_FORMATS], { default: 'native', description: 'the log format of the body' }),
  sensor: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'the sensor name, for logs that do not carry one' })),
});

const badRequest = (detail: string, errors: { name: string; reason: string; allowed: string }[]) =>
  new ProblemError({ status: 400, slug: 'invalid-request', title: 'Bad Request', detail, errors });

export async function ingestRoute(app: FastifyInstance, { pool, registry, token, bodyLimit = 32 * 1024 * 1024 }: IngestRouteOptions): Promise<void> {
  const expected = digest(token);
  const nonGlobal = new Counter({
    name: 'blockfeed_ingest_non_global_events_total',
    help: 'Pushed events from non-global source addresses, dropped (never stored or listed)',
    registers: [registry],
  });
  let writer: EventWriter | undefined;
  // Set by a migration, never changed after: read once.
  let legacy: { until: number | undefined } | undefined;
  // Bodies are log text, parsed line by line here, never as one JSON document.
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser(
    ['application/json', 'application/x-ndjson', 'application/jsonl', 'text/plain', 'text/csv'],
    { parseAs: 'string', bodyLimit },
    (_req, body, done) => done(null, body),
  );

  // The token is checked before the query is validated: without it, nothing about the route is answered.
  const authenticate = async (req: FastifyRequest) => {
    const given = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')?.[1]?.trim();
    if (given && timingSafeEqual(digest(given), expected)) return;
    throw new ProblemError({
      status: 401,
      slug: 'unauthorized',
      title: 'Unauthorized',
      detail: given ? 'the ingest token is not valid' : 'an ingest token is required (Authorization: Bearer <token>)',
      headers: { 'www-authenticate': 'Bearer realm="blockfeed-ingest"' },
    });
  };

  app.withTypeProvider<TypeBoxTypeProvider>().post('/internal/v1/events', { bodyLimit, onRequest: authenticate, schema: { querystring: PushParams } }, async (req) => {
    const { format, sensor } = req.query;
    if (typeof req.body !== 'string' || req.body.trim() === '') {
      throw badRequest('the body must hold at least one log line', [{ name: 'body', reason: 'empty', allowed: 'log lines of the format' }]);
    }
    writer ??= new EventWriter(pool, sharedEnricher);
    legacy ??= { until: await legacyIdsUntil(pool) };
    const options = { sensor: sensor?.trim() || undefined, legacyIdsUntil: legacy.until };
    const errors: { line: number; reason: string }[] = [];
    const stats = await ingest([{ name: 'body', stream: [req.body], parser: parserFor(format, options) }], {
      writer,
      onReject: (_input, line, reason) => {
        if (errors.length < MAX_REPORTED) errors.push({ line, reason });
      },
    });
    nonGlobal.inc(stats.nonGlobal);
    if (stats.accepted === 0 && stats.rejected > 0) {
      throw badRequest(
        `none of the ${stats.rejected} lines could be stored`,
        errors.map((e) => ({ name: `body line ${e.line}`, reason: e.reason, allowed: `a ${format} log line` })),
      );
    }
    const { bytes: _bytes, ...counts } = stats;
    return { ...counts, duplicates: stats.accepted - stats.inserted, errors };
  });
}
