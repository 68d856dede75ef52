// One LISTEN connection per server for every channel it follows (key revocations, the list data version):
// PostgreSQL's NOTIFY reaches every replica that listens. The connection is taken from the pool and held; if
// it is lost, each channel is told (a notice may have been missed while nobody listened) and it reconnects
// after `retryMs`, telling each channel again once it listens.
import type pg from 'pg';
import type { Logger } from '../../common/logging.ts';

export interface ChannelHandler {
  /** A NOTIFY on the channel, with its payload. */
  notified(payload: string): void;
  /**
   * Notices may have been missed: `listening` once LISTEN is in place (the first time and after every
   * reconnection), `lost` when the connection went away.
   */
  resync(why: 'listening' | 'lost'): void;
}

export class StoreListener {
  readonly #pool: pg.Pool;
  readonly #log: Logger;
  readonly #retryMs: number;
  readonly #channels = new Map<string, ChannelHandler>();
  #client: pg.PoolClient | undefined;
  #retry: NodeJS.Timeout | undefined;
  #closed = false;
  #started: Promise<void> | undefined;
  #listening = false;

  constructor(pool: pg.Pool, log: Logger, retryMs = 5000) {
    this.#pool = pool;
    this.#log = log;
    this.#retryMs = retryMs;
  }

  /** Follows a channel; every channel is named before start(). Channel names are identifiers of ours, never input. */
  listen(channel: string, handler: ChannelHandler): void {
    if (this.#started) throw new Error(`listen(${channel}) after start(): every channel is named before the connection is made`);
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`channel name ${channel} is not a plain identifier`);
    this.#channels.set(channel, handler);
  }

  /** Connects and listens; settles once the first attempt has finished, so a server is not ready before it listens. */
  start(): Promise<void> {
    this.#started ??= this.#connect();
    return this.#started;
  }

  /** Whether LISTEN is in place now. */
  get listening(): boolean {
    return this.#listening;
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#retry);
    const client = this.#client;
    this.#client = undefined;
    this.#listening = false;
    // Dropping the connection ends the LISTEN; no round trip needed on the way out.
    client?.release(true);
  }

  /** The connection `client` (undefined: the attempt to make one) failed; anything but the current one is old news. */
  #lost(client: pg.PoolClient | undefined, err: Error): void {
    if (this.#closed || client !== this.#client) return;
    this.#log.warn({ err: { message: err.message } }, 'the store listener lost its connection; reconnecting');
    this.#client = undefined;
    client?.release(true);
    this.#listening = false;
    for (const handler of this.#channels.values()) handler.resync('lost');
    clearTimeout(this.#retry);
    this.#retry = setTimeout(() => void this.#connect(), this.#retryMs);
    this.#retry.unref();
  }

  async #connect(): Promise<void> {
    let client: pg.PoolClient | undefined;
    try {
      client = await this.#pool.connect();
      if (this.#closed) return client.release();
      // Held from here on, so close() releases it even while LISTEN is still on its way.
      this.#client = client;
      const held = client;
      held.on('notification', (n) => this.#channels.get(n.channel)?.notified(n.payload ?? ''));
      held.on('error', (err) => this.#lost(held, err));
      held.on('end', () => this.#lost(held, new Error('connection ended')));
      await held.query([...this.#channels.keys()].map((c) => `listen ${c};`).join('\n'));
      this.#listening = true;
      for (const handler of this.#channels.values()) handler.resync('listening');
    } catch (err) {
      this.#lost(client, err as Error);
    }
  }
}
