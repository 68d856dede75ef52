// The download page's feed builder (pure): a list and its filters, as the form sends them, become the feed
// URL, a curl line and the manifests of a BlocklistSubscription and its Secret. Everything derives from the
// one table of list filters (common/list-filters.ts): the form's values are validated by the API's own query
// schemas, the YAML holds the filters as the CRD does, and the URL is built from that YAML's feed as the
// controller builds it (listUrl), so the three can never disagree with each other or with the API. The
// manifests are the CRD's own types (api/v1alpha1/): the published contract, not the controller's code.
import { stringify } from 'yaml';
import { LIST_ENDPOINTS, LIST_FILTERS, filtersOf, listUrl, type FilterName, type FilterSetting, type ListEndpoint } from '../../common/list-filters.ts';
import type { BlocklistSubscriptionSpec } from '../../api/v1alpha1/blocklist-subscription.ts';
import { API_VERSION, KIND } from '../../api/v1alpha1/blocklist-subscription.ts';
import { DedupParams, ExportParams, ScanExportParams } from '../query/endpoint-params.ts';
import { parseQuery, type ParamProblem } from '../query/validate-query.ts';

const QUERY_SCHEMAS = { dedup: DedupParams, export: ExportParams, 'scan-export': ScanExportParams } as const;

export interface FeedChoice {
  endpoint: ListEndpoint;
  /** The filters that differ from the API's defaults, as the CRD holds them. */
  filters: Partial<Record<FilterName, FilterSetting>>;
}

/** The form's value of each filter of an endpoint ('' = the API's default or "any"). */
export type FormValues = Partial<Record<FilterName, string>>;

function isEndpoint(value: unknown): value is ListEndpoint {
  return typeof value === 'string' && (LIST_ENDPOINTS as readonly string[]).includes(value);
}

/**
 * The feed a builder query asks for (default: the export). Values the API would refuse are left out and
 * reported; parameters that are not filters of the endpoint are ignored.
 */
export function feedChoice(query: Record<string, unknown>): { choice: FeedChoice; form: FormValues; problems: ParamProblem[] } {
  const endpoint = isEndpoint(query.endpoint) ? query.endpoint : 'export';
  const filters: FeedChoice['filters'] = {};
  const form: FormValues = {};
  const problems: ParamProblem[] = [];
  for (const name of filtersOf(endpoint)) {
    const spec = LIST_FILTERS[name];
    const raw = query[spec.param];
    if (raw === undefined || raw === '') continue;
    const parsed = parseQuery(QUERY_SCHEMAS[endpoint], { [spec.param]: raw });
    if (!parsed.ok) {
      problems.push(...parsed.problems);
      continue;
    }
    const value = parsed.value[spec.param];
    form[name] = String(value);
    const fallback = 'default' in spec.values ? spec.values.default : undefined;
    if (value === fallback) continue;
    filters[name] = spec.values.kind === 'switch' ? value === 1 : (value as string | number);
  }
  return { choice: { endpoint, filters }, form, problems };
}

/** Names used in the generated manifests. */
export const MANIFEST = { namespace: 'blockfeed', secretName: 'blockfeed-key', secretKey: 'apiKey' } as const;

/** A subscription's spec as a user writes it: what the CRD defaults (safety, sync times) is left to it. */
export interface SubscriptionInput {
  feed: BlocklistSubscriptionSpec['feed'];
  targets: { networkPolicy: { namespaceSelector: { matchLabels: Record<string, string> } } }[];
}

/** The spec of a subscription pulling this feed from `base` with the key of the generated Secret. */
export function subscriptionSpec(choice: FeedChoice, base: string): SubscriptionInput {
  return {
    feed: {
      url: base,
      endpoint: choice.endpoint,
      ...(Object.keys(choice.filters).length ? { filters: choice.filters } : {}),
      credentials: { secretRef: { name: MANIFEST.secretName, key: MANIFEST.secretKey } },
    },
    // Only namespaces that ask for it are protected: label one with blockfeed.dev/protect=true.
    targets: [{ networkPolicy: { namespaceSelector: { matchLabels: { 'blockfeed.dev/protect': 'true' } } } }],
  };
}

export interface FeedSnippets {
  url: string;
  curl: string;
  yaml: string;
}

/** Single-quoted for a POSIX shell, whatever the text holds. */
function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** The feed URL, a curl line and the manifests; `key` fills the Secret and the curl line in (else placeholders). */
export function feedSnippets(choice: FeedChoice, base: string, key?: string): FeedSnippets {
  const spec = subscriptionSpec(choice, base);
  const url = listUrl(spec.feed).toString();
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: MANIFEST.secretName, namespace: MANIFEST.namespace },
    type: 'Opaque',
    stringData: { [MANIFEST.secretKey]: key ?? 'REPLACE-WITH-YOUR-API-KEY' },
  };
  const subscription = {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: `blockfeed-${choice.endpoint}`, namespace: MANIFEST.namespace },
    spec,
  };
  return {
    url,
    curl: `curl -fsS -H ${key ? shellQuote(`X-API-Key: ${key}`) : '"X-API-Key: $BLOCKFEED_KEY"'} ${shellQuote(url)}`,
    yaml: [secret, subscription].map((doc) => stringify(doc, { lineWidth: 0 })).join('---\n'),
  };
}
