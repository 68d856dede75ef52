// Small decisions of the website with security weight: where sign-in may send a member on, which unmatched
// requests get a page rather than problem+json.
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { CONTENT_SECURITY_POLICY, wantsPage } from '../../../../api-server/website/pages.ts';
import { safeNext } from '../../../../api-server/website/sign-in.ts';

const request = (method: string, url: string, accept?: string) => ({ method, url, headers: accept ? { accept } : {} }) as unknown as FastifyRequest;

describe('safeNext', () => {
  it('allows only the member pages', () => {
    expect(safeNext('/account')).toBe('/account');
    expect(safeNext('/account/keys')).toBe('/account/keys');
    for (const bad of ['//evil.example', 'https://evil.example/account', '/account/../admin', '/account/keys?x', '/', undefined, 42]) expect(safeNext(bad)).toBeUndefined();
  });
});

describe('wantsPage', () => {
  it('gives browsers a page, and the API and other clients problem+json', () => {
    const html = 'text/html,application/xhtml+xml,*/*;q=0.8';
    expect(wantsPage(request('GET', '/nope', html))).toBe(true);
    expect(wantsPage(request('GET', '/api/nope', html))).toBe(false);
    expect(wantsPage(request('GET', '/internal/v1/nope', html))).toBe(false);
    expect(wantsPage(request('GET', '/nope', '*/*'))).toBe(false);
    expect(wantsPage(request('POST', '/nope', html))).toBe(false);
    expect(wantsPage(request('GET', '/nope'))).toBe(false);
  });
});

describe('CONTENT_SECURITY_POLICY', () => {
  it('allows nothing inline and nothing from elsewhere', () => {
    expect(CONTENT_SECURITY_POLICY).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
  });
});
