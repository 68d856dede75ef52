import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, redactUrl } from '../../../common/logging.ts';

describe('redactUrl', () => {
  it.each([
    ['/api/dedup?key=s3cret&hours=24', '/api/dedup?key=[REDACTED]&hours=24'],
    ['/api/dedup?hours=24&KEY=s3cret', '/api/dedup?hours=24&KEY=[REDACTED]'],
    ['/api/dedup?hours=24&%6Bey=s3cret', '/api/dedup?hours=24&%6Bey=[REDACTED]'],
    ['/api/dedup?token=abc#frag', '/api/dedup?token=[REDACTED]#frag'],
    ['/api/dedup?keys=1', '/api/dedup?keys=1'],
    ['/healthz', '/healthz'],
  ])('%s -> %s', (input, output) => {
    expect(redactUrl(input)).toBe(output);
  });
});

describe('createLogger', () => {
  it('never writes credentials from headers or the URL', () => {
    let out = '';
    const sink = new Writable({ write: (chunk: Buffer, _enc, cb) => ((out += chunk.toString()), cb()) });
    const log = createLogger({ destination: sink });
    log.info({ req: { method: 'GET', url: '/api/export?key=topsecret1', headers: { authorization: 'Bearer topsecret2', 'x-api-key': 'topsecret3' } } }, 'r');
    log.info({ headers: { authorization: 'Bearer topsecret4', 'x-api-key': 'topsecret5' } }, 'h');
    expect(out).toContain('/api/export?key=[REDACTED]');
    expect(out).not.toMatch(/topsecret/);
  });
});
