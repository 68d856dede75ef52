// The check's answer (query/check.ts) as json or txt (docs/http-api.md "The check"). Pure. Times are ISO 8601
// UTC. txt is one `name: value` a line; text that came from outside (enrichment names) is written with control
// and format characters as escapes, so that no line can be split or a terminal steered.
import type { AddressCheck, AddressFacts } from '../query/check.ts';
import type { CheckFormat } from '../query/endpoint-params.ts';

const iso = (at: Date | null | undefined): string | null => (at ? `${at.toISOString().slice(0, 19)}Z` : null);

function factsJson(f: AddressFacts) {
  return {
    first_seen: iso(f.firstSeen),
    last_seen: iso(f.lastSeen),
    sources: f.sources.map((s) => ({ source: s.source, last_seen: iso(s.lastSeen) })),
    services: f.services.map((s) => ({ service: s.service, last_seen: iso(s.lastSeen) })),
    last_interaction: iso(f.lastInteraction),
    last_authentication: iso(f.lastAuthentication),
    last_command: iso(f.lastCommand),
    sightings: f.sightings.map((at) => ({ last_seen: iso(at) })),
    confirmed_at: iso(f.confirmedAt),
    windows: f.windows.map((w) => ({ hours: w.hours, seen: w.seen, type: w.type, level: w.level, precision: w.precision })),
    country: f.country,
    province: f.province,
    city: f.city,
    carrier: f.carrier,
    isp: f.isp,
    asn: f.asn,
    as_name: f.asName,
    net: f.net,
    scanner: f.scanner,
    research_scanner: f.scanner?.kind === 'research_scanner',
  };
}

/** The answer as a JSON document (field names as in docs/http-api.md). */
export function checkJson(c: AddressCheck) {
  return {
    ip: c.ip,
    checked_at: iso(c.checkedAt),
    listed: c.listed,
    lists: c.lists.map((l) => ({ list: l.list, hours: l.hours, ...(l.type ? { type: l.type } : {}), listed: l.listed })),
    never_block: c.neverBlock,
    excluded: c.excluded && { network: c.excluded.network, since: iso(c.excluded.since), until: iso(c.excluded.until), source: c.excluded.source },
    seen: c.facts !== null,
    ...(c.facts ? factsJson(c.facts) : {}),
  };
}

const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Zl}\p{Zp}\\]/gu;

function txtValue(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  return String(value).replace(UNPRINTABLE, (ch) => (ch === '\\' ? '\\\\' : `\\u{${(ch.codePointAt(0) ?? 0).toString(16)}}`));
}

/** The answer as lines of `name: value` (yes/no, `-` for nothing). */
export function checkTxt(c: AddressCheck): string {
  const lines: [string, string | number | boolean | null][] = [
    ['ip', c.ip],
    ['checked_at', iso(c.checkedAt)],
    ['listed', c.listed],
    ...c.lists.map((l): [string, boolean] => [`list ${l.list} hours=${l.hours}${l.type ? ` type=${l.type}` : ''}`, l.listed]),
    ['never_block', c.neverBlock],
    ['excluded', c.excluded !== null],
  ];
  if (c.excluded) {
    lines.push(['excluded_network', c.excluded.network], ['excluded_since', iso(c.excluded.since)], ['excluded_until', iso(c.excluded.until)], ['excluded_source', c.excluded.source]);
  }
  lines.push(['seen', c.facts !== null]);
  const f = c.facts;
  if (f) {
    lines.push(['first_seen', iso(f.firstSeen)], ['last_seen', iso(f.lastSeen)]);
    for (const s of f.sources) lines.push([`source ${s.source} last_seen`, iso(s.lastSeen)]);
    for (const s of f.services) lines.push([`service ${s.service} last_seen`, iso(s.lastSeen)]);
    lines.push(['last_interaction', iso(f.lastInteraction)], ['last_authentication', iso(f.lastAuthentication)], ['last_command', iso(f.lastCommand)]);
    lines.push(['sightings', f.sightings.map(iso).join(' ') || null], ['confirmed_at', iso(f.confirmedAt)]);
    for (const w of f.windows) lines.push([`window hours=${w.hours}`, w.seen ? `type=${w.type} level=${w.level} precision=${w.precision}` : 'not seen']);
    lines.push(
      ['country', f.country], ['province', f.province], ['city', f.city], ['carrier', f.carrier], ['isp', f.isp],
      ['asn', f.asn], ['as_name', f.asName], ['net', f.net], ['scanner', f.scanner ? `${f.scanner.kind} ${f.scanner.org ?? ''}`.trim() : null],
      ['research_scanner', f.scanner?.kind === 'research_scanner'],
    );
  }
  return lines.map(([name, value]) => `${name}: ${txtValue(value)}\n`).join('');
}

export function renderCheck(c: AddressCheck, format: CheckFormat): string {
  return format === 'txt' ? checkTxt(c) : `${JSON.stringify(checkJson(c))}\n`;
}
