// The shipper's memory across restarts: for every followed path, which file it was reading (its inode and a
// hash of its first bytes) and how far the server has acknowledged it. Written whole, atomically (a
// temporary file, fsync, rename) after every acknowledged batch, so a crash leaves the previous state or the
// new one, never a mix. Parsing and serialising are pure; the two functions at the end do the I/O.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { UserError } from '../common/errors.ts';

/** How much of a file's beginning its `head` hash covers at most. */
export const HEAD_BYTES = 4096;

export interface FilePosition {
  /** The file being read for this path: its inode (a decimal string: inodes can exceed 2^53)… */
  ino: string;
  /** …and the SHA-256 (hex) of its first `headLength` bytes, which tells a reused inode or a rewritten file apart. */
  head: string;
  headLength: number;
  /** Bytes the server has acknowledged: always the end of a whole line. */
  offset: number;
  /** Lines before `offset` (the file line number of the next line is line + 1). */
  line: number;
  /** The file's name when it is no longer at the followed path (a rotated file being finished). */
  reading?: string;
}

export interface ShipState {
  version: 1;
  /** By the followed path, absolute. */
  files: Record<string, FilePosition>;
}

export const emptyState = (): ShipState => ({ version: 1, files: {} });

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

function checkPosition(p: unknown): string | undefined {
  if (typeof p !== 'object' || p === null) return 'not an object';
  const f = p as Record<string, unknown>;
  if (typeof f.ino !== 'string' || !/^\d+$/.test(f.ino)) return '"ino" must be a decimal string';
  if (typeof f.head !== 'string' || !/^([0-9a-f]{64})?$/.test(f.head)) return '"head" must be a SHA-256 in hex';
  if (!isCount(f.headLength) || f.headLength > HEAD_BYTES) return `"headLength" must be an integer from 0 to ${HEAD_BYTES}`;
  if (!isCount(f.offset) || f.offset < f.headLength) return '"offset" must be an integer no smaller than "headLength"';
  if (!isCount(f.line)) return '"line" must be a non-negative integer';
  if (f.reading !== undefined && typeof f.reading !== 'string') return '"reading" must be a path';
  return undefined;
}

/**
 * The state in `text`; a file that is not one names itself and what to do. Deleting it is safe (every line
 * is sent again, and the server stores each event once), so the shipper never does it on its own: the
 * operator decides.
 */
export function parseState(text: string, file: string): ShipState {
  const fail = (why: string) =>
    new UserError(`state file ${file}: ${why}; move it away to ship every followed file again from its first line (the server stores each event once)`);
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw fail(`not valid JSON (${(err as Error).message})`);
  }
  if (typeof data !== 'object' || data === null || (data as { version?: unknown }).version !== 1) throw fail('not a version 1 shipper state');
  const files = (data as { files?: unknown }).files;
  if (typeof files !== 'object' || files === null || Array.isArray(files)) throw fail('"files" must be an object');
  for (const [name, position] of Object.entries(files)) {
    const why = checkPosition(position);
    if (why) throw fail(`"${name}": ${why}`);
  }
  return data as ShipState;
}

export const serializeState = (state: ShipState): string => `${JSON.stringify(state, null, 2)}\n`;

/** The state kept in `file`, or an empty one when it does not exist yet (the first run). */
export async function readState(file: string): Promise<ShipState> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return emptyState();
    throw new UserError(`state file ${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  return parseState(text, file);
}

/** Replaces `file` with `state`: written to a temporary file beside it, flushed to disk, renamed over it. */
export async function writeState(file: string, state: ShipState): Promise<void> {
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const temporary = path.join(dir, `.${path.basename(file)}.${randomBytes(4).toString('hex')}.tmp`);
  const handle = await open(temporary, 'wx', 0o600);
  try {
    await handle.writeFile(serializeState(state));
    await handle.sync();
  } catch (err) {
    await handle.close();
    await rm(temporary, { force: true });
    throw err;
  }
  await handle.close();
  await rename(temporary, file);
}
