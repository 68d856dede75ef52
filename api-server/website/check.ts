// The public "Check an address" page and the removal request form (docs/website.md "Checking an address").
// The page runs the API's own check (query/check.ts: the lists' predicates on one address) and says the answer
// in words; for a listed address it links to the form. A removal request is stored (exclusions/store.ts, within
// its caps) and acknowledged, on the page and by mail when SMTP is configured; nothing leaves a list until the
// operator approves it (`blockfeed removals approve`). Both are throttled per client network in the store's
// rate counters, like sign-in and sign-up (throttle.ts).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import { REMOVAL_REQUEST_CAPS, requestRemoval } from '../exclusions/store.ts';
import { isEmailAddress, normalizeEmail } from '../members/store.ts';
import { checkAddress, CHECK_WINDOWS, type AddressCheck } from '../query/check.ts';
import { listInstant } from '../query/lists.ts';
import { parseAddressOrNetwork } from '../store/networks.ts';
import { clientSubject } from '../store/rate-counters.ts';
import type { Locale } from './i18n.ts';
import { sendMessage, sendPage } from './pages.ts';
import { csrfCheck, FormText, siteBase, type SiteDeps } from './site.ts';
import { admitCheck, admitRemovalRequest, minutesOf } from './throttle.ts';

export const CHECK_PATH = '/check';
export const REMOVAL_PATH = '/check/removal';

/** The longest reason a request keeps (in characters); the form field takes a little more, to say so in words. */
export const REASON_MAX_LENGTH = 1000;

const RemovalForm = Type.Object({ _csrf: FormText(200), email: FormText(1000), network: FormText(200), reason: FormText(4 * REASON_MAX_LENGTH) });

interface Cell {
  text: string;
  /** true: listed; false: not listed; null: the list does not offer this window. */
  listed: boolean | null;
}

interface Fact {
  term: string;
  detail: string;
}

