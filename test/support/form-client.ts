// A browser's part of the website in plain HTTP, for tests that send more requests than Chromium would be
// quick at: a cookie jar, the CSRF token of the last page with a form, and form posts (urlencoded, or any
// body a hostile client may send). Also accounts made directly in the store.
import type pg from 'pg';
import { hashPassword } from '../../api-server/members/passwords.ts';
import { activateMember, createMember, setMemberTier, type Member } from '../../api-server/members/store.ts';

export const PASSWORD = 'correct horse battery staple';

/** An approved account, made in the store. */
export async function activeMember(pool: pg.Pool, email: string, tier = 'member'): Promise<Member> {
  const member = await createMember(pool, { email, passwordHash: await hashPassword(PASSWORD), status: 'pending' });
  if (!member) throw new Error(`${email} exists already`);
  await activateMember(pool, member.id);
  if (tier !== 'member') await setMemberTier(pool, member.id, tier);
  return { ...member, status: 'active', tier };
}

export interface Answer {
  status: number;
  location: string | null;
  text: string;
  headers: Headers;
}

export class FormClient {
  readonly #base: string;
  readonly #headers: Record<string, string>;
  readonly #cookies = new Map<string, string>();
  /** The CSRF token of the last page that had a form. */
  token = '';

  /** `headers` go with every request (an X-Forwarded-For: the client's address behind a trusted proxy). */
  constructor(base: string, headers: Record<string, string> = {}) {
    this.#base = base;
    this.#headers = headers;
  }

  cookie(name: string): string | undefined {
    return this.#cookies.get(name);
  }

  setCookie(name: string, value: string | undefined): void {
    if (value === undefined) this.#cookies.delete(name);
    else this.#cookies.set(name, value);
  }

  async get(path: string, headers: Record<string, string> = {}): Promise<Answer> {
    return this.#send(path, { method: 'GET', headers });
  }

  /** Posts the fields with the last page's token (unless the fields name `_csrf` themselves). */
  async post(path: string, fields: Record<string, string>, headers: Record<string, string> = {}): Promise<Answer> {
    const body = new URLSearchParams({ _csrf: this.token, ...fields }).toString();
    return this.postRaw(path, body, { 'content-type': 'application/x-www-form-urlencoded', ...headers });
  }

  /** Posts a body as it is: bytes no browser sends, another content type. */
  async postRaw(path: string, body: string | Uint8Array, headers: Record<string, string>): Promise<Answer> {
    return this.#send(path, { method: 'POST', headers, body });
  }

  async #send(path: string, init: { method: string; headers: Record<string, string>; body?: string | Uint8Array }): Promise<Answer> {
    const cookie = [...this.#cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const res = await fetch(`${this.#base}${path}`, {
      method: init.method,
      body: init.body,
      redirect: 'manual',
      headers: { accept: 'text/html', ...this.#headers, ...(cookie ? { cookie } : {}), ...init.headers },
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair = '', ...attributes] = line.split(';').map((part) => part.trim());
      const eq = pair.indexOf('=');
      const name = pair.slice(0, eq);
      const value = pair.slice(eq + 1);
      const expired = attributes.some((a) => /^max-age=0$/i.test(a) || /^expires=.*1970/i.test(a));
      this.setCookie(name, expired || value === '' ? undefined : value);
    }
    const text = await res.text();
    const token = /name="_csrf" value="([^"]+)"/.exec(text)?.[1];
    if (token) this.token = token;
    return { status: res.status, location: res.headers.get('location'), text, headers: res.headers };
  }
}
