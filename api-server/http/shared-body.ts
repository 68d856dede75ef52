// One streamed answer shared by every identical request that arrives while it is being made (request
// coalescing, docs/http-api.md "Identical requests"): the first request's list streams from the store into
// it, and each request reads it through a reader of its own. The chunks are the same Buffers for every
// reader, never copied per reader.
//
// - While the body fits a cache entry (`keepBytes`) every chunk is kept: it becomes the cache entry, and a
//   request that joins waits for it whole (a "parked" waiter), to be answered from it like a cache hit.
// - A body that outgrows that is "live": parked waiters start reading from its first byte, later ones may
//   join while that byte is still held, and chunks every reader has passed are let go. The store is read
//   no further ahead of the slowest reader than `windowBytes`; a reader that holds the others up without
//   reading for `stallMs` is cut off (its response ends incomplete, as any list that fails mid-way).
// - A reader that goes away stops reading; when none is left and no one waits, the read is abandoned (the
//   statement cancelled). A failure cuts off the readers and rejects the waiters; nothing is kept.
import { Readable, Writable } from 'node:stream';

export interface SharedBodyOptions<M> {
  /** A body up to this size is kept whole for the cache (0: none is). */
  keepBytes: number;
  /** How far the store is read ahead of the slowest reader of a live body. */
  windowBytes: number;
  /** How long a reader may hold the others up without reading before it is cut off. */
  stallMs: number;
  /** Called with the whole body and its metadata when it completes within keepBytes. */
  keep: (body: Buffer, meta: M) => void;
  /** Called once when the body is done with: complete, failed or abandoned. */
  settled: () => void;
}

/**
 * What a request that joined gets: the whole body (kept), a reader of the live body from its first byte,
 * nothing (its client went away while it waited), or a miss (the body ended, not kept, before it could start
 * reading: it is to make its own).
 */
export type Joined = { kind: 'whole'; body: Buffer } | { kind: 'live'; body: Readable } | { kind: 'gone' } | { kind: 'missed' };

type State = 'streaming' | 'complete' | 'failed';

const EMPTY = Buffer.alloc(0);
/** The code of the error a body abandoned by every request ends its read with (not a failure). */
export const ABANDONED = 'ERR_SHARED_BODY_ABANDONED';
/**
 * Every reader pushes every chunk into its own socket: larger chunks mean fewer writes for the kernel and the
 * stream machinery (200 readers of a 280 MiB list: 16 KiB chunks cost 16 s of system time, 64 KiB 11 s).
 */
const MIN_CHUNK = 64 * 1024;

/** What a reader reads from: the shared body. */
interface ReaderSource {
  feed(reader: SharedReader): void;
  detach(reader: SharedReader): void;
}

class SharedReader extends Readable {
  /** The index of the next chunk to push, counted from the body's first chunk. */
  position = 0;
  /** It asked for more than there was: push on the next chunk. */
  wanting = false;
  readonly #shared: ReaderSource;

  constructor(shared: ReaderSource) {
    super();
    this.#shared = shared;
  }

  override _read(): void {
    this.#shared.feed(this);
  }

  override _destroy(err: Error | null, done: (err?: Error | null) => void): void {
    this.#shared.detach(this);
    done(err);
  }
}

interface Parked {
  resolve: (joined: Joined) => void;
  reject: (err: Error) => void;
}

/** `M`: what the answer's first request makes known before its first byte (its validators and headers). */
export class SharedBody<M> {
  readonly #options: SharedBodyOptions<M>;
  #meta: M | undefined;
  /** Resolves with the answer's metadata once its first request has it; rejects when the body fails first. */
  readonly published: Promise<M>;
  #publish!: (meta: M) => void;
  #failPublished!: (err: Error) => void;
  /** The chunks still held, from #chunks[#head], which is the body's chunk number #first. */
  #chunks: Buffer[] = [];
  #head = 0;
  #first = 0;
  #held = 0;
  #size = 0;
  #state: State = 'streaming';
  #keeping: boolean;
  #error: Error | undefined;
  readonly #readers = new Set<SharedReader>();
  readonly #parked = new Set<Parked>();
  /** Requests that joined and wait for the metadata. */
  #joining = 0;
  /** The first request, making the body, wants it until it takes its reader or lets go. */
  #firstHolds = true;
  /** The whole body, once complete and kept. */
  #whole: Buffer | undefined;
  /** The store's write waiting for the slowest reader (live bodies only). */
  #blocked: (() => void) | undefined;
  #stallTimer: NodeJS.Timeout | undefined;
  #sink: Writable | undefined;

