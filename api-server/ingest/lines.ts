// Splits a byte stream into numbered lines without readline's per-line overhead. Handles \r\n and a last
// line without a newline; decodes UTF-8 across chunk boundaries.
import { StringDecoder } from 'node:string_decoder';

export interface NumberedLine {
  line: string;
  /** 1-based line number in its input. */
  number: number;
}

/** Yields the lines of `input` in batches (one array per chunk), to keep per-line async overhead away. */
export async function* lineBatches(input: AsyncIterable<Buffer | string> | Iterable<Buffer | string>): AsyncGenerator<NumberedLine[]> {
  const decoder = new StringDecoder('utf8');
  let rest = '';
  let number = 0;
  const cut = (text: string, final: boolean): NumberedLine[] => {
    const out: NumberedLine[] = [];
    let pos = 0;
    for (;;) {
      const eol = text.indexOf('\n', pos);
      if (eol < 0) break;
      const end = eol > pos && text.charCodeAt(eol - 1) === 13 ? eol - 1 : eol;
      out.push({ line: text.slice(pos, end), number: ++number });
      pos = eol + 1;
    }
    rest = text.slice(pos);
    if (final && rest !== '') {
      out.push({ line: rest.endsWith('\r') ? rest.slice(0, -1) : rest, number: ++number });
      rest = '';
    }
    return out;
  };
  for await (const chunk of input) {
    const text = rest + (typeof chunk === 'string' ? chunk : decoder.write(chunk));
    const batch = cut(text, false);
    if (batch.length) yield batch;
  }
  const last = cut(rest + decoder.end(), true);
  if (last.length) yield last;
}
