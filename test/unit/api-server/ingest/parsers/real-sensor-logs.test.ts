// The real logs of test/fixtures/sensor-logs/ (written by Cowrie and OpenCanary under hydra and ssh; see its
// README), parsed without a database: what the integration test real-sensors.test.ts checks against the
// programs themselves. Every attack line becomes the event test/support/sensor-logs.ts says, housekeeping is
// skipped, nothing is rejected, and attempts alike to the millisecond on different connections get ids of
// their own, the same ones every time.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { AttackEvent } from '../../../../../api-server/ingest/event.ts';
import { parserFor, type InputFormat } from '../../../../../api-server/ingest/parsers/index.ts';
import { expectCowrie, expectOpenCanary, sortedEvents, type ExpectedEvent, type Expectation } from '../../../../support/sensor-logs.ts';

const fixture = (name: string) => readFileSync(fileURLToPath(new URL(`../../../../fixtures/sensor-logs/${name}`, import.meta.url)), 'utf8');

function parse(text: string, format: InputFormat): { events: AttackEvent[]; skipped: number; errors: string[] } {
  const parser = parserFor(format);
  const events: AttackEvent[] = [];
  const errors: string[] = [];
  let skipped = 0;
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    const r = parser.line(line);
    if ('event' in r) events.push(r.event);
    else if ('error' in r) errors.push(`${i + 1}: ${r.error}`);
    else skipped++;
  });
  return { events, skipped, errors };
}

const facts = (e: AttackEvent): ExpectedEvent => ({
  ts: e.ts, src: e.src.text, dstPort: e.dstPort, service: e.service, action: e.action, username: e.username, command: e.command,
});

/** Groups of attack lines alike in everything a row stores: one event each before ids counted connections. */
function twinGroups(events: readonly ExpectedEvent[]): number {
  const counts = new Map<string, number>();
  for (const e of events) counts.set(JSON.stringify(e), (counts.get(JSON.stringify(e)) ?? 0) + 1);
  return [...counts.values()].filter((n) => n > 1).length;
}

describe.each([
  { file: 'cowrie-3.1.4.json', format: 'cowrie', expect: expectCowrie, lines: 128, events: 58, twins: 5 },
  { file: 'opencanary-0.9.10.json', format: 'opencanary', expect: expectOpenCanary, lines: 124, events: 108, twins: 25 },
] as const)('the real log $file', ({ file, format, expect: rules, lines, events: attacks, twins }) => {
  const text = fixture(file);
  const expected: Expectation = rules(text);

  it('stores every attack line with its source, port, service, username and command; skips housekeeping; rejects none', () => {
    const { events, skipped, errors } = parse(text, format);
    expect(errors).toEqual([]);
    expect(events.length + skipped).toBe(lines);
    expect(events).toHaveLength(attacks);
    expect(skipped).toBe(expected.housekeeping);
    expect(sortedEvents(events.map(facts))).toEqual(sortedEvents(expected.events));
  });

  it('gives hydra’s attempts alike to the millisecond an id each, and the same ids on every read', () => {
    expect(twinGroups(expected.events)).toBe(twins);
    const first = parse(text, format).events.map((e) => e.id);
    expect(new Set(first).size).toBe(attacks);
    expect(parse(text, format).events.map((e) => e.id)).toEqual(first);
  });
});
