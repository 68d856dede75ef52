// Long polls on the lists (docs/http-api.md "Live lists"): a request with `wait=` whose If-None-Match names
// the current data is held until the data version moves or the wait ends. The server learns of every move
// from PostgreSQL's NOTIFY (migration 0009) on its one listening connection (store/listener.ts), keeps the
// newest version it was told of, and wakes in memory every waiter that holds an older one — on every replica
// at once, each listening to the same database. Nothing about a waiter outlives its request, and the number
// of waiters is bounded per server and per key.
import type pg from 'pg';
import type { Logger } from '../../common/logging.ts';
import { DATA_VERSION_CHANNEL, isNewer, parseDataVersion, readDataVersion, type DataVersion } from '../query/data-version.ts';
import type { StoreListener } from '../store/listener.ts';
import type { ApiMetrics } from './api-metrics.ts';
import { ProblemError } from './problem.ts';

/** How a wait ended: the data moved (to at least `version`), the time was up, the server is closing, or the client left. */
export type WaitOutcome = { kind: 'changed'; version: DataVersion } | { kind: 'timeout' } | { kind: 'closing' } | { kind: 'gone' };

export const WAIT_OUTCOMES = ['changed', 'timeout', 'closing', 'gone', 'refused'] as const;

interface Waiter {
  /** The data version the waiter's list is made of. */
  readonly version: DataVersion;
  /** Whose wait it is (the API key), for the per-key bound. */
  readonly subject: string;
  settle(outcome: WaitOutcome): void;
}

export interface WaitLimits {
  /** Waiters one server holds at most. */
  total: number;
  /** Waiters one key holds at most on one server. */
  perSubject: number;
}

/** The waiters of one server, bounded in number overall and per key. Pure: it holds them, it never wakes them. */
export class WaitingRoom<W extends Pick<Waiter, 'version' | 'subject'>> {
  readonly #limits: WaitLimits;
  readonly #bySubject = new Map<string, Set<W>>();
  #size = 0;

  constructor(limits: WaitLimits) {
    this.#limits = limits;
  }

  get size(): number {
    return this.#size;
  }

