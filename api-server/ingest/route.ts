// POST /internal/v1/events: sensors push their logs over HTTP. The body is the log text (NDJSON, or CSV for
// telescope-csv), `format` and `sensor` are query parameters as on the CLI; a bearer ingest token is
// required (compared in constant time). Registered only when BLOCKFEED_INGEST_TOKEN is set.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type pg from 'pg';
import { Counter, type Registry } from 'prom-client';
import { sharedEnricher } from '../enrich/enricher.ts';
import { INPUT_FORMATS, parserFor, type InputFormat } from './parsers/index.ts';
import { ingest } from './pipeline.ts';
import { EventWriter } from './writer.ts';

interface IngestRouteOptions {
  pool: pg.Pool;
  registry: Registry;
  token: string;
  /** Largest body accepted, bytes (default 32 MiB). */
  bodyLimit?: number;
}

const MAX_REPORTED = 100;
const digest = (s: string) => createHash('sha256').update(s).digest();

function problem(reply: FastifyReply, status: number, title: string, detail: string, errors?: { name: string; reason: string; allowed?: string[] }[]) {
  return reply
    .code(status)
    .type('application/problem+json')
    .send({ type: 'about:blank', title, status, detail, ...(errors ? { errors } : {}) });
}

export async function ingestRoute(app: FastifyInstance, { pool, registry, token, bodyLimit = 32 * 1024 * 1024 }: IngestRouteOptions): Promise<void> {
  const expected = digest(token);
  const nonGlobal = new Counter({
    name: 'blockfeed_ingest_non_global_events_total',
    help: 'Pushed events from non-global source addresses, dropped (never stored or listed)',
    registers: [registry],
  });
  let writer: EventWriter | undefined;
  // Bodies are log text, parsed line by line here, never as one JSON document.
  app.removeContentTypeParser(['application/json', 'text/plain']);
  app.addContentTypeParser(
    ['application/json', 'application/x-ndjson', 'application/jsonl', 'text/plain', 'text/csv'],
    { parseAs: 'string', bodyLimit },
    (_req, body, done) => done(null, body),
  );

  app.post('/internal/v1/events', { bodyLimit }, async (req, reply) => {
    const auth = req.headers.authorization ?? '';
    const given = /^Bearer\s+(.+)$/i.exec(auth)?.[1]?.trim();
    if (!given || !timingSafeEqual(digest(given), expected)) {
      reply.header('www-authenticate', 'Bearer realm="blockfeed-ingest"');
      return problem(reply, 401, 'Unauthorized', given ? 'the ingest token is not valid' : 'an ingest token is required (Authorization: Bearer <token>)');
    }
    const query = req.query as Record<string, unknown>;
    const format = query.format ?? 'native';
    if (typeof format !== 'string' || !(INPUT_FORMATS as readonly string[]).includes(format)) {
      return problem(reply, 400, 'Bad Request', `format must be one of ${INPUT_FORMATS.join(', ')}`, [
        { name: 'format', reason: 'unknown value', allowed: [...INPUT_FORMATS] },
      ]);
    }
    const sensor = typeof query.sensor === 'string' && query.sensor.trim() ? query.sensor.trim() : undefined;
    if (typeof req.body !== 'string' || req.body.trim() === '') {
      return problem(reply, 400, 'Bad Request', 'the body must hold at least one log line', [{ name: 'body', reason: 'empty' }]);
    }
    writer ??= new EventWriter(pool, sharedEnricher);
    const errors: { line: number; reason: string }[] = [];
    const stats = await ingest([{ name: 'body', stream: [req.body], parser: parserFor(format as InputFormat, { sensor }) }], {
      writer,
      onReject: (message) => {
        if (errors.length < MAX_REPORTED) {
          const m = /^body:(\d+): (.*)$/.exec(message);
          errors.push({ line: Number(m?.[1]), reason: m?.[2] ?? message });
        }
      },
    });
    nonGlobal.inc(stats.nonGlobal);
    if (stats.accepted === 0 && stats.rejected > 0) {
      return problem(
        reply, 400, 'Bad Request', `none of the ${stats.rejected} lines could be stored`,
        errors.map((e) => ({ name: `body line ${e.line}`, reason: e.reason })),
      );
    }
    return {
      lines: stats.lines,
      accepted: stats.accepted,
      inserted: stats.inserted,
      duplicates: stats.accepted - stats.inserted,
      skipped: stats.skipped,
      rejected: stats.rejected,
      nonGlobal: stats.nonGlobal,
      errors,
    };
  });
}
