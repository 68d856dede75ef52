// The feed builder: form values → the filters the CRD holds → the URL the controller would pull, the curl
// line and the manifests; and the manifests are what the CRD schema accepts.
import { describe, expect, it } from 'vitest';
import { Value } from 'typebox/value';
import { parseAllDocuments } from 'yaml';
import { LIST_ENDPOINTS, LIST_FILTERS, filtersOf, listUrl } from '../../../../common/list-filters.ts';
import { BlocklistSubscriptionSpec } from '../../../../api/v1alpha1/blocklist-subscription.ts';
import { feedChoice, feedSnippets, MANIFEST } from '../../../../api-server/website/feeds.ts';

const BASE = 'https://blocklists.example.org';

function manifests(yaml: string) {
  return parseAllDocuments(yaml).map((d) => d.toJS() as { kind: string; metadata: { name: string }; spec?: unknown; stringData?: Record<string, string> });
}

describe('feedChoice', () => {
  it('keeps the filters that differ from the API defaults, in the CRD form', () => {
    const { choice, problems, form } = feedChoice({
      endpoint: 'export', type: 'attacker', source: 'all', level: 'high', hours: '168', precision: 'standard',
      net: '', isp: '电信', province: '广东', include_research: '1', lang: 'zh-CN', format: 'csv',
    });
    expect(problems).toEqual([]);
    expect(choice).toEqual({ endpoint: 'export', filters: { type: 'attacker', level: 'high', hours: 168, isp: '电信', province: '广东', includeResearch: true } });
    // The form shows every value it was given, defaults included.
    expect(form).toMatchObject({ source: 'all', precision: 'standard', hours: '168' });
  });

  it('ignores filters the endpoint does not take, reports values the API would refuse', () => {
    const { choice, problems } = feedChoice({ endpoint: 'scan-export', type: 'attacker', level: 'severe', hours: '9999', include_scan: '0' });
    expect(choice).toEqual({ endpoint: 'scan-export', filters: {} });
    expect(problems.map((p) => p.name)).toEqual(['level', 'hours']);
    expect(problems[0]?.allowed).toBe('one of: all, medium, high, critical');
    expect(problems[1]?.allowed).toBe('an integer from 1 to 720');
  });

  it('defaults to the export without filters', () => {
    expect(feedChoice({}).choice).toEqual({ endpoint: 'export', filters: {} });
    expect(feedChoice({ endpoint: 'everything' }).choice.endpoint).toBe('export');
  });
});

describe('feedSnippets', () => {
  it('shows the URL the controller pulls for the manifests it shows, for every filter of every endpoint', () => {
    for (const endpoint of LIST_ENDPOINTS) {
      const query: Record<string, string> = { endpoint };
      for (const name of filtersOf(endpoint)) {
        const values = LIST_FILTERS[name].values;
        // A value other than the default, so that each filter shows up.
        query[LIST_FILTERS[name].param] = values.kind === 'hours' ? '48' : values.kind === 'switch' ? String(1 - values.default) : (values.values[values.values.length - 1] ?? '');
      }
      const { choice, problems } = feedChoice(query);
      expect(problems).toEqual([]);
      expect(Object.keys(choice.filters).sort()).toEqual([...filtersOf(endpoint)].sort());
      const { url, yaml } = feedSnippets(choice, BASE);
      const [secret, subscription] = manifests(yaml);
      expect(secret?.kind).toBe('Secret');
      expect(subscription?.kind).toBe('BlocklistSubscription');
      const spec = Value.Default(BlocklistSubscriptionSpec, structuredClone(subscription?.spec));
      expect(Value.Errors(BlocklistSubscriptionSpec, spec)).toEqual([]);
      expect(listUrl((spec as BlocklistSubscriptionSpec).feed).toString()).toBe(url);
      expect(url.startsWith(`${BASE}/api/${endpoint}?`)).toBe(true);
    }
  });

  it('leaves defaults to the CRD and the Secret to the user, unless a key is given', () => {
    const { url, curl, yaml } = feedSnippets({ endpoint: 'dedup', filters: {} }, BASE);
    expect(url).toBe(`${BASE}/api/dedup?format=txt`);
    expect(curl).toBe(`curl -fsS -H "X-API-Key: $BLOCKFEED_KEY" '${url}'`);
    const [secret, subscription] = manifests(yaml);
    expect(secret?.metadata.name).toBe(MANIFEST.secretName);
    expect(secret?.stringData).toEqual({ apiKey: 'REPLACE-WITH-YOUR-API-KEY' });
    expect(subscription?.spec).toEqual({
      feed: { url: BASE, endpoint: 'dedup', credentials: { secretRef: { name: 'blockfeed-key', key: 'apiKey' } } },
      targets: [{ networkPolicy: { namespaceSelector: { matchLabels: { 'blockfeed.dev/protect': 'true' } } } }],
    });

    const key = 'bf_abcdefgh_0123456789abcdefghijklmnopqrstuv';
    const withKey = feedSnippets({ endpoint: 'dedup', filters: {} }, BASE, key);
    expect(withKey.curl).toBe(`curl -fsS -H 'X-API-Key: ${key}' '${url}'`);
    expect(manifests(withKey.yaml)[0]?.stringData).toEqual({ apiKey: key });
  });

  it('quotes the URL for the shell whatever it holds', () => {
    const { curl } = feedSnippets({ endpoint: 'dedup', filters: {} }, "https://it's.example.org");
    expect(curl.endsWith(`'https://it'\\''s.example.org/api/dedup?format=txt'`)).toBe(true);
  });
});