/** The check's answer as the page says it (pure): a verdict, the table of lists and windows, and the why. */
export function checkView(c: AddressCheck, locale: Locale) {
  const { t } = locale;
  const ct = t.check;
  const time = (at: Date) => locale.time(at);
  let verdict: string;
  if (c.excluded) verdict = c.excluded.until ? ct.excludedUntil(time(c.excluded.since), time(c.excluded.until)) : ct.excluded(time(c.excluded.since));
  else if (c.neverBlock) verdict = ct.neverBlock;
  else if (c.listed) verdict = ct.listed(c.lists.filter((l) => l.listed).length, c.lists.length);
  else if (c.facts) verdict = ct.seenNotListed(time(c.facts.lastSeen));
  else verdict = ct.notSeen;

  const rowLabel = (list: string, type?: string) =>
    list !== 'export' ? (t.download.endpoints[list] ?? list) : type === undefined || type === 'all' ? ct.exportAll : ct.exportType(type);
  const rows = new Map<string, { label: string; cells: Cell[] }>();
  for (const l of c.lists) {
    const key = `${l.list}:${l.type ?? ''}`;
    let row = rows.get(key);
    if (!row) rows.set(key, (row = { label: rowLabel(l.list, l.type), cells: CHECK_WINDOWS.map(() => ({ text: ct.notOffered, listed: null })) }));
    row.cells[CHECK_WINDOWS.indexOf(l.hours as (typeof CHECK_WINDOWS)[number])] = { text: l.listed ? ct.inList : ct.notInList, listed: l.listed };
  }

  const why: Fact[] = [];
  const where: Fact[] = [];
  const classes: Fact[] = [];
  const f = c.facts;
  if (f) {
    why.push({ term: ct.firstSeen, detail: time(f.firstSeen) }, { term: ct.lastSeen, detail: time(f.lastSeen) });
    why.push({ term: ct.seenBy, detail: f.sources.map((s) => ct.lastAt(ct.sources[s.source] ?? s.source, time(s.lastSeen))).join('; ') });
    if (f.services.length) why.push({ term: ct.services, detail: f.services.map((s) => ct.lastAt(s.service, time(s.lastSeen))).join('; ') });
    if (f.lastCommand) why.push({ term: ct.lastCommand, detail: time(f.lastCommand) });
    if (f.lastAuthentication) why.push({ term: ct.lastAuthentication, detail: time(f.lastAuthentication) });
    const latest = f.sightings[0];
    if (latest) why.push({ term: ct.sightings, detail: ct.sightingsText(f.sightings.length, time(latest)) });
    if (f.confirmedAt) why.push({ term: ct.confirmed, detail: time(f.confirmedAt) });
    for (const w of f.windows) {
      const detail =
        w.seen && w.type && w.level && w.precision
          ? ct.windowClass(ct.types[w.type] ?? w.type, ct.levels[w.level] ?? w.level, ct.precisions[w.precision] ?? w.precision)
          : ct.notSeenInWindow;
      classes.push({ term: ct.windows[w.hours] ?? String(w.hours), detail });
    }
    if (f.country) where.push({ term: ct.country, detail: locale.country(f.country) });
    if (f.province) where.push({ term: ct.province, detail: locale.province(f.province) });
    if (f.carrier || f.isp) where.push({ term: ct.carrier, detail: f.isp ? locale.carrier(f.isp) : (f.carrier ?? '') });
    if (f.asn !== null) where.push({ term: ct.asn, detail: f.asName ? `AS${f.asn} ${f.asName}` : `AS${f.asn}` });
    if (f.net) where.push({ term: ct.net, detail: ct.nets[f.net] ?? f.net });
    where.push({
      term: ct.researchScanner,
      detail: f.scanner?.kind === 'research_scanner' ? ct.scanner(ct.yes, f.scanner.org ?? ct.none) : f.scanner ? ct.scanner(ct.no, ct.types[f.scanner.kind] ?? f.scanner.kind) : ct.no,
    });
  }
  return {
    ip: c.ip,
    verdict,
    listed: c.listed,
    excludedOnRequest: c.excluded?.source === 'removal-request',
    removalLink: c.listed && !c.excluded ? `${REMOVAL_PATH}?network=${encodeURIComponent(c.ip)}` : undefined,
    windows: CHECK_WINDOWS.map((h) => ct.windows[h] ?? String(h)),
    rows: [...rows.values()],
    why,
    classes,
    where,
  };
}

/** The typed address as the page reads it: one address, or why not. */
function addressAsked(text: string, locale: Locale): { ip: string } | { error: string } {
  const parsed = parseAddressOrNetwork(text.trim());
  if (!parsed.ok) return { error: locale.t.check.notAnAddress };
  if (parsed.network.address === undefined) return { error: locale.t.check.isNetwork };
  return { ip: parsed.network.address };
}

