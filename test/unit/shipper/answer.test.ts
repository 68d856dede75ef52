import { describe, expect, it } from 'vitest';
import { accessFromProbe, classifyAnswer, rejectionMessage, retryAfterMs, retryDelayMs } from '../../../shipper/answer.ts';

const NOW = Date.parse('2026-11-28T00:00:00Z');
const none = { retryAfter: null, location: null };
const problem = (status: number, detail: string, errors: { name: string; reason: string; allowed?: string }[] = []) =>
  JSON.stringify({ type: `https://blockfeed.dev/problems/x`, title: 'x', status, detail, errors });
const counts = { lines: 3, accepted: 2, inserted: 1, duplicates: 1, skipped: 0, rejected: 1, nonGlobal: 0, errors: [{ line: 3, reason: 'bad' }] };

describe('classifyAnswer', () => {
  it("reads the route's counts from a 200", () => {
    expect(classifyAnswer(200, none, JSON.stringify(counts), NOW)).toEqual({ kind: 'stored', answer: counts });
  });

  it('retries a 200 that is not the route answering (a proxy page, a cut body)', () => {
    expect(classifyAnswer(200, none, '<html>hello</html>', NOW)).toMatchObject({ kind: 'retry', reason: 'unexpected_answer' });
    expect(classifyAnswer(200, none, JSON.stringify({ ...counts, errors: [{ line: 'x' }] }), NOW)).toMatchObject({ kind: 'retry', reason: 'unexpected_answer' });
  });

  it('takes a 400 naming only body lines as the batch rejected, with its lines', () => {
    const text = problem(400, 'none of the 2 lines could be stored', [
      { name: 'body line 1', reason: 'not valid JSON', allowed: 'a cowrie log line' },
      { name: 'body line 2', reason: 'no src_ip', allowed: 'a cowrie log line' },
    ]);
    expect(classifyAnswer(400, none, text, NOW)).toEqual({
      kind: 'rejected',
      detail: 'none of the 2 lines could be stored',
      errors: [{ line: 1, reason: 'not valid JSON' }, { line: 2, reason: 'no src_ip' }],
    });
  });

  it('stops on 401/403 and on requests the server refuses as such (a parameter, a missing route, a redirect)', () => {
    expect(classifyAnswer(401, none, problem(401, 'the ingest token is not valid'), NOW)).toEqual({ kind: 'refused', status: 401, detail: 'the ingest token is not valid' });
    expect(classifyAnswer(403, none, 'Forbidden', NOW)).toMatchObject({ kind: 'refused', status: 403 });
    expect(classifyAnswer(400, none, problem(400, 'bad sensor', [{ name: 'sensor', reason: 'too long' }]), NOW)).toMatchObject({ kind: 'misconfigured', status: 400 });
    expect(classifyAnswer(404, none, problem(404, 'no endpoint'), NOW)).toMatchObject({ kind: 'misconfigured', status: 404 });
    expect(classifyAnswer(301, { retryAfter: null, location: 'https://elsewhere/' }, '', NOW)).toMatchObject({ kind: 'misconfigured', detail: expect.stringContaining('https://elsewhere/') as string });
  });

  it('retries 5xx and 503/429, honouring Retry-After; 413 is its own case', () => {
    expect(classifyAnswer(503, { retryAfter: '5', location: null }, problem(503, 'the store is unavailable'), NOW)).toEqual({
      kind: 'retry', reason: 'unavailable', detail: 'the store is unavailable', retryAfterMs: 5000,
    });
    expect(classifyAnswer(429, { retryAfter: null, location: null }, '', NOW)).toMatchObject({ kind: 'retry', reason: 'unavailable' });
    expect(classifyAnswer(502, none, 'Bad Gateway', NOW)).toMatchObject({ kind: 'retry', reason: 'server_error' });
    expect(classifyAnswer(413, none, problem(413, 'Request body is too large'), NOW)).toEqual({ kind: 'too_large', detail: 'Request body is too large' });
  });
});

describe('retryAfterMs', () => {
  it('reads seconds and HTTP dates', () => {
    expect(retryAfterMs('7', NOW)).toBe(7000);
    expect(retryAfterMs(new Date(NOW + 3000).toUTCString(), NOW)).toBe(3000);
    expect(retryAfterMs(new Date(NOW - 3000).toUTCString(), NOW)).toBe(0);
    expect(retryAfterMs('soon', NOW)).toBeUndefined();
    expect(retryAfterMs(null, NOW)).toBeUndefined();
  });
});

describe('retryDelayMs', () => {
  it('grows from 250-500 ms to at most 30 s, and waits at least Retry-After (up to 5 minutes)', () => {
    expect(retryDelayMs(0, 0)).toBe(250);
    expect(retryDelayMs(0, 1)).toBe(500);
    expect(retryDelayMs(3, 0.5)).toBe(3000);
    expect(retryDelayMs(50, 1)).toBe(30_000);
    expect(retryDelayMs(50, 0)).toBe(15_000);
    expect(retryDelayMs(0, 0, 5000)).toBe(5000);
    expect(retryDelayMs(0, 0, 3_600_000)).toBe(300_000);
  });
});

describe('rejectionMessage', () => {
  it("maps the body's line numbers back to the file's", () => {
    const place = { name: 'cowrie.json', firstLine: 1001, lines: 50, headerLines: 0 };
    expect(rejectionMessage(place, 1, 'bad')).toBe('cowrie.json:1001: bad');
    expect(rejectionMessage(place, 50, 'bad')).toBe('cowrie.json:1050: bad');
  });

  it('leaves out the CSV header sent ahead of a batch (its own line was reported with the first batch)', () => {
    const place = { name: 'tel.csv', firstLine: 200, lines: 10, headerLines: 1 };
    expect(rejectionMessage(place, 1, 'header must name ts')).toBeUndefined();
    expect(rejectionMessage(place, 2, 'bad')).toBe('tel.csv:200: bad');
    expect(rejectionMessage(place, 12, 'bad')).toBeUndefined();
  });
});

describe('accessFromProbe', () => {
  it('grants on the empty-body 400, refuses on 401/403/404/400 naming another parameter, and does not judge a server that is away', () => {
    expect(accessFromProbe(400, problem(400, 'the body must hold at least one log line', [{ name: 'body', reason: 'empty' }]))).toEqual({ kind: 'granted' });
    expect(accessFromProbe(401, problem(401, 'the ingest token is not valid'))).toEqual({ kind: 'refused', status: 401, detail: 'the ingest token is not valid' });
    expect(accessFromProbe(404, problem(404, 'no endpoint'))).toMatchObject({ kind: 'refused', status: 404 });
    expect(accessFromProbe(400, problem(400, 'bad', [{ name: 'sensor', reason: 'too long' }]))).toMatchObject({ kind: 'refused', status: 400 });
    expect(accessFromProbe(503, problem(503, 'the store is unavailable'))).toMatchObject({ kind: 'unknown' });
    expect(accessFromProbe(429, '')).toMatchObject({ kind: 'unknown' });
  });
});
