// Sign-up (email verification with SMTP, the operator's approval without), sign-in (throttled, the session
// made new, a device cookie left for the throttle), sign-out (the session ends on the server). No answer
// tells whether an address has an account: sign-up answers alike either way, and sign-in says more than
// "not right" only to the right password. Until sign-in nothing is stored for a visitor (site.ts: the CSRF
// secret is a cookie).
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import Type from 'typebox';
import { PASSWORD_MIN_LENGTH, hashPassword, passwordMatches, verifyAgainstDecoy } from '../members/passwords.ts';
import {
  VERIFICATION_HOURS,
  createMember,
  findCredentials,
  isEmailAddress,
  newVerificationToken,
  normalizeEmail,
  renewVerification,
  verifyEmail,
  type Member,
} from '../members/store.ts';
import type { Locale } from './i18n.ts';
import { sendMessage, sendPage } from './pages.ts';
import { csrfCheck, CsrfForm, DEVICE_COOKIE, FormText, newPasswordErrors, PasswordText, SESSION_COOKIE, siteBase, type SiteDeps } from './site.ts';
import { admitSignIn, admitSignUp, DEVICE_DAYS, deviceOf, minutesOf, newDeviceValue, signInSucceeded, type SignInAttempt } from './throttle.ts';

const SignUpForm = Type.Object({ _csrf: FormText(200), email: FormText(1000), password: PasswordText, confirm: PasswordText });
const SignInForm = Type.Object({ _csrf: FormText(200), email: FormText(1000), password: PasswordText, next: FormText(100) });

/** Where sign-in may send a member on: the member's own pages, nothing else (no open redirect). */
export function safeNext(next: unknown): string | undefined {
  return typeof next === 'string' && /^\/account(\/(download|keys))?$/.test(next) ? next : undefined;
}

