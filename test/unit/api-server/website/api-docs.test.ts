// The documentation page's reading of an OpenAPI document: operations by tag, who may call them, parameters
// with what they allow and their defaults.
import { describe, expect, it } from 'vitest';
import { apiReference, type OpenApiDocument } from '../../../../api-server/website/api-docs.ts';
import { localeOf } from '../../../../api-server/website/i18n.ts';

const doc: OpenApiDocument = {
  info: { title: 'blockfeed', version: '1' },
  paths: {
    '/api/honeypot/dedup': {
      get: {
        summary: 'Attackers',
        tags: ['Token API'],
        security: [{}, { bearerToken: [] }],
        parameters: [{ in: 'query', name: 'hours', description: 'window', schema: { type: 'integer', minimum: 1, maximum: 168, default: 24 } }],
      },
    },
    '/api/export': {
      get: {
        summary: 'Export',
        tags: ['Key API'],
        security: [{ apiKeyHeader: [] }, { apiKeyQuery: [] }],
        parameters: [{ in: 'query', name: 'net', description: 'network', schema: { enum: ['idc', 'mobile'] } }],
      },
    },
  },
};

describe('apiReference', () => {
  it('groups operations by tag and says what they allow', () => {
    const [a, b] = apiReference(doc, localeOf('en'));
    expect(a?.tag).toBe('Token API');
    expect(a?.heading).toBe('The token API: /api/honeypot/');
    expect(b?.heading).toBe('The key API: /api/');
    expect(a?.operations[0]).toEqual({
      method: 'GET',
      path: '/api/honeypot/dedup',
      summary: 'Attackers',
      anchor: 'get-api-honeypot-dedup',
      credential: 'optional: Authorization: Bearer <key>; without one, anonymous limits apply',
      parameters: [{ name: 'hours', allowed: 'an integer from 1 to 168', default: '24', description: 'window' }],
    });
    expect(b?.operations[0]?.credential).toBe('required: X-API-Key: <key> · key=<key> (temporary use only: query strings end up in logs)');
    expect(b?.operations[0]?.parameters[0]).toEqual({ name: 'net', allowed: 'one of: idc, mobile', default: '—', description: 'network' });
  });

  it('speaks the page’s language around the document’s own words', () => {
    const [a, b] = apiReference(doc, localeOf('zh-CN'));
    expect(a?.heading).toBe('令牌 API：/api/honeypot/');
    expect(b?.operations[0]?.credential).toMatch(/^必需：X-API-Key: <密钥>/);
  });

  it('shows a tag it has no words for as the document names it', () => {
    const [group] = apiReference({ ...doc, paths: { '/x': { get: { tags: ['Other'] } } } }, localeOf('en'));
    expect(group).toMatchObject({ tag: 'Other', heading: 'Other', about: '' });
  });
});
