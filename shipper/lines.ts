// Cutting what a followed file holds past its acknowledged offset into batches of whole lines. Pure.

const NEWLINE = 0x0a;

export interface BatchLimits {
  /** Lines per batch at most. */
  lines: number;
  /** Bytes per batch at most (the body of one push). */
  bytes: number;
}

/** How much of `chunk` a batch takes: whole lines only, at most `maxLines` of them. */
export interface Cut {
  bytes: number;
  lines: number;
}

/** The longest prefix of `chunk` made of whole (newline-terminated) lines, at most `maxLines` lines. */
export function wholeLines(chunk: Uint8Array, maxLines: number): Cut {
  let lines = 0;
  let bytes = 0;
  for (let eol = chunk.indexOf(NEWLINE); eol >= 0 && lines < maxLines; eol = chunk.indexOf(NEWLINE, eol + 1)) {
    lines++;
    bytes = eol + 1;
  }
  return { bytes, lines };
}

/** Whether `bytes` holds nothing but spaces, tabs and line ends (the push route refuses such a body). */
export function isBlank(bytes: Uint8Array): boolean {
  for (const b of bytes) if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) return false;
  return true;
}

/**
 * The first non-blank line of a file's beginning, with its newline: a CSV header, sent ahead of every batch
 * that does not start at the top of the file (the parser learns the columns from it). Undefined while the
 * beginning holds no whole non-blank line.
 */
export function firstLine(start: Uint8Array): Buffer | undefined {
  let from = 0;
  for (let eol = start.indexOf(NEWLINE); eol >= 0; eol = start.indexOf(NEWLINE, from)) {
    const line = start.subarray(from, eol + 1);
    if (!isBlank(line)) return Buffer.from(line);
    from = eol + 1;
  }
  return undefined;
}
