// Follows one path like `tail -F` and ships its whole lines in batches: resumes where the state says,
// finishes a rotated file before the new one, reads a truncated file again from its top, and reads nothing
// further while a batch waits for the server (memory is one batch, whatever the server does).
// docs/sensors.md says how and why.
import { createHash } from 'node:crypto';
import { open, readdir, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { UserError } from '../common/errors.ts';
import type { InputFormat } from '../common/input-formats.ts';
import type { Logger } from '../common/logging.ts';
import { rejectionMessage, retryDelayMs, type BatchPlace, type PushOutcome } from './answer.ts';
import { firstLine, isBlank, wholeLines, type BatchLimits } from './lines.ts';
import type { ShipperMetrics } from './metrics.ts';
import { findPrevious, resumption, type SeenFile } from './position.ts';
import { HEAD_BYTES, type FilePosition } from './state.ts';

/** The smallest body a 413 makes batches shrink to; a single line larger than the server takes is reported and passed. */
const MIN_BATCH_BYTES = 4096;
/** How far into a file its CSV header is looked for. */
const HEADER_SEARCH_BYTES = 65_536;
/** Read size when passing over a line longer than a batch. */
const SCAN_BYTES = 65_536;

/** The server refuses the shipper itself (token, URL, format): retrying cannot help, the process stops. */
export class ShipRefused extends Error {
  readonly status: number;
  readonly detail: string;
  constructor(status: number, detail: string) {
    super(`${status}: ${detail}`);
    this.status = status;
    this.detail = detail;
  }
}

export interface FollowerContext {
  format: InputFormat;
  limits: BatchLimits;
  lingerMs: number;
  pollMs: number;
  log: Logger;
  metrics: ShipperMetrics;
  /** Pushes one body; rejects only when `stop` aborted it. */
  push: (body: Buffer) => Promise<PushOutcome>;
  /** Records the acknowledged position of a followed path (resolves once it is on disk). */
  save: (followed: string, position: FilePosition) => Promise<void>;
  /** Aborted on SIGTERM/SIGINT: no new batch starts, waits end. */
  stop: AbortSignal;
}

/** The file being read for a followed path. */
interface Reading {
  handle: FileHandle;
  /** Its name in messages (`name:line: reason`): the followed path, or the rotated file's path. */
  name: string;
  ino: string;
  offset: number;
  line: number;
  head: string;
  headLength: number;
  /** Whether it is still the file at the followed path. */
  live: boolean;
  /** Nothing more will be written to it: a copy found by its beginning, or a rotated file once the new one has lines. */
  final: boolean;
  /** CSV only: the file's header line, sent ahead of batches that do not start at its top. */
  header?: Buffer;
}

/** Whole lines read at the offset (or the unterminated end of a file nothing more is written to, as one line). */
interface Batch {
  bytes: Buffer;
  lines: number;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** Reads exactly `into.length` bytes at `position` (fewer only at the end of the file). */
async function readAt(handle: FileHandle, into: Buffer, position: number): Promise<number> {
  let done = 0;
  while (done < into.length) {
    const { bytesRead } = await handle.read(into, done, into.length - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return done;
}

/** SHA-256 of a file's first `length` bytes; undefined when it is shorter. */
async function headOf(handle: FileHandle, length: number): Promise<string | undefined> {
  if (length === 0) return '';
  const bytes = Buffer.alloc(length);
  return (await readAt(handle, bytes, 0)) === length ? sha256(bytes) : undefined;
}

async function statOrUndefined(file: string) {
  try {
    return await stat(file, { bigint: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** `file` as resumption() sees it, its beginning hashed over `headLength` bytes; undefined when it does not exist. */
async function seeFile(file: string, headLength: number): Promise<SeenFile | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    if (['ENOENT', 'EACCES', 'EISDIR'].includes((err as NodeJS.ErrnoException).code ?? '')) return undefined;
    throw err;
  }
  try {
    const st = await handle.stat({ bigint: true });
    if (!st.isFile()) return undefined;
    return { name: file, ino: String(st.ino), size: Number(st.size), mtimeMs: Number(st.mtimeMs), head: await headOf(handle, headLength) };
  } finally {
    await handle.close();
  }
}

/** The regular files of `dir` other than `except`, each hashed over `headLength` bytes. */
async function seeDirectory(dir: string, except: string, headLength: number): Promise<SeenFile[]> {
  const seen: SeenFile[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const file = path.join(dir, entry.name);
    if (!entry.isFile() || file === except) continue;
    const one = await seeFile(file, headLength);
    if (one) seen.push(one);
  }
  return seen;
}

export class Follower {
  /** The followed path, absolute (the state's key). */
  readonly path: string;
  /** The path as given (log lines, the metrics' `file` label). */
  readonly display: string;
  private readonly ctx: FollowerContext;
  private saved: FilePosition | undefined;
  private reading: Reading | undefined;
  private maxBytes: number;
  /** The one read buffer: a batch is read into it and stays there until the server has acknowledged it. */
  private readonly buffer: Buffer;
  private wakeUp: (() => void) | undefined;
  /** A change was reported while the follower was busy: the next idle() returns at once. */
  private changed = false;
  private waitingLogged = false;

  constructor(followed: string, display: string, saved: FilePosition | undefined, ctx: FollowerContext) {
    this.path = followed;
    this.display = display;
    this.saved = saved;
    this.ctx = ctx;
    this.maxBytes = ctx.limits.bytes;
    this.buffer = Buffer.allocUnsafe(ctx.limits.bytes);
  }

  /** Bytes written and not acknowledged yet: of the file being read, and of the new one while a rotated file is finished. */
  async lag(): Promise<number> {
    const r = this.reading;
    if (!r) return 0;
    try {
      const behind = Math.max(0, Number((await r.handle.stat()).size) - r.offset);
      return r.live ? behind : behind + Number((await statOrUndefined(this.path))?.size ?? 0);
    } catch {
      return 0; // closed meanwhile: switching files
    }
  }

  /** Something changed in the file's directory (fs.watch): look now rather than at the next poll. */
  wake(): void {
    if (this.wakeUp) this.wakeUp();
    else this.changed = true;
  }

  /** Follows until `stop`; throws ShipRefused when the server refuses the shipper. */
  async run(): Promise<void> {
    try {
      await this.start();
      let caughtUp = false;
      while (!this.ctx.stop.aborted) {
        const batch = await this.next(caughtUp);
        if (!batch) {
          caughtUp = true;
          await this.idle();
          continue;
        }
        caughtUp = false;
        await this.deliver(batch);
      }
    } catch (err) {
      if (!this.ctx.stop.aborted || err instanceof ShipRefused || err instanceof UserError) throw err;
    } finally {
      await this.reading?.handle.close();
    }
  }

  /** Waits for the next poll, a change in the directory, or the stop. */
  private async idle(): Promise<void> {
    if (this.changed) {
      this.changed = false;
      return;
    }
    const changed = new Promise<void>((resolve) => (this.wakeUp = resolve));
    await Promise.race([changed, sleep(this.ctx.pollMs, undefined, { signal: this.ctx.stop }).catch(() => undefined)]);
    this.wakeUp = undefined;
  }

  private position(r: Reading): FilePosition {
    return { ino: r.ino, head: r.head, headLength: r.headLength, offset: r.offset, line: r.line, ...(r.live ? {} : { reading: r.name }) };
  }

  /** A file of the followed path's directory under the name messages give it (beside the path as given). */
  private shown(file: string): string {
    return file === this.path ? this.display : path.join(path.dirname(this.display), path.basename(file));
  }

  private async openReading(file: string, at: { offset: number; line: number }, live: boolean, final: boolean): Promise<Reading | undefined> {
    const name = this.shown(file);
    let handle: FileHandle;
    try {
      handle = await open(file, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    const st = await handle.stat({ bigint: true });
    if (!st.isFile()) {
      await handle.close();
      throw new UserError(`${name}: not a regular file`);
    }
    const headLength = Math.min(HEAD_BYTES, at.offset);
    const head = (await headOf(handle, headLength)) ?? '';
    return { handle, name, ino: String(st.ino), offset: at.offset, line: at.line, head, headLength, live, final };
  }

  /** Opens the followed path at its top, waiting (like tail -F) until it exists. */
  private async openLive(): Promise<Reading | undefined> {
    while (!this.ctx.stop.aborted) {
      const reading = await this.openReading(this.path, { offset: 0, line: 0 }, true, false);
      if (reading) {
        this.waitingLogged = false;
        return reading;
      }
      if (!this.waitingLogged) this.ctx.log.info({ file: this.display }, `${this.display}: waiting for the file to appear`);
      this.waitingLogged = true;
      await this.idle();
    }
    return undefined;
  }

  /** Where the state says to go on, decided against what the directory holds now (position.ts). */
  private async start(): Promise<void> {
    const saved = this.saved;
    const live = await seeFile(this.path, saved?.headLength ?? 0);
    let decision = resumption(saved, live, []);
    // Not where it was: the file it was reading may be elsewhere in the directory.
    if (saved && decision.kind === 'restart') decision = resumption(saved, live, await seeDirectory(path.dirname(this.path), this.path, saved.headLength));
    const log = this.ctx.log;
    if (decision.kind === 'resume') {
      const reading = await this.openReading(this.path, decision, true, false);
      // The file changed between the look and the open: decide again.
      if (!reading || reading.ino !== saved?.ino || reading.head !== saved.head) {
        await reading?.handle.close();
        return this.start();
      }
      this.reading = reading;
      log.info({ file: this.display, offset: decision.offset, line: decision.line }, `${this.display}: going on after line ${decision.line}`);
      return;
    }
    if (decision.kind === 'restart') {
      const where = `${this.display}: ${decision.why === 'rotated' ? 'rotated' : decision.why === 'truncated' ? 'truncated' : 'rewritten'} while the shipper was stopped`;
      if (decision.finish) {
        const reading = await this.openReading(decision.finish.name, decision.finish, false, true);
        if (reading) {
          log.info({ file: this.display, finishing: reading.name, line: decision.finish.line }, `${where}: finishing ${reading.name} after line ${decision.finish.line}, then ${this.display} from its first line`);
          this.reading = reading;
          return;
        }
      }
      log.warn(
        { file: this.display, offset: saved?.offset },
        `${where}, and the file it was reading is not in ${path.dirname(this.path)} any more (deleted or compressed): lines written to it after line ${saved?.line} were not shipped, if there were any; reading ${this.display} from its first line`,
      );
    }
    this.reading = await this.openLive();
  }

  /** The next batch of whole lines, or undefined when there is none yet. */
  private async next(caughtUp: boolean): Promise<Batch | undefined> {
    for (;;) {
      if (this.ctx.stop.aborted) return undefined;
      const r = this.reading;
      if (!r) return undefined;
      let size = Number((await r.handle.stat()).size);
      if (r.live) {
        const now = await statOrUndefined(this.path);
        if (!now || String(now.ino) !== r.ino) {
          await this.rotatedAway(r);
          continue;
        }
        if (size < r.offset || (await headOf(r.handle, r.headLength)) !== r.head) {
          await this.replaced(r, size < r.offset ? 'truncated' : 'rewritten');
          continue;
        }
      } else {
        const now = await statOrUndefined(this.path);
        // A writer appends to the renamed file until it reopens the path; once the new file has a line it has.
        if (!r.final && now && now.size > 0n) {
          r.final = true;
          size = Number((await r.handle.stat()).size);
        }
      }
      const available = size - r.offset;
      if (available <= 0) {
        if (r.final) {
          await this.finished(r);
          continue;
        }
        return undefined;
      }
      // A line written after a quiet spell waits a moment for the lines that follow it (one batch, not one each).
      if (caughtUp && r.live && available < this.maxBytes && this.ctx.lingerMs > 0) {
        caughtUp = false;
        await sleep(this.ctx.lingerMs, undefined, { signal: this.ctx.stop }).catch(() => undefined);
        continue;
      }
      const chunk = this.buffer.subarray(0, Math.min(available, this.maxBytes));
      const got = await readAt(r.handle, chunk, r.offset);
      const read = chunk.subarray(0, got);
      const cut = wholeLines(read, this.ctx.limits.lines);
      if (cut.lines > 0) return { bytes: read.subarray(0, cut.bytes), lines: cut.lines };
      if (got >= this.maxBytes) {
        if (await this.passLongLine(r)) continue;
        return undefined;
      }
      if (r.final && got > 0) return { bytes: read, lines: 1 };
      return undefined; // a line still being written: wait for its newline
    }
  }

  /** The followed path is another file now: finish this one under its new name, then read the new one. */
  private async rotatedAway(r: Reading): Promise<void> {
    const renamed = (await seeDirectory(path.dirname(this.path), this.path, 0)).find((f) => f.ino === r.ino);
    r.name = renamed ? this.shown(renamed.name) : `${this.display} (deleted)`;
    r.live = false;
    this.ctx.log.info({ file: this.display, finishing: r.name, line: r.line }, `${this.display}: rotated; finishing ${r.name} after line ${r.line}`);
    await this.ctx.save(this.path, this.position(r));
  }

  /** Done with a rotated file or a copy: on to the followed path from its first line. */
  private async finished(r: Reading): Promise<void> {
    this.ctx.log.info({ file: this.display, finished: r.name, lines: r.line }, `${this.display}: finished ${r.name} (${r.line} lines); reading ${this.display} from its first line`);
    await r.handle.close();
    this.reading = undefined;
    this.reading = await this.openLive();
    if (this.reading) await this.ctx.save(this.path, this.position(this.reading));
  }

  /** The followed file was truncated in place (copytruncate) or rewritten: finish the copy if there is one, then read it from its top. */
  private async replaced(r: Reading, why: 'truncated' | 'rewritten'): Promise<void> {
    const was = this.position(r);
    const copy = findPrevious(was, await seeDirectory(path.dirname(this.path), this.path, was.headLength));
    await r.handle.close();
    this.reading = undefined;
    if (copy) {
      const reading = await this.openReading(copy.name, was, false, true);
      if (reading) {
        this.ctx.log.info({ file: this.display, finishing: reading.name, line: was.line }, `${this.display}: ${why}; finishing its copy ${reading.name} after line ${was.line}, then ${this.display} from its first line`);
        this.reading = reading;
        await this.ctx.save(this.path, this.position(reading));
        return;
      }
    }
    this.ctx.log.warn(
      { file: this.display, offset: was.offset },
      `${this.display}: ${why} after line ${was.line} and no copy of it found in ${path.dirname(this.path)}: reading it from its first line (lines written between the last read and the truncation, if any, were not shipped)`,
    );
    this.reading = await this.openLive();
    if (this.reading) await this.ctx.save(this.path, this.position(this.reading));
  }

  /**
   * The line at the offset is longer than a batch may be: it is reported and passed over once its newline is
   * there. Returns whether it was passed.
   */
  private async passLongLine(r: Reading): Promise<boolean> {
    const scan = Buffer.allocUnsafe(SCAN_BYTES);
    for (let at = r.offset + this.maxBytes; ; ) {
      const got = await readAt(r.handle, scan, at);
      const eol = scan.subarray(0, got).indexOf(10);
      if (eol >= 0) {
        const length = at + eol + 1 - r.offset;
        this.ctx.log.warn({ file: this.display, line: r.line + 1 }, `${r.name}:${r.line + 1}: line of ${length} bytes is longer than a batch (${this.maxBytes} bytes); not shipped`);
        this.ctx.metrics.rejectedLines.inc({ file: this.display });
        await this.acknowledge(r, length, 1);
        return true;
      }
      if (got < SCAN_BYTES) {
        if (!r.final) return false;
        // the unterminated end of a file nothing more is written to
        const length = at + got - r.offset;
        this.ctx.log.warn({ file: this.display, line: r.line + 1 }, `${r.name}:${r.line + 1}: last line of ${length} bytes is longer than a batch (${this.maxBytes} bytes); not shipped`);
        await this.acknowledge(r, length, 1);
        return true;
      }
      at += got;
    }
  }

  /** The CSV header to send ahead of a batch that starts below it. */
  private async headerFor(r: Reading): Promise<Buffer | undefined> {
    if (this.ctx.format !== 'telescope-csv' || r.offset === 0) return undefined;
    if (!r.header) {
      const start = Buffer.alloc(Math.min(HEADER_SEARCH_BYTES, r.offset));
      r.header = firstLine(start.subarray(0, await readAt(r.handle, start, 0)));
    }
    return r.header;
  }

  /** Sends `batch` until the server has answered for it; then moves past it. */
  private async deliver(batch: Batch): Promise<void> {
    const r = this.reading;
    if (!r) return;
    if (isBlank(batch.bytes)) {
      await this.acknowledge(r, batch.bytes.length, batch.lines);
      return;
    }
    const header = await this.headerFor(r);
    const body = header ? Buffer.concat([header, batch.bytes]) : batch.bytes;
    const place: BatchPlace = { name: r.name, firstLine: r.line + 1, lines: batch.lines, headerLines: header ? 1 : 0 };
    const { log, metrics } = this.ctx;
    const lastLine = place.firstLine + batch.lines - 1;
    for (let attempt = 0; ; attempt++) {
      const started = performance.now();
      const outcome = await this.ctx.push(body);
      const ms = Math.round(performance.now() - started);
      switch (outcome.kind) {
        case 'stored': {
          const a = outcome.answer;
          if (a.lines !== batch.lines + place.headerLines) {
            metrics.batchesFailed.inc({ reason: 'unexpected_answer' });
            await this.backOff(attempt, { kind: 'retry', reason: 'unexpected_answer', detail: `the server read ${a.lines} lines of the ${batch.lines + place.headerLines} sent` });
            continue;
          }
          for (const e of a.errors) {
            const message = rejectionMessage(place, e.line, e.reason);
            if (message) log.warn({ file: this.display, line: place.firstLine + e.line - place.headerLines - 1 }, message);
          }
          if (a.rejected > a.errors.length) {
            log.warn({ file: this.display, rejected: a.rejected - a.errors.length }, `${r.name}:${place.firstLine}-${lastLine}: ${a.rejected - a.errors.length} more rejected lines the server did not list`);
          }
          metrics.rejectedLines.inc({ file: this.display }, a.rejected);
          log.info(
            { file: r.name, lines: batch.lines, accepted: a.accepted, inserted: a.inserted, duplicates: a.duplicates, skipped: a.skipped - place.headerLines, rejected: a.rejected, nonGlobal: a.nonGlobal, bytes: batch.bytes.length, ms },
            'batch shipped',
          );
          await this.acknowledge(r, batch.bytes.length, batch.lines);
          return;
        }
        case 'rejected': {
          metrics.batchesFailed.inc({ reason: 'rejected' });
          for (const e of outcome.errors) {
            const message = rejectionMessage(place, e.line, e.reason);
            if (message) log.warn({ file: this.display, line: place.firstLine + e.line - place.headerLines - 1 }, message);
          }
          log.warn({ file: r.name, lines: batch.lines, ms }, `${r.name}:${place.firstLine}-${lastLine}: none of the batch could be stored (${outcome.detail}); moving past it`);
          metrics.rejectedLines.inc({ file: this.display }, outcome.errors.length);
          await this.acknowledge(r, batch.bytes.length, batch.lines);
          return;
        }
        case 'too_large': {
          metrics.batchesFailed.inc({ reason: 'too_large' });
          if (batch.lines === 1 || this.maxBytes <= MIN_BATCH_BYTES) {
            log.warn({ file: this.display, line: place.firstLine }, `${r.name}:${place.firstLine}: the server takes no body this large (${body.length} bytes: ${outcome.detail}); not shipped`);
            metrics.rejectedLines.inc({ file: this.display }, batch.lines);
            await this.acknowledge(r, batch.bytes.length, batch.lines);
            return;
          }
          this.maxBytes = Math.max(MIN_BATCH_BYTES, Math.floor(body.length / 2));
          log.warn({ file: this.display, bytes: body.length, nowAtMost: this.maxBytes }, `the server refused a ${body.length}-byte batch as too large (413: ${outcome.detail}); batches are now at most ${this.maxBytes} bytes (raise the body limit of the proxy in front of the api-server)`);
          return; // read again, smaller
        }
        case 'retry':
          metrics.batchesFailed.inc({ reason: outcome.reason });
          await this.backOff(attempt, outcome);
          if (this.ctx.stop.aborted) return;
          continue;
        case 'refused':
          metrics.batchesFailed.inc({ reason: 'refused' });
          throw new ShipRefused(outcome.status, outcome.detail);
        case 'misconfigured':
          throw new ShipRefused(outcome.status, outcome.detail);
      }
    }
  }

  private async backOff(attempt: number, outcome: Extract<PushOutcome, { kind: 'retry' }>): Promise<void> {
    const delay = retryDelayMs(attempt, Math.random(), outcome.retryAfterMs);
    this.ctx.log.warn({ file: this.display, reason: outcome.reason, attempt: attempt + 1, retryInMs: delay }, `push failed (${outcome.detail}); retrying in ${delay} ms`);
    await sleep(delay, undefined, { signal: this.ctx.stop }).catch(() => undefined);
  }

  /** The server has answered for `bytes` bytes and `lines` lines at the offset: move past them and remember it. */
  private async acknowledge(r: Reading, bytes: number, lines: number): Promise<void> {
    r.offset += bytes;
    r.line += lines;
    if (r.headLength < HEAD_BYTES) {
      const headLength = Math.min(HEAD_BYTES, r.offset);
      const head = await headOf(r.handle, headLength);
      // undefined: truncated meanwhile; the next look finds that out
      if (head !== undefined) Object.assign(r, { head, headLength });
    }
    const { metrics } = this.ctx;
    metrics.lines.inc({ file: this.display }, lines);
    metrics.lastSuccess.set(Date.now() / 1000);
    this.saved = this.position(r);
    await this.ctx.save(this.path, this.saved);
  }
}
