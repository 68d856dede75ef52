// JSON's punctuation and its number grammar, for the flat JSON readers written in TypeScript (flat-json.ts over
// strings; flat-json-bytes.ts decodes escapes). The byte scanner, flat-json-scan.wat, states the same grammar
// in WebAssembly; property tests hold both to JSON.parse. Pure.

export const QUOTE = 34;
export const BACKSLASH = 92;
export const COMMA = 44;
export const COLON = 58;
export const OPEN = 123;
export const CLOSE = 125;
export const MINUS = 45;
const DOT = 46;
export const ZERO = 48;
const NINE = 57;

export const isDigit = (c: number) => c >= ZERO && c <= NINE;

/**
 * End of the JSON number starting at `at` (its strict grammar: -?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?), or -1.
 * `codeAt(i)` is the character code at i, anything not a digit (NaN, -1) past the end.
 */
export function numberEnd(codeAt: (i: number) => number, at: number): number {
  let i = at;
  if (codeAt(i) === MINUS) i++;
  if (codeAt(i) === ZERO) i++;
  else if (isDigit(codeAt(i))) while (isDigit(codeAt(i))) i++;
  else return -1;
  if (codeAt(i) === DOT) {
    i++;
    if (!isDigit(codeAt(i))) return -1;
    while (isDigit(codeAt(i))) i++;
  }
  const e = codeAt(i);
  if (e === 101 || e === 69) {
    i++;
    const sign = codeAt(i);
    if (sign === 43 || sign === MINUS) i++;
    if (!isDigit(codeAt(i))) return -1;
    while (isDigit(codeAt(i))) i++;
  }
  return i;
}