  constructor(options: SharedBodyOptions<M>) {
    this.#options = options;
    this.#keeping = options.keepBytes > 0;
    this.published = new Promise<M>((resolve, reject) => {
      this.#publish = resolve;
      this.#failPublished = reject;
    });
    // Nobody may be waiting for it when it fails.
    this.published.catch(() => undefined);
  }

  /** Makes the answer's metadata known (before its first byte). */
  publish(meta: M): void {
    this.#meta = meta;
    this.#publish(meta);
  }

  /** Whether a new request may still read it from its first byte. */
  get joinable(): boolean {
    return this.#state === 'streaming' && this.#first === 0;
  }

  /** Requests reading or waiting, the first one included until it reads or lets go. */
  get interested(): number {
    return this.#readers.size + this.#parked.size + this.#joining + (this.#firstHolds ? 1 : 0);
  }

  /** Requests besides the first one, reading or waiting. */
  get others(): number {
    return this.interested - (this.#firstHolds ? 1 : 0);
  }

  /** Where the store's bytes go; destroying it (with an error) fails the body. */
  sink(): Writable {
    // Small writes are gathered into chunks of at least MIN_CHUNK: every reader pushes every chunk.
    let small: Buffer[] = [];
    let smallSize = 0;
    const gathered = () => {
      const joined = small.length === 1 ? (small[0] as Buffer) : Buffer.concat(small, smallSize);
      small = [];
      smallSize = 0;
      return joined;
    };
    this.#sink = new Writable({
      write: (chunk: Buffer, _enc, done) => {
        small.push(chunk);
        smallSize += chunk.length;
        if (smallSize < MIN_CHUNK) done();
        else this.#append(gathered(), done);
      },
      final: (done) => {
        const end = () => {
          this.#complete();
          done();
        };
        if (smallSize) this.#append(gathered(), end);
        else end();
      },
      destroy: (err, done) => {
        if (this.#state === 'streaming') this.#fail(err ?? new Error('the list stream ended early'));
        done(err);
      },
    });
    return this.#sink;
  }

  /** The first request's reader, from the first byte, following the body as it grows: its own answer. */
  reader(): Readable {
    const reader = this.#newReader();
    this.#firstHolds = false;
    return reader;
  }