  /** Takes a waiter in, or says which bound it would break. */
  admit(waiter: W): 'admitted' | 'full' | 'subject-full' {
    const mine = this.#bySubject.get(waiter.subject);
    if ((mine?.size ?? 0) >= this.#limits.perSubject) return 'subject-full';
    if (this.#size >= this.#limits.total) return 'full';
    if (mine) mine.add(waiter);
    else this.#bySubject.set(waiter.subject, new Set([waiter]));
    this.#size++;
    return 'admitted';
  }

  /** Lets a waiter go; false when it had left already. */
  leave(waiter: W): boolean {
    const mine = this.#bySubject.get(waiter.subject);
    if (!mine?.delete(waiter)) return false;
    if (mine.size === 0) this.#bySubject.delete(waiter.subject);
    this.#size--;
    return true;
  }

  /** Lets go of, and answers, every waiter whose version is older than `latest`. */
  behind(latest: DataVersion): W[] {
    const out: W[] = [];
    for (const mine of this.#bySubject.values()) for (const w of mine) if (isNewer(latest, w.version)) out.push(w);
    for (const w of out) this.leave(w);
    return out;
  }

  /** Lets go of, and answers, every waiter. */
  drain(): W[] {
    const out = [...this.#bySubject.values()].flatMap((mine) => [...mine]);
    this.#bySubject.clear();
    this.#size = 0;
    return out;
  }
}

interface LongPollOptions {
  pool: pg.Pool;
  listener: StoreListener;
  log: Logger;
  limits: WaitLimits;
  metrics: Pick<ApiMetrics, 'longPolls' | 'longPollAnswers'>;
}

export class LongPolls {
  readonly #pool: pg.Pool;
  readonly #log: Logger;
  readonly #limits: WaitLimits;
  readonly #metrics: LongPollOptions['metrics'];
  readonly #room: WaitingRoom<Waiter>;
  /** The newest version this server was told of (notices, and reads when it starts listening). */
  #latest: DataVersion | undefined;
  #closing = false;

  constructor({ pool, listener, log, limits, metrics }: LongPollOptions) {
    this.#pool = pool;
    this.#log = log;
    this.#limits = limits;
    this.#metrics = metrics;
    this.#room = new WaitingRoom(limits);
    for (const outcome of WAIT_OUTCOMES) metrics.longPollAnswers.inc({ outcome }, 0);
    listener.listen(DATA_VERSION_CHANNEL, {
      notified: (payload) => {
        const version = parseDataVersion(payload);
        if (version) this.#learn(version);
        else log.warn({ payload }, 'ignored a data version notice that is not <epoch>:<version>');
      },
      // Once listening (again), what changed meanwhile is read: a notice may have been missed. While the
      // connection is down, waiters stay; they are woken by that read, or their wait ends.
      resync: (why) => {
        if (why === 'listening') void readDataVersion(this.#pool).then((v) => this.#learn(v), (err: Error) => log.warn({ err: { message: err.message } }, 'could not read the data version'));
      },
    });
  }

  /**
   * Holds until the data version moves past `version`, `seconds` pass, the server closes or `gone` fires (the
   * client went away). Refuses (ProblemError) when this server or this key holds as many waits as allowed.
   */
  wait(version: DataVersion, subject: string, seconds: number, gone: AbortSignal): Promise<WaitOutcome> {
    if (this.#closing) return Promise.resolve(this.#count({ kind: 'closing' }));
    // Told of a newer version already (a notice that came in while the version was read).
    if (this.#latest && isNewer(this.#latest, version)) return Promise.resolve(this.#count({ kind: 'changed', version: this.#latest }));
    return new Promise<WaitOutcome>((resolve) => {
      const waiter: Waiter = {
        version,
        subject,
        settle: (outcome) => {
          clearTimeout(timer);
          gone.removeEventListener('abort', onGone);
          this.#metrics.longPolls.set(this.#room.size);
          resolve(this.#count(outcome));
        },
      };
      const admitted = this.#room.admit(waiter);
      if (admitted !== 'admitted') {
        this.#count({ kind: 'refused' });
        throw this.#refusal(admitted);
      }
      this.#metrics.longPolls.set(this.#room.size);
      // Whichever comes first settles the waiter; leave() tells whether it was still waiting.
      const end = (outcome: WaitOutcome) => {
        if (this.#room.leave(waiter)) waiter.settle(outcome);
      };
      const timer = setTimeout(() => end({ kind: 'timeout' }), seconds * 1000);
      const onGone = () => end({ kind: 'gone' });
      gone.addEventListener('abort', onGone);
      if (gone.aborted) onGone();
    });
  }

  /** Answers every waiter (their clients poll again, elsewhere), and every later wait at once. */
  close(): void {
    this.#closing = true;
    for (const w of this.#room.drain()) w.settle({ kind: 'closing' });
  }

  #learn(version: DataVersion): void {
    if (this.#latest && !isNewer(version, this.#latest)) return;
    this.#latest = version;
    const woken = this.#room.behind(version);
    if (woken.length) this.#log.debug({ version: String(version.version), woken: woken.length }, 'the list data changed: waking long polls');
    for (const w of woken) w.settle({ kind: 'changed', version });
  }

  #count<T extends { kind: (typeof WAIT_OUTCOMES)[number] }>(outcome: T): T {
    this.#metrics.longPollAnswers.inc({ outcome: outcome.kind });
    return outcome;
  }

  #refusal(why: 'full' | 'subject-full'): ProblemError {
    return why === 'subject-full'
      ? new ProblemError({
          status: 429,
          slug: 'too-many-waits',
          title: 'Too many long polls for this key',
          detail: `this key already holds ${this.#limits.perSubject} long polls (wait=) on this server, the most it may; let one end first, or poll without wait`,
          retryAfterSeconds: 5,
        })
      : new ProblemError({
          status: 503,
          slug: 'too-many-waits',
          title: 'Too many long polls on this server',
          detail: `this server holds ${this.#limits.total} long polls (wait=), the most it takes; retry shortly, or poll without wait`,
          retryAfterSeconds: 5,
        });
  }
}
