// `blockfeed ship`: one Follower per followed path, one push client, one state file, metrics. Stops on
// SIGTERM/SIGINT (the batch in flight gets a few seconds to be acknowledged, else it is sent again on the
// next start), or when the server refuses the shipper (401/403, a wrong URL or format): then it exits
// non-zero with a message naming the URL and the token file, never the token.
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import path from 'node:path';
import { request } from 'undici';
import { UserError } from '../common/errors.ts';
import { listen, metricsHandler, type BindAddress } from '../common/http-endpoints.ts';
import type { InputFormat } from '../common/input-formats.ts';
import type { Logger } from '../common/logging.ts';
import { accessFromProbe, classifyAnswer, type PushOutcome } from './answer.ts';
import { Follower, ShipRefused } from './follow.ts';
import type { BatchLimits } from './lines.ts';
import { createShipperMetrics } from './metrics.ts';
import { readState, writeState, type FilePosition } from './state.ts';

/** How long a push may take before it is abandoned and tried again (a batch is stored in well under a second). */
const REQUEST_TIMEOUT_MS = 60_000;
/** How long the batch in flight at SIGTERM may still take to be acknowledged. */
const SHUTDOWN_GRACE_MS = 5_000;
/** How often every followed file is looked at, besides what fs.watch reports. */
const POLL_MS = 250;
export const PUSH_PATH = 'internal/v1/events';

export interface ShipOptions {
  files: string[];
  format: InputFormat;
  /** The push route's URL, with format and sensor (pushUrl). */
  url: URL;
  tokenFile: string;
  stateFile: string;
  limits: BatchLimits;
  lingerMs: number;
  metricsBind: BindAddress | undefined;
}

/**
 * The push route's URL from the api-server's base URL as given (`https://blockfeed.example.org`, with a path
 * prefix when it sits behind one, or the route's own URL).
 */