  /**
   * Joins as a later request: while the body is being kept, waits for it whole; once it is live (or
   * outgrows what is kept), a reader from its first byte. Rejects when it fails. `gone` aborts when the
   * request's client goes away.
   */
  async join(gone: AbortSignal): Promise<Joined> {
    // Counted as interested meanwhile, so that the body is not abandoned while this request waits for it.
    this.#joining++;
    try {
      await this.published;
    } finally {
      this.#joining--;
    }
    if (gone.aborted) {
      this.#abandonIfUnwanted();
      return { kind: 'gone' };
    }
    if (this.#state === 'failed') throw this.#error as Error;
    if (this.#state === 'complete') return this.#whole ? { kind: 'whole', body: this.#whole } : { kind: 'missed' };
    if (!this.#keeping) return this.#first === 0 ? { kind: 'live', body: this.#newReader() } : { kind: 'missed' };
    return new Promise<Joined>((resolve, reject) => {
      const parked: Parked = { resolve, reject };
      this.#parked.add(parked);
      gone.addEventListener('abort', () => {
        if (!this.#parked.delete(parked)) return;
        resolve({ kind: 'gone' });
        this.#abandonIfUnwanted();
      }, { once: true });
    });
  }

  /** The first request needs no reader (it answered 304): the body goes on only for the others. */
  release(): void {
    this.#firstHolds = false;
    this.#abandonIfUnwanted();
  }

  /** Fails the body before any byte (the store could not be read): waiters get the error. */
  fail(err: Error): void {
    if (this.#state !== 'streaming') return;
    this.#fail(err);
    this.#sink?.destroy(err);
  }

  #newReader(): SharedReader {
    const reader = new SharedReader(this);
    this.#readers.add(reader);
    return reader;
  }

  /** @internal pushes what the reader has not had yet, as far as it takes it. */
  feed(reader: SharedReader): void {
    reader.wanting = false;
    const from = reader.position;
    const end = this.#first + this.#chunks.length - this.#head;
    let more = true;
    while (more && reader.position < end) {
      const chunk = this.#chunks[this.#head + reader.position - this.#first] as Buffer;
      reader.position++;
      more = reader.push(chunk);
    }
    if (reader.position === end) {
      if (this.#state === 'complete') reader.push(null);
      else if (this.#state === 'failed') reader.destroy(this.#error);
      // Pushed no further than the reader takes: a reader that stops reading holds no chunk let go.
      else reader.wanting = more;
    }
    // Only a reader that was at the oldest chunk held can let chunks go.
    if (from === this.#first && reader.position > from) this.#trim();
  }

  /** @internal a reader ended or went away. */
  detach(reader: SharedReader): void {
    if (!this.#readers.delete(reader)) return;
    this.#trim();
    this.#abandonIfUnwanted();
  }

  #append(chunk: Buffer, done: () => void): void {
    this.#chunks.push(chunk);
    this.#held += chunk.length;
    this.#size += chunk.length;
    if (this.#keeping && this.#size > this.#options.keepBytes) {
      this.#keeping = false;
      // Too large to keep: the waiters read it live, from the first byte (still held: nothing was let go).
      for (const parked of this.#parked) parked.resolve({ kind: 'live', body: this.#newReader() });
      this.#parked.clear();
    }
    for (const reader of this.#readers) if (reader.wanting) this.feed(reader);
    this.#trim();
    if (this.#keeping || this.#held <= this.#options.windowBytes) done();
    else {
      this.#blocked = done;
      this.#armStallTimer();
    }
  }

  /** Lets go of the chunks every reader has passed (live bodies), and lets the store go on when there is room. */
  #trim(): void {
    // With no reader (all gone, or waiters about to read) nothing is let go: the body is abandoned instead.
    if (this.#keeping || this.#state === 'failed' || this.#readers.size === 0) return;
    const slowest = this.#slowestPosition();
    while (this.#first < slowest) {
      this.#held -= (this.#chunks[this.#head] as Buffer).length;
      this.#chunks[this.#head] = EMPTY;
      this.#head++;
      this.#first++;
    }
    // Chunks let go leave the front of the array; it is compacted now and then, not on every chunk.
    if (this.#head > 1024 && this.#head * 2 > this.#chunks.length) {
      this.#chunks = this.#chunks.slice(this.#head);
      this.#head = 0;
    }
    if (this.#blocked && this.#held <= this.#options.windowBytes) {
      const go = this.#blocked;
      this.#blocked = undefined;
      clearTimeout(this.#stallTimer);
      this.#stallTimer = undefined;
      go();
    }
  }

  /** While the store waits on the slowest reader: one that keeps the others waiting without reading is cut off. */
  #armStallTimer(): void {
    clearTimeout(this.#stallTimer);
    const before = this.#slowestPosition();
    this.#stallTimer = setTimeout(() => this.#stalled(before), this.#options.stallMs);
    this.#stallTimer.unref();
  }

  #stalled(before: number): void {
    this.#stallTimer = undefined;
    if (!this.#blocked) return;
    const slowest = this.#slowestPosition();
    // Only a reader that holds others up: alone (or all at one place) it is just a slow client, as any.
    if (slowest === before && [...this.#readers].some((r) => r.position > slowest)) {
      const cut = new Error('a slow reader of a shared list was cut off');
      for (const reader of [...this.#readers]) if (reader.position === slowest) reader.destroy(cut);
      this.#trim();
    }
    if (this.#blocked !== undefined && this.#stallTimer === undefined) this.#armStallTimer();
  }

  #slowestPosition(): number {
    let slowest = Infinity;
    for (const reader of this.#readers) slowest = Math.min(slowest, reader.position);
    return slowest;
  }

  #complete(): void {
    if (this.#state !== 'streaming') return;
    this.#state = 'complete';
    if (this.#keeping) {
      const body = this.#chunks.length === 1 ? (this.#chunks[0] as Buffer) : Buffer.concat(this.#chunks, this.#size);
      this.#whole = body;
      this.#options.keep(body, this.#meta as M);
      for (const parked of this.#parked) parked.resolve({ kind: 'whole', body });
      this.#parked.clear();
    }
    for (const reader of this.#readers) if (reader.wanting) this.feed(reader);
    this.#options.settled();
  }

  #fail(err: Error): void {
    this.#state = 'failed';
    this.#error = err;
    this.#failPublished(err);
    clearTimeout(this.#stallTimer);
    for (const parked of this.#parked) parked.reject(err);
    this.#parked.clear();
    for (const reader of [...this.#readers]) reader.destroy(err);
    this.#chunks = [];
    this.#held = 0;
    this.#options.settled();
  }

  #abandonIfUnwanted(): void {
    if (this.#state !== 'streaming' || this.interested > 0) return;
    const err = Object.assign(new Error('no request wants the list any more'), { code: ABANDONED });
    this.#fail(err);
    this.#sink?.destroy(err);
  }
}
