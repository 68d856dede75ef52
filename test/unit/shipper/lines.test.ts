import { describe, expect, it } from 'vitest';
import { firstLine, isBlank, wholeLines } from '../../../shipper/lines.ts';

const b = (s: string) => Buffer.from(s);

describe('wholeLines', () => {
  it('takes whole lines only: a partial last line waits for its newline', () => {
    expect(wholeLines(b('a\nbb\nccc'), 100)).toEqual({ bytes: 5, lines: 2 });
    expect(wholeLines(b('a\nbb\n'), 100)).toEqual({ bytes: 5, lines: 2 });
    expect(wholeLines(b('partial'), 100)).toEqual({ bytes: 0, lines: 0 });
    expect(wholeLines(b(''), 100)).toEqual({ bytes: 0, lines: 0 });
  });

  it('counts blank lines and CRLF lines as the push route does, and stops at the line limit', () => {
    expect(wholeLines(b('a\r\n\n\nb\n'), 100)).toEqual({ bytes: 7, lines: 4 });
    expect(wholeLines(b('a\nb\nc\nd\n'), 3)).toEqual({ bytes: 6, lines: 3 });
  });
});

describe('isBlank', () => {
  it('is true only for whitespace', () => {
    expect(isBlank(b(' \t\r\n\n'))).toBe(true);
    expect(isBlank(b(''))).toBe(true);
    expect(isBlank(b('\n x\n'))).toBe(false);
  });
});

describe('firstLine', () => {
  it('is the first non-blank whole line, with its newline', () => {
    expect(firstLine(b('\n  \nts,src_ip,dst_port,proto\r\n1,2,3,4\n'))?.toString()).toBe('ts,src_ip,dst_port,proto\r\n');
    expect(firstLine(b('ts,src_ip'))).toBeUndefined();
    expect(firstLine(b('\n\n'))).toBeUndefined();
  });
});
