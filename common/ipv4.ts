// Dotted-quad IPv4 addresses as unsigned 32-bit numbers: the one parser both programs use, for text and for
// ASCII bytes (ingest lines and feed bodies are parsed without making strings). Strict: four decimal octets
// 0-255 and no leading zeros, which some parsers read as octal.

const DOT = 46;
const DIGIT_0 = 48;
const DIGIT_9 = 57;

/** The address in text[from, to) as a number, or -1. */
export function parseIPv4(text: string, from = 0, to = text.length): number {
  let value = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = from; i < to; i++) {
    const c = text.charCodeAt(i);
    if (c >= DIGIT_0 && c <= DIGIT_9) {
      if (digits > 0 && part === 0) return -1;
      part = part * 10 + (c - DIGIT_0);
      if (part > 255) return -1;
      digits++;
    } else if (c === DOT) {
      if (digits === 0 || dots === 3) return -1;
      value = value * 256 + part;
      dots++;
      part = 0;
      digits = 0;
    } else {
      return -1;
    }
  }
  return digits > 0 && dots === 3 ? value * 256 + part : -1;
}

/** The address in the ASCII bytes buf[from, to) as a number, or -1: the same rules as parseIPv4. */
export function parseIPv4Bytes(buf: Uint8Array, from: number, to: number): number {
  let value = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = from; i < to; i++) {
    const c = buf[i] as number;
    if (c >= DIGIT_0 && c <= DIGIT_9) {
      if (digits > 0 && part === 0) return -1;
      part = part * 10 + (c - DIGIT_0);
      if (part > 255) return -1;
      digits++;
    } else if (c === DOT) {
      if (digits === 0 || dots === 3) return -1;
      value = value * 256 + part;
      dots++;
      part = 0;
      digits = 0;
    } else {
      return -1;
    }
  }
  return digits > 0 && dots === 3 ? value * 256 + part : -1;
}

/** The dotted quad of an unsigned 32-bit number. */
export function formatIPv4(n: number): string {
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
}
