// The API keys page: a subscribed member's keys (prefix, created, last used, calls today against the tier's
// quota), creating one (its secret shown once, in the answer to the form, never stored or redirected with)
// and revoking one (at once on every server: keys/store.ts announces it). The keys are the API's own
// (keys/store.ts), tagged with their member.
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import Type from 'typebox';
import { createKey, listKeys, revokeKey, type ApiKey } from '../keys/store.ts';
import { QUOTA_WINDOW_SECONDS, quotaBucket } from '../keys/tiers.ts';
import { currentHits } from '../store/rate-counters.ts';
import { feedSnippets } from './feeds.ts';
import { sendMessage, sendPage } from './pages.ts';
import { csrfCheck, CsrfForm, FormText, isSubscribed, memberOf, requireMember, siteBase, type SiteDeps } from './site.ts';

/** Keys an account may have active at once. */
export const MAX_ACTIVE_KEYS = 20;
export const KEY_NAME_MAX_LENGTH = 100;

const CreateForm = Type.Object({ _csrf: FormText(200), name: FormText(4 * KEY_NAME_MAX_LENGTH) });

/** Calls each key made in the current UTC day, from the counters its quota is metered by. */
async function callsToday(pool: pg.Pool, keys: ApiKey[], now: Date): Promise<Map<number, number>> {
  const hits = await currentHits(pool, keys.map((k) => quotaBucket(k.id)), QUOTA_WINDOW_SECONDS, now);
  return new Map(keys.map((k) => [k.id, hits.get(quotaBucket(k.id)) ?? 0]));
}

export async function keysRoutes(fastify: FastifyInstance, deps: SiteDeps): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const checkCsrf = csrfCheck(fastify);
  const { pool, tiers, clock } = deps;

  async function keysPage(req: FastifyRequest, reply: FastifyReply, status: number, view: { created?: { key: string; name: string }; error?: string; notice?: string; name?: string }) {
    const member = memberOf(req);
    const { locale } = req.visit;
    const quota = tiers.get(member.tier);
    const keys = await listKeys(pool, member.id);
    const calls = await callsToday(pool, keys, clock());
    return sendPage(reply, 'keys', req.visit, { status, title: locale.t.keys.title }, {
      created: undefined,
      error: undefined,
      notice: undefined,
      name: '',
      ...view,
      subscribed: isSubscribed(tiers, member.tier),
      tierName: locale.tier(member.tier),
      quotaText: locale.quota(quota),
      keys: keys.map((k) => ({
        ...k,
        calls: quota?.kind === 'daily' ? `${locale.number(calls.get(k.id) ?? 0)} / ${locale.number(quota.calls)}` : locale.t.keys.notMetered,
      })),
      maxNameLength: KEY_NAME_MAX_LENGTH,
      snippets: view.created ? feedSnippets({ endpoint: 'dedup', filters: {} }, siteBase(deps, req), view.created.key) : undefined,
    });
  }

  app.get('/account/keys', { preHandler: requireMember }, async (req, reply) => {
    const revoked = (req.query as { revoked?: unknown }).revoked;
    const member = memberOf(req);
    const key = typeof revoked === 'string' ? (await listKeys(pool, member.id)).find((k) => `bf_${k.prefix}` === revoked && k.revokedAt) : undefined;
    return keysPage(req, reply, 200, { notice: key ? req.visit.locale.t.keys.revokedNotice(key.name) : undefined });
  });

  app.post('/account/keys', { schema: { body: CreateForm }, preHandler: [requireMember, checkCsrf] }, async (req, reply) => {
    const member = memberOf(req);
    const { t } = req.visit.locale;
    if (!isSubscribed(tiers, member.tier)) return sendMessage(reply, req.visit, 403, t.keys.title, t.keys.subscribe);
    const name = (req.body.name ?? '').trim();
    if (!name || [...name].length > KEY_NAME_MAX_LENGTH) return keysPage(req, reply, 400, { error: t.problems.keyName(KEY_NAME_MAX_LENGTH), name });
    const active = (await listKeys(pool, member.id)).filter((k) => !k.revokedAt).length;
    if (active >= MAX_ACTIVE_KEYS) return keysPage(req, reply, 409, { error: t.problems.tooManyKeys(MAX_ACTIVE_KEYS), name });
    const { key, record } = await createKey(pool, member.tier, name, member.id);
    return keysPage(req, reply, 201, { created: { key, name: record.name } });
  });

  // By prefix (the key's public part): a number could be read as either an id or a prefix.
  app.post('/account/keys/:prefix/revoke', {
    schema: { body: CsrfForm, params: Type.Object({ prefix: Type.String({ pattern: '^[a-z0-9]{8}$' }) }) },
    preHandler: [requireMember, checkCsrf],
  }, async (req, reply) => {
    const member = memberOf(req);
    const key = await revokeKey(pool, `bf_${req.params.prefix}`, member.id);
    return reply.redirect(key ? `/account/keys?revoked=bf_${key.prefix}` : '/account/keys', 303);
  });
}
