// The download page: the basic blocklist as a file for every member (through the session: members have no
// API access), and for subscribed tiers the feed builder (feeds.ts): URL, curl line and manifests.
import type { FastifyInstance } from 'fastify';
import { LIST_ENDPOINTS, LIST_FILTERS, filtersOf, type FilterName } from '../../common/list-filters.ts';
import { HoneypotDedupParams } from '../query/endpoint-params.ts';
import { parseQuery } from '../query/validate-query.ts';
import { dedupFilter, listInstant } from '../query/lists.ts';
import { openListSource } from '../query/list-source.ts';
import { readListBody } from '../render/list-body.ts';
import { feedChoice, feedSnippets } from './feeds.ts';
import type { Locale } from './i18n.ts';
import { sendMessage, sendPage } from './pages.ts';
import { isSubscribed, memberOf, requireMember, siteBase, type SiteDeps } from './site.ts';

/** The windows the basic list is offered for (its API serves 1 to 168 hours). */
const BASIC_WINDOWS = [24, 72, 168] as const;

export const BASIC_LIST_PATH = '/account/download/basic-blocklist.txt';

/** One form control per filter of the endpoint, its options labelled in the page's language. */
function filterControls(endpoint: (typeof LIST_ENDPOINTS)[number], values: Partial<Record<FilterName, string>>, locale: Locale) {
  const { t } = locale;
  return filtersOf(endpoint).map((name) => {
    const spec = LIST_FILTERS[name];
    const label = t.filters[name];
    const value = values[name] ?? '';
    if (spec.values.kind === 'hours') return { name, param: spec.param, label, kind: 'number' as const, value, placeholder: String(spec.values.default) };
    const options =
      spec.values.kind === 'switch'
        ? [
            { value: '1', label: t.download.yes },
            { value: '0', label: t.download.no },
          ]
        : spec.values.values.map((v) => ({ value: v, label: optionLabel(name, v, locale) }));
    // Filters without an API default (net, isp, province) start at "any".
    const any = 'default' in spec.values ? [] : [{ value: '', label: t.download.any }];
    const chosen = value || ('default' in spec.values ? String(spec.values.default) : '');
    return { name, param: spec.param, label, kind: 'select' as const, value: chosen, options: [...any, ...options] };
  });
}

function optionLabel(name: FilterName, value: string, locale: Locale): string {
  if (value === 'all') return locale.t.download.any;
  if (name === 'province') return locale.province(value);
  if (name === 'isp') return locale.carrier(value);
  return value;
}

export async function downloadRoutes(app: FastifyInstance, { pool, readPool, log, tiers, siteUrl, clock }: SiteDeps): Promise<void> {
  app.get('/account/download', { preHandler: requireMember }, async (req, reply) => {
    const member = memberOf(req);
    const { locale } = req.visit;
    const subscribed = isSubscribed(tiers, member.tier);
    const { choice, form, problems } = feedChoice(req.query as Record<string, unknown>);
    return sendPage(reply, 'download', req.visit, { title: locale.t.download.title }, {
      basicPath: BASIC_LIST_PATH,
      basicWindows: BASIC_WINDOWS,
      subscribed,
      endpoints: LIST_ENDPOINTS,
      endpoint: choice.endpoint,
      controls: filterControls(choice.endpoint, form, locale),
      problems,
      feed: subscribed ? feedSnippets(choice, siteBase({ siteUrl }, req)) : undefined,
    });
  });

  // The basic list as a file: the list of /api/honeypot/dedup for the window, by the member's session.
  app.get(BASIC_LIST_PATH, { preHandler: requireMember }, async (req, reply) => {
    const { hours } = req.query as { hours?: unknown };
    const parsed = parseQuery(HoneypotDedupParams, hours === undefined ? {} : { hours });
    if (!parsed.ok) {
      const { t } = req.visit.locale;
      return sendMessage(reply, req.visit, 400, t.errors.badRequestTitle, parsed.problems.map((p) => `${p.name}: ${p.reason}; allowed: ${p.allowed}`).join('; '));
    }
    const window = parsed.value.hours as number;
    // The same instant and snapshot as /api/honeypot/dedup takes for this minute: the same lines.
    const now = listInstant(clock());
    const snapshot = await openListSource({ pool, readPool }, log);
    const list = await readListBody(snapshot, { filter: dedupFilter({ hours: window }, now), format: 'txt', generatedAt: now, windowHours: window, count: false });
    return reply
      .type('text/plain; charset=utf-8')
      .header('content-disposition', `attachment; filename="blockfeed-basic-${window}h-${now.toISOString().slice(0, 10)}.txt"`)
      .header('cache-control', 'no-store')
      .send(list.body);
  });
}