export async function checkRoutes(fastify: FastifyInstance, deps: SiteDeps): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const checkCsrf = csrfCheck(fastify);
  const { pool, clock } = deps;

  app.get(CHECK_PATH, async (req, reply) => {
    const { locale } = req.visit;
    const asked = (req.query as { ip?: unknown }).ip;
    const typed = typeof asked === 'string' ? asked.slice(0, 200) : '';
    const page = (status: number, view: { error?: string; result?: ReturnType<typeof checkView> }) =>
      sendPage(reply, 'check', req.visit, { status, title: locale.t.check.title }, { typed, error: undefined, result: undefined, ...view });
    if (!typed.trim()) return page(200, {});
    // Every address asked counts, before it is looked at: one network cannot walk the store.
    const wait = await admitCheck(pool, req.ip, clock());
    if (wait > 0) {
      reply.header('retry-after', String(wait));
      return page(429, { error: locale.t.check.throttled(minutesOf(wait)) });
    }
    const address = addressAsked(typed, locale);
    if ('error' in address) return page(400, { error: address.error });
    const result = await checkAddress(pool, address.ip, listInstant(clock()));
    return page(200, { result: checkView(result, locale) });
  });

  function removalForm(req: FastifyRequest, reply: FastifyReply, status: number, values: { email: string; network: string; reason: string }, errors: Record<string, string>) {
    const visit = { ...req.visit, csrf: reply.csrfToken() };
    return sendPage(reply, 'removal', visit, { status, title: visit.locale.t.removal.title }, { ...values, errors, reasonMax: REASON_MAX_LENGTH });
  }

  app.get(REMOVAL_PATH, async (req, reply) => {
    const network = (req.query as { network?: unknown }).network;
    return removalForm(req, reply, 200, { email: '', network: typeof network === 'string' ? network.slice(0, 200) : '', reason: '' }, {});
  });

  app.post(REMOVAL_PATH, { schema: { body: RemovalForm }, preHandler: checkCsrf }, async (req, reply) => {
    const { locale } = req.visit;
    const { t } = locale;
    const values = { email: normalizeEmail(req.body.email ?? ''), network: (req.body.network ?? '').trim(), reason: (req.body.reason ?? '').trim() };
    const errors: Record<string, string> = {};
    if (!isEmailAddress(values.email)) errors.email = t.problems.email;
    const parsed = parseAddressOrNetwork(values.network);
    if (!parsed.ok) errors.network = t.removal.networkProblem;
    const reasonLength = [...values.reason].length;
    if (reasonLength === 0 || reasonLength > REASON_MAX_LENGTH) errors.reason = t.removal.reasonProblem(REASON_MAX_LENGTH);
    if (!parsed.ok || Object.keys(errors).length) return removalForm(req, reply, 400, values, errors);

    const wait = await admitRemovalRequest(pool, req.ip, clock());
    if (wait > 0) return removalForm(req, reply.header('retry-after', String(wait)), 429, values, { network: t.removal.throttled(minutesOf(wait)) });
    const network = parsed.network.cidr;
    const outcome = await requestRemoval(pool, { email: values.email, network, reason: values.reason, clientNetwork: clientSubject(req.ip), lang: locale.lang });
    switch (outcome.kind) {
      case 'not-seen':
        return removalForm(req, reply, 400, values, { network: t.removal.notSeen });
      case 'excluded':
        return sendMessage(reply, req.visit, 200, t.removal.excludedTitle, t.removal.excluded(outcome.exclusion.network, locale.time(outcome.exclusion.createdAt)));
      case 'pending':
        return sendMessage(reply, req.visit, 200, t.removal.pendingTitle, t.removal.pending(outcome.request.id, outcome.request.network));
      case 'client-cap':
        return sendMessage(reply, req.visit, 429, t.removal.clientCapTitle, t.removal.clientCap(REMOVAL_REQUEST_CAPS.perClientNetwork));
      case 'full':
        reply.header('retry-after', '3600');
        return sendMessage(reply, req.visit, 503, t.removal.fullTitle, t.removal.full);
      case 'created': {
        const { request } = outcome;
        let text = t.removal.created(request.id, request.network);
        if (deps.mailer) {
          // Not the error's message: an SMTP server's refusal usually quotes the recipient's address.
          const sent = await deps.mailer.sendRemovalReceived(values.email, locale, request, `${siteBase(deps, req)}${CHECK_PATH}`).then(
            () => true,
            (err: Error & { code?: unknown; responseCode?: unknown; command?: unknown }) => {
              deps.log.warn({ reqId: req.id, err: { code: err.code, responseCode: err.responseCode, command: err.command } }, 'removal acknowledgement could not be sent');
              return false;
            },
          );
          if (sent) text = `${text} ${t.removal.createdMailed(values.email)}`;
        }
        return sendMessage(reply, req.visit, 200, t.removal.createdTitle, text);
      }
    }
  });
}
