// Lists go out gzip-compressed to clients that accept it (docs/http-api.md "Compression"). A list is compressed
// once, as it streams from the store into the shared body, and the cache keeps the compressed bytes: the
// compressed answer is an answer of its own, with its own cache key and ETag. A per-response compressor
// (@fastify/compress) would compress a cold list once per request: a herd of 200 identical pulls of a 295 MiB
// export would compress it 200 times, and without compression each pull writes all 295 MiB to its socket.
import { createGzip, type Gzip } from 'node:zlib';
import Negotiator from 'negotiator';

export type ContentCoding = 'gzip' | 'identity';

const CODINGS: ContentCoding[] = ['gzip', 'identity'];

/** The coding a list is sent in: gzip when Accept-Encoding accepts it (q > 0), else identity. */
export function listCoding(acceptEncoding: string | undefined): ContentCoding {
  if (!acceptEncoding) return 'identity';
  return (new Negotiator({ headers: { 'accept-encoding': acceptEncoding } }).encoding(CODINGS) as ContentCoding | undefined) ?? 'identity';
}

/** The cache key of a list in a coding: the compressed answer has bytes, and so an ETag, of its own. Pure. */
export function codedKey(key: string, coding: ContentCoding): string {
  return coding === 'gzip' ? `${key};gzip` : key;
}

/**
 * The headers a list carries for its coding. `Vary` on both: a shared cache must not give one client the other's
 * coding.
 */
export function codingHeaders(coding: ContentCoding): Record<string, string> {
  return coding === 'gzip' ? { vary: 'accept-encoding', 'content-encoding': 'gzip' } : { vary: 'accept-encoding' };
}

/** zlib's default level (6): see docs/http-api.md "Compression" for the levels measured. */
export function gzipStream(): Gzip {
  return createGzip();
}
