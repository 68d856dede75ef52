// Where to go on in a followed file: decided from what the state says was being read and what the file's
// directory holds now. Pure: the caller stats the files and hashes their first bytes.
//
// The cases (docs/sensors.md "Positions"):
//  - the followed path is the same file (inode and first bytes alike) and at least as long → go on at the
//    acknowledged offset;
//  - it is shorter (truncated in place, as logrotate's copytruncate does) or its first bytes changed
//    (rewritten) → it is read again from its first line; before that, a copy of the old file (found by its
//    first bytes, long enough) is finished from the offset;
//  - it is another file (rotated: renamed away and a new file made) → the old file, found in the same
//    directory by its inode, is finished from the offset, then the new one is read from its first line;
//  - the old file cannot be found (deleted, compressed) → the new one is read from its first line, with a
//    warning that what the old file held past the offset, if anything, was not shipped.

import type { FilePosition } from './state.ts';

/** A file as seen now: its inode, size, modification time, and the hash of its first `headLength` bytes of the saved position. */
export interface SeenFile {
  name: string;
  ino: string;
  size: number;
  mtimeMs: number;
  /** SHA-256 (hex) of its first saved.headLength bytes; undefined when it is shorter than that. */
  head: string | undefined;
}

export type Resumption =
  | { kind: 'resume'; offset: number; line: number }
  /** Nothing saved for the path: read it from the first line. */
  | { kind: 'new' }
  /**
   * Read the followed path from its first line; first finish `finish` (a rotated file or a copy of the old
   * one) from the saved offset, if one was found.
   */
  | { kind: 'restart'; why: 'rotated' | 'truncated' | 'rewritten'; finish?: { name: string; offset: number; line: number } };

const sameBeginning = (saved: FilePosition, seen: SeenFile) => saved.headLength === 0 || seen.head === saved.head;

/** The file that held `saved`'s lines, other than the followed path: by inode first, else a copy by its first bytes. */
export function findPrevious(saved: FilePosition, candidates: readonly SeenFile[]): SeenFile | undefined {
  const longEnough = candidates.filter((c) => c.size >= saved.offset && sameBeginning(saved, c));
  const byInode = longEnough.find((c) => c.ino === saved.ino);
  if (byInode) return byInode;
  // A copy (copytruncate) has an inode of its own: it can only be known by its beginning, so there must be one.
  if (saved.headLength === 0) return undefined;
  return longEnough.toSorted((a, b) => b.mtimeMs - a.mtimeMs)[0];
}

/**
 * Where to start following, given the saved position (if any), the file at the followed path now (undefined
 * when it does not exist) and the other files of its directory.
 */
export function resumption(saved: FilePosition | undefined, live: SeenFile | undefined, others: readonly SeenFile[]): Resumption {
  if (!saved) return { kind: 'new' };
  if (live && live.ino === saved.ino && live.size >= saved.offset && sameBeginning(saved, live)) {
    return { kind: 'resume', offset: saved.offset, line: saved.line };
  }
  const why = !live || live.ino !== saved.ino ? 'rotated' : live.size < saved.offset ? 'truncated' : 'rewritten';
  // The followed path itself is never "the previous file": it is read from its first line.
  const previous = findPrevious(saved, others.filter((o) => o.name !== live?.name));
  return { kind: 'restart', why, ...(previous ? { finish: { name: previous.name, offset: saved.offset, line: saved.line } } : {}) };
}
