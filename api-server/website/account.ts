// The member's account: address, tier and what it gives, and the password change (which ends every other
// session of the member and rotates this one).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import { PASSWORD_MIN_LENGTH, hashPassword, passwordMatches } from '../members/passwords.ts';
import { changePassword, findCredentials } from '../members/store.ts';
import { sendPage } from './pages.ts';
import { csrfCheck, FormText, memberOf, newPasswordErrors, PasswordText, requireMember, type SiteDeps } from './site.ts';
import { admitPasswordCheck, minutesOf, passwordCheckSucceeded } from './throttle.ts';

const PasswordForm = Type.Object({ _csrf: FormText(200), current: PasswordText, password: PasswordText, confirm: PasswordText });

export async function accountRoutes(fastify: FastifyInstance, { pool, tiers, clock }: SiteDeps): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const checkCsrf = csrfCheck(fastify);

  function accountPage(req: FastifyRequest, reply: FastifyReply, status: number, view: { errors?: Record<string, string>; notice?: string }) {
    const member = memberOf(req);
    const { locale } = req.visit;
    return sendPage(reply, 'account', req.visit, { status, title: locale.t.account.title }, {
      errors: {},
      notice: undefined,
      ...view,
      tierName: locale.tier(member.tier),
      quota: locale.quota(tiers.get(member.tier)),
      minLength: PASSWORD_MIN_LENGTH,
    });
  }

  app.get('/account', { preHandler: requireMember }, (req, reply) => accountPage(req, reply, 200, {}));

  app.post('/account/password', { schema: { body: PasswordForm }, preHandler: [requireMember, checkCsrf] }, async (req, reply) => {
    const member = memberOf(req);
    const { t } = req.visit.locale;
    const password = req.body.password ?? '';
    const errors = newPasswordErrors(password, req.body.confirm, t);
    // The current password can be guessed here (a session left open is enough to try): a throttle of its own
    // counts these attempts, so that they cannot lock the owner out of signing in either.
    const wait = await admitPasswordCheck(pool, member.email, clock());
    if (wait > 0) return accountPage(req, reply.header('retry-after', String(wait)), 429, { errors: { current: t.signIn.throttled(minutesOf(wait)) } });
    const stored = await findCredentials(pool, member.email);
    if (!stored || !(await passwordMatches(stored.passwordHash, req.body.current ?? ''))) errors.current = t.problems.currentPassword;
    if (Object.keys(errors).length) return accountPage(req, reply, 400, { errors });
    await passwordCheckSucceeded(pool, member.email, clock());
    // A new session id too: whoever held the old one (and every other session) is signed out.
    await req.session.regenerate(['memberId']);
    await changePassword(pool, member.id, await hashPassword(password), req.session.sessionId);
    req.visit = { ...req.visit, csrf: reply.csrfToken() };
    return accountPage(req, reply, 200, { notice: t.account.changed });
  });
}
