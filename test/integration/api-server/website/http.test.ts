// The website over plain HTTP: what browsers are not needed to show — not-found answers for pages and for the
// API, static files cached for good, the language switch, members' pages behind sign-in, bad form bodies,
// and pages without their store.
import { describe, expect, it } from 'vitest';
import { apiOnFreshDatabase, startApi } from '../../../support/api-server.ts';

const HTML = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };

const server = apiOnFreshDatabase();

describe('website over HTTP', () => {
  it('answers unknown pages with a page for browsers and problem+json for the API and other clients', async () => {
    const page = await fetch(`${server.api.base}/no-such-page`, { headers: HTML });
    expect(page.status).toBe(404);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await page.text()).toContain('There is no page at /no-such-page.');
    for (const [path, headers] of [['/api/nothing', HTML], ['/no-such-page', {}]] as const) {
      const res = await fetch(`${server.api.base}${path}`, { headers });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
  });

  it('serves static files under content-hashed URLs, cached for a year', async () => {
    const home = await (await fetch(`${server.api.base}/`)).text();
    const css = /href="(\/static\/site\.css\?v=[0-9a-f]{12})"/.exec(home)?.[1];
    expect(css).toBeDefined();
    const res = await fetch(`${server.api.base}${css}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(res.headers.get('set-cookie')).toBeNull();
  });

  it('switches language with ?lang=, remembered by a cookie', async () => {
    const switched = await fetch(`${server.api.base}/docs?lang=zh-CN`);
    expect(await switched.text()).toContain('<html lang="zh-CN">');
    const cookie = switched.headers.getSetCookie().find((c) => c.startsWith('lang='));
    expect(cookie).toMatch(/^lang=zh-CN; Max-Age=31536000; Path=\/; HttpOnly; SameSite=Lax$/);
    const later = await fetch(`${server.api.base}/docs`, { headers: { cookie: 'lang=zh-CN', 'accept-language': 'en' } });
    expect(await later.text()).toContain('<title>API 文档 · blockfeed</title>');
    // A visitor who reads a public page gets no session (nothing stored for them).
    expect(switched.headers.getSetCookie().some((c) => c.startsWith('blockfeed_session='))).toBe(false);
  });

  it('documents the API by its two APIs, and how errors look once', async () => {
    for (const [lang, headings] of [
      ['en', ['The token API: /api/honeypot/', 'The key API: /api/']],
      ['zh-CN', ['令牌 API：/api/honeypot/', '密钥 API：/api/']],
    ] as const) {
      const page = await (await fetch(`${server.api.base}/docs?lang=${lang}`)).text();
      const h2 = [...page.matchAll(/<h2 id="group-[^"]*">([^<]*)<\/h2>/g)].map((m) => m[1]);
      expect(h2, lang).toEqual(headings);
      expect(page.match(/RFC 9457/g), lang).toHaveLength(1);
      expect(page, lang).not.toMatch(/variant/i);
    }
  });

  it('sends visitors of members’ pages to sign in, and back afterwards', async () => {
    for (const path of ['/account', '/account/download', '/account/keys', '/account/download/basic-blocklist.txt?hours=24']) {
      const res = await fetch(`${server.api.base}${path}`, { redirect: 'manual' });
      expect(res.status).toBe(303);
      expect(res.headers.get('location')).toBe(`/sign-in?next=${encodeURIComponent(path.split('?')[0] ?? '')}`);
    }
  });

  it('refuses an oversized form field before anything else runs', async () => {
    const form = await fetch(`${server.api.base}/sign-in`);
    const cookie = form.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
    const res = await fetch(`${server.api.base}/sign-in`, {
      method: 'POST',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ _csrf: csrf, email: `${'a'.repeat(2000)}@example.org`, password: 'x' }).toString(),
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('Request not understood');
  });
});

describe('website without its store', () => {
  it('starts, and answers pages with 503 until the store is back', async () => {
    const down = await startApi('postgres://nobody:x@127.0.0.1:1/none');
    try {
      const res = await fetch(`${down.base}/`, { headers: HTML });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(await res.text()).toContain('The service is unavailable for a moment.');
    } finally {
      await down.close();
    }
  });
});