export function pushUrl(base: string, format: InputFormat, sensor: string | undefined): URL {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new UserError(`--url "${base}" is not a URL such as https://blockfeed.example.org`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UserError(`--url must be http:// or https://, got "${url.protocol}"`);
  if (url.username || url.password) throw new UserError('--url must not carry credentials: the token comes from --token-file');
  if (url.search || url.hash) throw new UserError('--url must not carry a query or a fragment: --format and --sensor make the query');
  if (!url.pathname.endsWith(`/${PUSH_PATH}`)) url.pathname = `${url.pathname.replace(/\/+$/, '')}/${PUSH_PATH}`;
  url.searchParams.set('format', format);
  if (sensor !== undefined) url.searchParams.set('sensor', sensor);
  return url;
}

/** The token in `file` (surrounding whitespace removed); refuses an unreadable or empty file or one that is not a header value. */
export async function readToken(file: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new UserError(`--token-file ${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const token = text.trim();
  if (token === '') throw new UserError(`--token-file ${file}: empty; it must hold the api-server's BLOCKFEED_INGEST_TOKEN`);
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(token)) throw new UserError(`--token-file ${file}: the token must be one line of printable characters`);
  return token;
}

/** The state file, written after each acknowledged batch; writes follow one another, the latest state each time. */
function stateKeeper(file: string, initial: Record<string, FilePosition>) {
  const state = { version: 1 as const, files: { ...initial } };
  let writing: Promise<void> = Promise.resolve();
  return {
    state,
    save(followed: string, position: FilePosition): Promise<void> {
      state.files[followed] = position;
      writing = writing.then(() =>
        writeState(file, state).catch((err: unknown) => {
          throw new UserError(`state file ${file}: cannot write (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
        }),
      );
      return writing;
    },
    flushed: () => writing,
  };
}

/** One POST to the route: status, the headers the answer's meaning depends on, the body's text. */
async function post(url: URL, token: string, contentType: string, body: Buffer, abort: AbortSignal): Promise<{ status: number; retryAfter: string | null; location: string | null; text: string }> {
  // undici's request, not fetch: fetch copies the body on every attempt, a batch's worth of garbage each time.
  const res = await request(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': contentType },
    body,
    signal: AbortSignal.any([abort, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]),
  });
  const header = (name: string) => {
    const value = res.headers[name];
    return (Array.isArray(value) ? value[0] : value) ?? null;
  };
  return { status: res.statusCode, retryAfter: header('retry-after'), location: header('location'), text: await res.body.text() };
}

/** Why a request got no answer: the error's code (ECONNREFUSED, UND_ERR_SOCKET, ...) or message. */
function unanswered(err: unknown): string {
  const e = err as Error & { code?: string; cause?: { code?: string; message?: string } };
  return e.code ?? e.cause?.code ?? e.message;
}

async function push(url: URL, token: string, contentType: string, body: Buffer, abort: AbortSignal): Promise<PushOutcome> {
  try {
    const answer = await post(url, token, contentType, body, abort);
    return classifyAnswer(answer.status, answer, answer.text, Date.now());
  } catch (err) {
    if (abort.aborted) throw err;
    if ((err as Error).name === 'TimeoutError') return { kind: 'retry', reason: 'timeout', detail: `no answer within ${REQUEST_TIMEOUT_MS / 1000} s` };
    return { kind: 'retry', reason: 'unreachable', detail: unanswered(err) };
  }
}

/**
 * Checks the token at start with an empty push (accessFromProbe), so that a wrong token or URL stops the
 * shipper at once rather than at the first line. A server that is away is not a refusal: the batches wait
 * for it.
 */
async function checkAccess(url: URL, token: string, contentType: string, abort: AbortSignal, log: Logger): Promise<void> {
  let answer: Awaited<ReturnType<typeof post>>;
  try {
    answer = await post(url, token, contentType, Buffer.alloc(0), abort);
  } catch (err) {
    if (!abort.aborted) log.warn({ reason: unanswered(err) }, `cannot reach ${url.origin} yet (${unanswered(err)}); lines wait for it`);
    return;
  }
  const access = accessFromProbe(answer.status, answer.status >= 300 && answer.status < 400 ? `redirected to ${answer.location}` : answer.text);
  if (access.kind === 'refused') throw new ShipRefused(access.status, access.detail);
  if (access.kind === 'unknown') log.warn({ detail: access.detail }, `the server did not confirm the token yet (${access.detail}); lines wait for it`);
  else log.info({ url: url.origin }, 'the server accepts the token');
}

/** Ships until `stop` aborts; throws a UserError when the server refuses the shipper. */
export async function ship(options: ShipOptions, log: Logger, stop: AbortSignal): Promise<void> {
  const token = await readToken(options.tokenFile);
  const saved = await readState(options.stateFile);
  // Written back at once: a state file that cannot be written stops the shipper now, not after a batch.
  await writeState(options.stateFile, saved).catch((err: unknown) => {
    throw new UserError(`state file ${options.stateFile}: cannot write (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  });
  const followed = [...new Map(options.files.map((f) => [path.resolve(f), f])).entries()];
  const following = new Map<string, Follower>();
  const metrics = createShipperMetrics(
    followed.map(([, shown]) => shown),
    async (shown) => (await following.get(shown)?.lag()) ?? 0,
  );
  let server: Server | undefined;
  if (options.metricsBind) server = await listen(metricsHandler(metrics.registry), options.metricsBind, 'metrics', log);

  // After SIGTERM a push in flight gets a few seconds more than the rest; `halt` (a follower failed, or the
  // server refused the shipper) ends everything at once.
  const hardStop = new AbortController();
  const halt = new AbortController();
  const stopping = AbortSignal.any([stop, halt.signal]);
  const onStop = () => setTimeout(() => hardStop.abort(), SHUTDOWN_GRACE_MS).unref();
  stopping.addEventListener('abort', onStop, { once: true });
  const inFlight = AbortSignal.any([hardStop.signal, halt.signal]);

  const contentType = options.format === 'telescope-csv' ? 'text/csv' : 'application/x-ndjson';
  const keeper = stateKeeper(options.stateFile, saved.files);
  const context = {
    format: options.format,
    limits: options.limits,
    lingerMs: options.lingerMs,
    pollMs: POLL_MS,
    log,
    metrics,
    push: (body: Buffer) => push(options.url, token, contentType, body, inFlight),
    save: (followed: string, position: FilePosition) => keeper.save(followed, position),
    stop: stopping,
  };
  const followers = followed.map(([absolute, shown]) => new Follower(absolute, shown, saved.files[absolute], context));
  for (const f of followers) following.set(f.display, f);

  // One watch per directory (a rename and a new file are events of the directory, not of the old file).
  const watchers: FSWatcher[] = [];
  for (const dir of new Set(followers.map((f) => path.dirname(f.path)))) {
    try {
      const inDir = followers.filter((f) => path.dirname(f.path) === dir);
      const watcher = watch(dir, { persistent: false }, () => inDir.forEach((f) => f.wake()));
      watcher.on('error', (err) => log.debug({ dir, err }, 'fs.watch failed; polling only'));
      watchers.push(watcher);
    } catch (err) {
      log.debug({ dir, err }, `cannot watch ${dir}; polling every ${POLL_MS} ms`);
    }
  }

  log.info({ files: followed.map(([, shown]) => shown), url: options.url.href, format: options.format, stateFile: options.stateFile }, 'shipping');
  // The first follower to fail stops the others: the process ends with its reason once all have let go.
  let failure: Error | undefined;
  const failed = (err: unknown) => {
    failure ??= err instanceof Error ? err : new Error(String(err));
    halt.abort();
  };
  try {
    await Promise.all([checkAccess(options.url, token, contentType, stopping, log).catch(failed), ...followers.map((f) => f.run().catch(failed))]);
  } finally {
    stopping.removeEventListener('abort', onStop);
    for (const w of watchers) w.close();
    await keeper.flushed().catch(failed);
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }
  if (failure instanceof ShipRefused) throw refusalError(failure, options);
  if (failure !== undefined) throw failure;
}

/** The one line the operator reads when the server refuses the shipper: the URL, the token file, never the token. */
function refusalError(refusal: ShipRefused, options: ShipOptions): UserError {
  const route = `${options.url.origin}${options.url.pathname}`;
  const hint =
    refusal.status === 401 || refusal.status === 403
      ? `the token in ${options.tokenFile} is not the api-server's BLOCKFEED_INGEST_TOKEN`
      : refusal.status === 404
        ? `no push route there: check that --url is the api-server's base URL and that the api-server has BLOCKFEED_INGEST_TOKEN set`
        : 'check --url, --format and --sensor';
  return new UserError(`${route} refused the shipper (${refusal.status}: ${refusal.detail}): ${hint}`);
}
