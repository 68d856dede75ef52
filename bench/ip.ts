// The hand-written dotted-quad readers of common/ip.ts against ipaddr.js doing the same work (node bench/ip.ts):
// the figures that decide whether a hand reader stays (docs/design.md "IP addresses"). Each line prints the
// median and best of nine passes over a million addresses, and the ratio of ipaddr.js to the hand reader.
//   text   parseIPv4 on an address string; the address part of a CIDR string (the shard cutter's work)
//   bytes  parseIPv4Bytes on an address's byte range (the Cowrie byte reader's src_ip)
//   feed   a 14 MB body of a million lines scanned by IPv4BytesReader (the controller's sanitiser), against
//          cutting each line out as a string for ipaddr.js
import ipaddr from 'ipaddr.js';
import { IPv4BytesReader, formatIPv4, parseIPv4, parseIPv4Bytes } from '../common/ip.ts';

const N = 1_000_000;
const PASSES = 9;
const NEWLINE = 10;

/** Deterministic pseudo-random 32-bit numbers. */
function* lcg(seed: number): Generator<number, never> {
  let x = seed >>> 0;
  for (;;) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    yield x;
  }
}

/** What ipaddr.js gives under the same strict rule: the address as a number, or -1. */
function viaIpaddr(text: string): number {
  if (!ipaddr.IPv4.isValidFourPartDecimal(text)) return -1;
  return ipaddr.IPv4.parse(text).octets.reduce((n, octet) => n * 256 + octet, 0);
}

const rand = lcg(42);
const texts = Array.from({ length: N }, () => formatIPv4(rand.next().value));
const cidrs = texts.map((t, i) => `${t}/${i % 2 ? 32 : 24}`);
const body = Buffer.from(`${texts.join('\n')}\n`, 'latin1');
const starts = new Int32Array(N);
const ends = new Int32Array(N);
for (let i = 0, at = 0; i < N; i++) {
  const end = body.indexOf(NEWLINE, at);
  starts[i] = at;
  ends[i] = end;
  at = end + 1;
}

/** Median and best of the passes, in ms; the checksum keeps the work from being optimised away. */
function measure(work: () => number): { median: number; best: number } {
  const times: number[] = [];
  let checksum = 0;
  for (let pass = 0; pass < PASSES; pass++) {
    const start = performance.now();
    checksum += work();
    times.push(performance.now() - start);
  }
  if (Number.isNaN(checksum)) throw new Error('no work done');
  times.sort((a, b) => a - b);
  return { median: times[PASSES >> 1] as number, best: times[0] as number };
}

function compare(name: string, hand: () => number, library: () => number): void {
  const h = measure(hand);
  const l = measure(library);
  const ms = (t: { median: number; best: number }) => `${t.median.toFixed(0)} ms (best ${t.best.toFixed(0)})`;
  console.log(`${name.padEnd(8)} hand ${ms(h).padEnd(20)} ipaddr.js ${ms(l).padEnd(22)} = ${(l.median / h.median).toFixed(1)}x`);
}

const sum = (f: (i: number) => number) => () => {
  let s = 0;
  for (let i = 0; i < N; i++) s += f(i);
  return s;
};

compare(
  'text',
  sum((i) => parseIPv4(texts[i] as string)),
  sum((i) => viaIpaddr(texts[i] as string)),
);
compare(
  'cidr',
  sum((i) => {
    const c = cidrs[i] as string;
    return parseIPv4(c, 0, c.indexOf('/'));
  }),
  sum((i) => {
    const c = cidrs[i] as string;
    return viaIpaddr(c.slice(0, c.indexOf('/')));
  }),
);
compare(
  'bytes',
  sum((i) => parseIPv4Bytes(body, starts[i] as number, ends[i] as number)),
  sum((i) => viaIpaddr(body.toString('latin1', starts[i], ends[i]))),
);
const reader = new IPv4BytesReader();
compare(
  'feed',
  () => {
    let s = 0;
    for (let i = 0; i < body.length; ) {
      const address = reader.read(body, i, body.length);
      if (address < 0 || body[reader.end] !== NEWLINE) throw new Error(`not a plain line at ${i}`);
      s += address;
      i = reader.end + 1;
    }
    return s;
  },
  () => {
    let s = 0;
    for (let i = 0; i < body.length; ) {
      const nl = body.indexOf(NEWLINE, i);
      s += viaIpaddr(body.toString('latin1', i, nl));
      i = nl + 1;
    }
    return s;
  },
);