export async function signInRoutes(fastify: FastifyInstance, deps: SiteDeps): Promise<void> {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const checkCsrf = csrfCheck(fastify);
  const { pool, clock } = deps;

  function signUpForm(req: FastifyRequest, reply: FastifyReply, status: number, email: string, errors: Record<string, string>) {
    const visit = { ...req.visit, csrf: reply.csrfToken() };
    return sendPage(reply, 'sign-up', visit, { status, title: visit.locale.t.signUp.title }, { email, errors, minLength: PASSWORD_MIN_LENGTH });
  }

  function signInForm(req: FastifyRequest, reply: FastifyReply, status: number, view: { email?: string; failure?: string; notice?: string; next?: string }) {
    const visit = { ...req.visit, csrf: reply.csrfToken() };
    return sendPage(reply, 'sign-in', visit, { status, title: visit.locale.t.signIn.title }, { email: '', failure: undefined, notice: undefined, next: undefined, ...view });
  }

  app.get('/sign-up', async (req, reply) => {
    if (req.visit.member) return reply.redirect('/account', 303);
    return signUpForm(req, reply, 200, '', {});
  });

  app.post('/sign-up', { schema: { body: SignUpForm }, preHandler: checkCsrf }, async (req, reply) => {
    const { t } = req.visit.locale;
    const email = normalizeEmail(req.body.email ?? '');
    const password = req.body.password ?? '';
    const errors = newPasswordErrors(password, req.body.confirm, t);
    if (!isEmailAddress(email)) errors.email = t.problems.email;
    if (Object.keys(errors).length) return signUpForm(req, reply, 400, email, errors);
    const wait = await admitSignUp(pool, req.ip, clock());
    if (wait > 0) return signUpForm(req, reply.header('retry-after', String(wait)), 429, email, { email: t.problems.throttledSignUp(minutesOf(wait)) });

    const passwordHash = await hashPassword(password);
    if (!deps.mailer) {
      await createMember(pool, { email, passwordHash, status: 'pending' });
      return sendMessage(reply, req.visit, 200, t.signUp.pendingTitle, t.signUp.pending);
    }
    const { token, hash } = newVerificationToken();
    const created = await createMember(pool, { email, passwordHash, status: 'unverified', verifyTokenHash: hash });
    // Not the error's message: an SMTP server's refusal usually quotes the recipient's address.
    await sendSignUpMail(deps, req, email, created, token).catch((err: Error & { code?: unknown; responseCode?: unknown; command?: unknown }) =>
      deps.log.warn({ reqId: req.id, err: { code: err.code, responseCode: err.responseCode, command: err.command } }, 'sign-up email could not be sent'),
    );
    return sendMessage(reply, req.visit, 200, t.signUp.sentTitle, t.signUp.sent(email, VERIFICATION_HOURS));
  });

  app.get('/verify', async (req, reply) => {
    const { t } = req.visit.locale;
    const token = (req.query as { token?: unknown }).token;
    const member = typeof token === 'string' && token.length <= 100 ? await verifyEmail(pool, token) : undefined;
    return member ? sendMessage(reply, req.visit, 200, t.verify.title, t.verify.done) : sendMessage(reply, req.visit, 400, t.verify.title, t.verify.failed);
  });

  app.get('/sign-in', async (req, reply) => {
    const query = req.query as { next?: unknown; 'signed-out'?: unknown };
    if (req.visit.member) return reply.redirect(safeNext(query.next) ?? '/account/download', 303);
    const notice = query['signed-out'] !== undefined ? req.visit.locale.t.signIn.signedOut : undefined;
    return signInForm(req, reply, 200, { notice, next: safeNext(query.next) });
  });

  app.post('/sign-in', { schema: { body: SignInForm }, preHandler: checkCsrf }, async (req, reply) => {
    const { t } = req.visit.locale;
    const email = normalizeEmail(req.body.email ?? '');
    const password = req.body.password ?? '';
    const next = safeNext(req.body.next);
    const now = clock();
    const signedDevice = req.unsignCookie(req.cookies[DEVICE_COOKIE] ?? '');
    const attempt: SignInAttempt = { email, address: req.ip, device: signedDevice.valid ? deviceOf(signedDevice.value, email, now) : undefined };
    const wait = await admitSignIn(pool, attempt, now);
    if (wait > 0) return signInForm(req, reply.header('retry-after', String(wait)), 429, { email, failure: t.signIn.throttled(minutesOf(wait)), next });
    const found = await findCredentials(pool, email);
    const matches = found ? await passwordMatches(found.passwordHash, password) : await verifyAgainstDecoy(password);
    if (!found || !matches) return signInForm(req, reply, 400, { email, failure: t.signIn.failed, next });
    const refusal = statusRefusal(found.member, req.visit.locale);
    if (refusal) return signInForm(req, reply, 403, { email, failure: refusal, next });
    await signInSucceeded(pool, attempt, now);
    // A new session id at sign-in: an id planted before it (session fixation) is worth nothing after.
    await req.session.regenerate();
    req.session.memberId = found.member.id;
    // This browser has signed in to the account: a new device cookie lets it past the account's ceiling.
    reply.setCookie(DEVICE_COOKIE, newDeviceValue(email, now), { path: '/', httpOnly: true, sameSite: 'lax', secure: 'auto', signed: true, maxAge: DEVICE_DAYS * 86_400 });
    return reply.redirect(next ?? '/account/download', 303);
  });

  app.post('/sign-out', { schema: { body: CsrfForm }, preHandler: checkCsrf }, async (req, reply) => {
    await req.session.destroy();
    reply.clearCookie(SESSION_COOKIE, { path: '/' });
    return reply.redirect('/sign-in?signed-out', 303);
  });
}

/** Why a member who knows the password still may not sign in, if they may not. */
function statusRefusal(member: Member, { t }: Locale): string | undefined {
  switch (member.status) {
    case 'active':
      return undefined;
    case 'unverified':
      return t.signIn.unverified;
    case 'pending':
      return t.signIn.pending;
    case 'disabled':
      return t.signIn.disabled;
  }
}

/** The verification link to a new account; to an existing one a new link (still unverified) or a note. */
async function sendSignUpMail(deps: SiteDeps, req: FastifyRequest, email: string, created: Member | undefined, token: string): Promise<void> {
  const mailer = deps.mailer;
  if (!mailer) return;
  const base = siteBase(deps, req);
  const verifyLink = `${base}/verify?token=${token}`;
  if (created) return mailer.sendVerification(email, req.visit.locale, verifyLink);
  const existing = await findCredentials(deps.pool, email);
  if (existing?.member.status === 'unverified') {
    const fresh = newVerificationToken();
    await renewVerification(deps.pool, existing.member.id, fresh.hash);
    return mailer.sendVerification(email, req.visit.locale, `${base}/verify?token=${fresh.token}`);
  }
  return mailer.sendAlreadyRegistered(email, req.visit.locale, `${base}/sign-in`);
}
