// One reading of "the store cannot be used" for every surface: the API's and the website's 503s and the
// commands' one-line refusal (store/unavailable.ts).
import { describe, expect, it } from 'vitest';
import { isStoreUnavailable, storeUnavailableReason } from '../../../../api-server/store/unavailable.ts';

const withCode = (code: string) => Object.assign(new Error(`failed (${code})`), { code });

describe('storeUnavailableReason', () => {
  it.each([
    ['ECONNREFUSED', 'connection refused'],
    ['ECONNRESET', 'connection reset'],
    ['ENOTFOUND', 'no such host'],
    ['EAI_AGAIN', 'host name not resolved'],
    ['ETIMEDOUT', 'connection timed out'],
    ['EHOSTUNREACH', 'host unreachable'],
    ['28P01', 'password authentication failed'],
    ['28000', 'not authorised'],
    ['3D000', 'no such database'],
    ['53300', 'too many connections'],
    ['57P01', 'the server was shut down'],
    ['57P02', 'the server crashed'],
    ['57P03', 'the server is starting up or shutting down'],
    ['25006', 'the server is read-only (a standby)'],
    ['08006', 'connection failure'],
    ['08001', 'connection failure'],
  ])('%s: %s', (code, reason) => {
    expect(storeUnavailableReason(withCode(code))).toBe(reason);
    expect(isStoreUnavailable(withCode(code))).toBe(true);
  });

  it('knows node-postgres messages of a connection lost or never made', () => {
    for (const message of ['Connection terminated unexpectedly', 'timeout exceeded when trying to connect', 'Client has encountered a connection error and is not queryable']) {
      expect(storeUnavailableReason(new Error(message)), message).toBe('connection lost');
    }
  });

  it('leaves every other error alone: bugs and bad statements are not a store that is down', () => {
    for (const err of [withCode('42P01'), withCode('23505'), withCode('constructor'), withCode('toString'), new Error('boom'), new TypeError('x is undefined'), undefined, null, 'text']) {
      expect(storeUnavailableReason(err), String(err)).toBeUndefined();
      expect(isStoreUnavailable(err)).toBe(false);
    }
  });
});
