import { describe, expect, it } from 'vitest';
import { findPrevious, resumption, type SeenFile } from '../../../shipper/position.ts';
import type { FilePosition } from '../../../shipper/state.ts';

const HEAD = 'a'.repeat(64);
const OTHER = 'b'.repeat(64);
const saved: FilePosition = { ino: '100', head: HEAD, headLength: 4096, offset: 50_000, line: 120 };
const file = (name: string, ino: string, size: number, head: string | undefined = HEAD, mtimeMs = 0): SeenFile => ({ name, ino, size, head, mtimeMs });
const LIVE = '/log/cowrie.json';

describe('resumption', () => {
  it('starts a path it has no position for at its first line', () => {
    expect(resumption(undefined, file(LIVE, '1', 10), [])).toEqual({ kind: 'new' });
    expect(resumption(undefined, undefined, [])).toEqual({ kind: 'new' });
  });

  it('goes on at the offset in the same file, grown or not', () => {
    expect(resumption(saved, file(LIVE, '100', 50_000), [])).toEqual({ kind: 'resume', offset: 50_000, line: 120 });
    expect(resumption(saved, file(LIVE, '100', 90_000), [])).toEqual({ kind: 'resume', offset: 50_000, line: 120 });
    // nothing acknowledged yet: no beginning to compare
    expect(resumption({ ...saved, head: '', headLength: 0, offset: 0, line: 0 }, file(LIVE, '100', 10, undefined), [])).toEqual({ kind: 'resume', offset: 0, line: 0 });
  });

  it('finishes a file rotated while it was stopped (found by inode) before the new one', () => {
    const others = [file('/log/cowrie.json.2', '99', 80_000, OTHER), file('/log/cowrie.json.1', '100', 60_000)];
    expect(resumption(saved, file(LIVE, '101', 300), others)).toEqual({ kind: 'restart', why: 'rotated', finish: { name: '/log/cowrie.json.1', offset: 50_000, line: 120 } });
    // the path itself gone too: the rotated file is still finished
    expect(resumption(saved, undefined, others)).toEqual({ kind: 'restart', why: 'rotated', finish: { name: '/log/cowrie.json.1', offset: 50_000, line: 120 } });
  });

  it('reads a truncated file (copytruncate) again from its top, after its copy (found by its beginning)', () => {
    const copy = file('/log/cowrie.json.1', '300', 70_000, HEAD, 2);
    expect(resumption(saved, file(LIVE, '100', 2_000, undefined), [file('/log/old', '301', 90_000, HEAD, 1), copy])).toEqual({
      kind: 'restart', why: 'truncated', finish: { name: '/log/cowrie.json.1', offset: 50_000, line: 120 },
    });
  });

  it('takes a same-inode file whose beginning changed (rewritten, or the inode reused) as another file', () => {
    expect(resumption(saved, file(LIVE, '100', 80_000, OTHER), [])).toEqual({ kind: 'restart', why: 'rewritten' });
  });

  it('says when the file it was reading cannot be found (deleted or compressed)', () => {
    expect(resumption(saved, file(LIVE, '101', 10, OTHER), [file('/log/cowrie.json.1.gz', '102', 9_000, OTHER)])).toEqual({ kind: 'restart', why: 'rotated' });
  });
});

describe('findPrevious', () => {
  it('never takes a file shorter than the offset or with another beginning', () => {
    expect(findPrevious(saved, [file('/a', '100', 49_999)])).toBeUndefined();
    expect(findPrevious(saved, [file('/a', '100', 60_000, OTHER)])).toBeUndefined();
    expect(findPrevious(saved, [file('/a', '5', 60_000, HEAD)])?.name).toBe('/a');
  });

  it('knows a copy only by its beginning: with nothing acknowledged, only the inode will do', () => {
    const nothing = { ...saved, head: '', headLength: 0, offset: 0, line: 0 };
    expect(findPrevious(nothing, [file('/a', '5', 60_000, '')])).toBeUndefined();
    expect(findPrevious(nothing, [file('/a', '100', 60_000, '')])?.name).toBe('/a');
  });
});
