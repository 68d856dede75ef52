// Sign-in throttling as OWASP advises against both guessing and lock-out: by account and client network
// together, a far higher ceiling per account alone, and a device cookie that lets a browser which signed in
// before through that ceiling. Clients are told apart by X-Forwarded-For from a trusted proxy (the loopback
// address the tests connect from); the throttles' windows follow an injected clock, so no burst straddles two.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIGN_IN_PER_ACCOUNT } from '../../../../api-server/website/throttle.ts';
import { startApi, type TestApi } from '../../../support/api-server.ts';
import { freshDatabase, type TestDatabase } from '../../../support/db.ts';
import { FormClient, PASSWORD, activeMember } from '../../../support/form-client.ts';

const DEVICE_COOKIE = 'blockfeed_device';

let db: TestDatabase;
let api: TestApi;
/** A minute into the current hour: every throttle window (a quarter or a whole hour) has time left. */
let now = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 + 60_000);

beforeAll(async () => {
  db = await freshDatabase();
  api = await startApi(db.url, { trustedProxies: ['127.0.0.1'] }, { clock: () => now });
});
afterAll(async () => {
  await api?.close();
  await db?.drop();
});

/** A browser at `address`, with the sign-in form loaded. */
async function browserAt(address: string): Promise<FormClient> {
  const client = new FormClient(api.base, { 'x-forwarded-for': address });
  await client.get('/sign-in');
  return client;
}

async function signIn(client: FormClient, email: string, password: string): Promise<number> {
  return (await client.post('/sign-in', { email, password })).status;
}

