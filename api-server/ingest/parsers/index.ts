// The input formats `blockfeed ingest --format` and POST /internal/v1/events accept.
import { INPUT_FORMATS, type InputFormat } from '../../../common/input-formats.ts';
import type { LineParser, ParserOptions } from '../event.ts';
import { cowrieParser } from './cowrie/parse.ts';
import { nativeParser } from './native.ts';
import { opencanaryParser } from './opencanary.ts';
import { telescopeCsvParser } from './telescope-csv.ts';

export { INPUT_FORMATS, type InputFormat };

const PARSERS: Readonly<Record<InputFormat, (o: ParserOptions) => LineParser>> = {
  native: nativeParser,
  cowrie: cowrieParser,
  opencanary: opencanaryParser,
  'telescope-csv': telescopeCsvParser,
};

/** A fresh parser (with its own state) for one input. */
export function parserFor(format: InputFormat, options: ParserOptions = {}): LineParser {
  return PARSERS[format](options);
}
