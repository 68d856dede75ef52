// The feed client: one conditional GET of a list, its body streamed line by line into a consumer, bounded in
// time and size; and the long poll of a live subscription, a conditional HEAD with `wait=` that answers when the
// feed's data changes (docs/http-api.md "Live lists"). The API key travels only in the X-API-Key header, never
// in the URL (URLs end up in logs).
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { listUrl } from '../common/list-filters.ts';
import type { BlocklistSubscriptionSpec } from '../api/v1alpha1/blocklist-subscription.ts';

type FeedFailure = 'HttpError' | 'Timeout' | 'TooLarge' | 'Unreachable' | 'NotAList';

/** A feed failure as the reason of a condition, an Event and a metric. */
export const FEED_FAILURE_REASONS: Readonly<Record<FeedFailure, string>> = {
  HttpError: 'FeedHttpError',
  Timeout: 'FeedTimeout',
  TooLarge: 'FeedTooLarge',
  Unreachable: 'FeedUnreachable',
  NotAList: 'FeedNotAList',
};

export class FeedError extends Error {
  readonly reason: FeedFailure;
  readonly status?: number;
  /** The feed's Retry-After (429, 503), in seconds. */
  readonly retryAfterSeconds?: number;
  constructor(reason: FeedFailure, message: string, status?: number, retryAfterSeconds?: number) {
    super(message);
    this.name = 'FeedError';
    this.reason = reason;
    this.status = status;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

interface PullOptions {
  feed: BlocklistSubscriptionSpec['feed'];
  apiKey?: string;
  etag?: string;
  timeoutMs?: number;
  maxBodyBytes?: number;
  userAgent?: string;
  /** Ask for the feed's current data, not a copy it cached (`Cache-Control: no-cache`): a live subscription's pulls. */
  fresh?: boolean;
}

type PullResult =
  | { changed: false; status: 304 }
  | {
      changed: true;
      etag?: string;
      bytes: number;
      lines: number;
      /** When the feed's data last changed (X-Blocklist-Data-Changed), if it says. */
      dataChanged?: Date;
    };

const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_BODY = 64 * 1024 * 1024;

/**
 * Receives the body: each line as a string, or as a byte range of a buffer valid only during the call; or the
 * raw chunks, cut into lines by the sink itself (end() answers the number of lines).
 */
type LineSink =
  | ((line: string) => void)
  | { bytes: (buf: Uint8Array, start: number, end: number) => void }
  | { chunk: (buf: Uint8Array) => void; end: () => number };

const NEWLINE = 10;

/**
 * Pulls the list. The sink receives every line (without its newline) as the body streams in. A 304 answers
 * { changed: false }; every failure throws a FeedError saying why, after which nothing must be applied.
 */
/** The feed's request timeout: spec.feed.timeoutSeconds (60 s by default). */
function timeoutOf(feed: BlocklistSubscriptionSpec['feed']): number {
  return (feed.timeoutSeconds ?? DEFAULT_TIMEOUT_MS / 1000) * 1000;
}

/** The headers every request to a feed carries: the key, the ETag held, who asks. */
function feedHeaders(options: { apiKey?: string; etag?: string; userAgent?: string }): Record<string, string> {
  const headers: Record<string, string> = { accept: 'text/plain', 'user-agent': options.userAgent ?? 'blockfeed-controller' };
  if (options.apiKey) headers['x-api-key'] = options.apiKey;
  if (options.etag) headers['if-none-match'] = options.etag;
  return headers;
}

/** Sends a request; node:http rather than fetch: about half the time per megabyte, and the body arrives as Buffers. */
function send(url: URL, method: 'GET' | 'HEAD', headers: Record<string, string>, signal: AbortSignal): Promise<IncomingMessage> {
  return new Promise<IncomingMessage>((resolve, reject) => {
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, { method, headers, signal }, resolve);
    req.once('error', reject);
    req.end();
  });
}

function headerOf(res: IncomingMessage, name: string): string | undefined {
  const v = res.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Throws when the answer is neither 200 nor 304, or is not a text list (an HTML error page served with 200). */
function checkAnswer(res: IncomingMessage, describe: string): 200 | 304 {
  const status = res.statusCode ?? 0;
  if (status === 304) return 304;
  if (status !== 200) {
    res.destroy();
    const retryAfter = Number(headerOf(res, 'retry-after'));
    throw new FeedError('HttpError', `feed ${describe} answered HTTP ${status}`, status, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined);
  }
  const type = headerOf(res, 'content-type') ?? '';
  if (/html|json|xml/i.test(type)) {
    res.destroy();
    throw new FeedError('NotAList', `feed ${describe} answered ${type}, not a text list`);
  }
  return 200;
}

/** A failure of a request as a FeedError: the timeout, or the connection. */
function feedFailure(err: unknown, describe: string, timeout: AbortSignal, timeoutMs: number): Error {
  if (err instanceof FeedError) return err;
  if (timeout.aborted) return new FeedError('Timeout', `feed ${describe} did not answer within ${timeoutMs / 1000}s`);
  const code = (err as NodeJS.ErrnoException).code;
  return new FeedError('Unreachable', `feed ${describe} unreachable: ${code ?? (err as Error).message}`);
}

function dataChangedOf(res: IncomingMessage): Date | undefined {
  const text = headerOf(res, 'x-blocklist-data-changed');
  const at = text === undefined ? NaN : Date.parse(text);
  return Number.isNaN(at) ? undefined : new Date(at);
}

export async function pullFeed(options: PullOptions, sink: LineSink): Promise<PullResult> {
  const decoder = new TextDecoder('utf-8');
  const timeoutMs = options.timeoutMs ?? timeoutOf(options.feed);
  const maxBody = options.maxBodyBytes ?? options.feed.maxBodyBytes ?? DEFAULT_MAX_BODY;
  const url = listUrl(options.feed);
  const headers = feedHeaders(options);
  if (options.fresh) headers['cache-control'] = 'no-cache';
  const signal = AbortSignal.timeout(timeoutMs);
  const describe = `${url.origin}${url.pathname}`;
  try {
    const res = await send(url, 'GET', headers, signal);
    const header = (name: string) => headerOf(res, name);
    if (checkAnswer(res, describe) === 304) {
      res.destroy();
      return { changed: false, status: 304 };
    }
    const dataChanged = dataChangedOf(res);
    const declared = Number(header('content-length') ?? NaN);
    if (declared > maxBody) {
      res.destroy();
      throw new FeedError('TooLarge', `feed ${describe} body of ${declared} bytes exceeds the ${maxBody}-byte limit`);
    }
    let bytes = 0;
    let lines = 0;
    if ('chunk' in sink) {
      for await (const chunk of res as AsyncIterable<Buffer>) {
        bytes += chunk.byteLength;
        if (bytes > maxBody) {
          res.destroy();
          throw new FeedError('TooLarge', `feed ${describe} body exceeds the ${maxBody}-byte limit`);
        }
        sink.chunk(chunk);
      }
      return { changed: true, etag: header('etag'), bytes, lines: sink.end(), dataChanged };
    }
    // Lines are cut at newline bytes (a UTF-8 multi-byte character never contains one), so a byte sink
    // sees the body without any string being made.
    const emit =
      typeof sink === 'function'
        ? (buf: Uint8Array, start: number, end: number) => sink(decoder.decode(buf.subarray(start, end)))
        : (buf: Uint8Array, start: number, end: number) => sink.bytes(buf, start, end);
    let carry: Uint8Array | undefined;
    for await (const chunk of res as AsyncIterable<Buffer>) {
      bytes += chunk.byteLength;
      if (bytes > maxBody) {
        res.destroy();
        throw new FeedError('TooLarge', `feed ${describe} body exceeds the ${maxBody}-byte limit`);
      }
      let pos = 0;
      if (carry) {
        const nl = chunk.indexOf(NEWLINE);
        const head = nl === -1 ? chunk : chunk.subarray(0, nl);
        const joined = new Uint8Array(carry.length + head.length);
        joined.set(carry);
        joined.set(head, carry.length);
        if (nl === -1) {
          carry = joined;
          continue;
        }
        emit(joined, 0, joined.length);
        lines++;
        carry = undefined;
        pos = nl + 1;
      }
      let nl = chunk.indexOf(NEWLINE, pos);
      while (nl !== -1) {
        emit(chunk, pos, nl);
        lines++;
        pos = nl + 1;
        nl = chunk.indexOf(NEWLINE, pos);
      }
      if (pos < chunk.length) carry = chunk.slice(pos);
    }
    if (carry?.length) {
      emit(carry, 0, carry.length);
      lines++;
    }
    return { changed: true, etag: header('etag'), bytes, lines, dataChanged };
  } catch (err) {
    throw feedFailure(err, describe, signal, timeoutMs);
  }
}

interface WaitOptions {
  feed: BlocklistSubscriptionSpec['feed'];
  apiKey?: string;
  /** The ETag held: the feed answers once its data is newer than the list this names. */
  etag?: string;
  /** How long the feed may hold the request (`wait=`). */
  waitSeconds: number;
  /** Aborts the poll (the watch stops). */
  signal: AbortSignal;
  userAgent?: string;
}

/**
 * The long poll of a live subscription: a conditional HEAD with `wait=`, which a blockfeed api-server holds
 * until its data changes or the wait ends. Answers whether the data changed and the ETag to hold next. Bounded
 * like a pull: the feed's timeout on top of the wait. A HEAD: the list is pulled by the
 * sync that follows, never twice.
 */
export async function waitForChange(options: WaitOptions): Promise<{ changed: boolean; etag?: string }> {
  const timeoutMs = options.waitSeconds * 1000 + timeoutOf(options.feed);
  const url = listUrl(options.feed);
  url.searchParams.append('wait', String(options.waitSeconds));
  const timeout = AbortSignal.timeout(timeoutMs);
  const describe = `${url.origin}${url.pathname}`;
  try {
    const res = await send(url, 'HEAD', feedHeaders(options), AbortSignal.any([timeout, options.signal]));
    res.resume();
    if (checkAnswer(res, describe) === 304) return { changed: false, etag: headerOf(res, 'etag') ?? options.etag };
    return { changed: true, etag: headerOf(res, 'etag') };
  } catch (err) {
    throw feedFailure(err, describe, timeout, timeoutMs);
  }
}