describe('sign-in throttling', () => {
  it('keeps a guesser out without locking the owner out: 200 wrong guesses from one address', async () => {
    await activeMember(db.pool, 'owner@example.org');
    await activeMember(db.pool, 'neighbour@example.org');
    const attacker = await browserAt('203.0.113.66');
    const answers = new Map<number, number>();
    for (let guess = 1; guess <= 200; guess++) {
      const status = await signIn(attacker, 'owner@example.org', `guess number ${guess}`);
      answers.set(status, (answers.get(status) ?? 0) + 1);
    }
    // A few wrong answers, then refusals before any password is checked.
    expect(answers.get(400)).toBeLessThanOrEqual(10);
    expect(answers.get(429)).toBe(200 - (answers.get(400) ?? 0));

    const owner = await browserAt('198.51.100.7');
    expect(await signIn(owner, 'owner@example.org', PASSWORD)).toBe(303);

    // The guesser's address stays throttled: on this account even with the right password, and on others.
    expect(await signIn(attacker, 'owner@example.org', PASSWORD)).toBe(429);
    const refused = await attacker.post('/sign-in', { email: 'neighbour@example.org', password: PASSWORD });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.text).toMatch(/Too many sign-in attempts\. Try again in \d+ minutes?\./);
  });

  it('lets a browser that signed in before through the per-account ceiling, and nobody else', async () => {
    await activeMember(db.pool, 'target@example.org');
    await activeMember(db.pool, 'bystander@example.org');
    const laptop = await browserAt('198.51.100.20');
    expect(await signIn(laptop, 'target@example.org', PASSWORD)).toBe(303);
    expect(laptop.cookie(DEVICE_COOKIE)).toBeDefined();
    await laptop.get('/account');
    expect((await laptop.post('/sign-out', {})).status).toBe(303);
    const neighbour = await browserAt('198.51.100.21');
    expect(await signIn(neighbour, 'bystander@example.org', PASSWORD)).toBe(303);

    // Guesses from many networks, a few from each, until the account's own ceiling refuses them.
    let wrong = 0;
    for (let network = 0, refused = false; !refused; network++) {
      const bot = await browserAt(`10.${Math.floor(network / 250)}.${network % 250}.1`);
      for (let i = 0; i < 3 && !refused; i++) {
        const status = await signIn(bot, 'target@example.org', `guess ${wrong}`);
        if (status === 400) wrong++;
        else refused = status === 429;
      }
    }
    expect(wrong).toBeGreaterThan(SIGN_IN_PER_ACCOUNT.limit - 5);
    expect(wrong).toBeLessThanOrEqual(SIGN_IN_PER_ACCOUNT.limit);
    // A browser without the device cookie is refused now, from anywhere, whatever it types.
    expect(await signIn(await browserAt('192.0.2.50'), 'target@example.org', PASSWORD)).toBe(429);
    // So is one with another account's device cookie, or a forged one.
    const borrowed = await browserAt('192.0.2.51');
    borrowed.setCookie(DEVICE_COOKIE, neighbour.cookie(DEVICE_COOKIE));
    expect(await signIn(borrowed, 'target@example.org', PASSWORD)).toBe(429);
    const forged = await browserAt('192.0.2.52');
    forged.setCookie(DEVICE_COOKIE, (laptop.cookie(DEVICE_COOKIE) ?? '').replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')));
    expect(await signIn(forged, 'target@example.org', PASSWORD)).toBe(429);

    // The owner's laptop, on another network now, signs in at the first try.
    const travelling = await browserAt('192.0.2.53');
    travelling.setCookie(DEVICE_COOKIE, laptop.cookie(DEVICE_COOKIE));
    expect(await signIn(travelling, 'target@example.org', PASSWORD)).toBe(303);
  });

  it('counts a device cookie’s wrong guesses against the device, wherever they come from', async () => {
    await activeMember(db.pool, 'stolen@example.org');
    const phone = await browserAt('198.51.100.30');
    expect(await signIn(phone, 'stolen@example.org', PASSWORD)).toBe(303);
    const device = phone.cookie(DEVICE_COOKIE);
    const answers: number[] = [];
    for (let guess = 0; guess < 8; guess++) {
      const thief = await browserAt(`172.16.${guess}.9`);
      thief.setCookie(DEVICE_COOKIE, device);
      answers.push(await signIn(thief, 'stolen@example.org', `guess ${guess}`));
    }
    expect(answers.slice(-2)).toEqual([429, 429]);
    // Other browsers of the owner are not affected.
    expect(await signIn(await browserAt('198.51.100.31'), 'stolen@example.org', PASSWORD)).toBe(303);
  });

  it('throttles guesses of the current password on the account page without locking the owner out of sign-in', async () => {
    await activeMember(db.pool, 'left-open@example.org');
    const open = await browserAt('198.51.100.40');
    expect(await signIn(open, 'left-open@example.org', PASSWORD)).toBe(303);
    await open.get('/account');
    const change = (current: string) => open.post('/account/password', { current, password: 'a passphrase nobody will guess', confirm: 'a passphrase nobody will guess' });
    const answers: number[] = [];
    for (let guess = 0; guess < 7; guess++) answers.push((await change(`guess ${guess}`)).status);
    expect(answers.slice(0, 5)).toEqual([400, 400, 400, 400, 400]);
    expect(answers.slice(5)).toEqual([429, 429]);
    expect((await change(PASSWORD)).status).toBe(429);

    // The owner, elsewhere and on the same network, still signs in.
    expect(await signIn(await browserAt('198.51.100.41'), 'left-open@example.org', PASSWORD)).toBe(303);
    expect(await signIn(await browserAt('198.51.100.40'), 'left-open@example.org', PASSWORD)).toBe(303);
  });

  it('opens again when the window has passed', async () => {
    await activeMember(db.pool, 'patient@example.org');
    const client = await browserAt('203.0.113.80');
    for (let guess = 0; guess < 6; guess++) await signIn(client, 'patient@example.org', `guess ${guess}`);
    expect(await signIn(client, 'patient@example.org', PASSWORD)).toBe(429);
    now = new Date(now.getTime() + 3_600_000);
    expect(await signIn(client, 'patient@example.org', PASSWORD)).toBe(303);
  });
});
