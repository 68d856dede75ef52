import { describe, expect, it } from 'vitest';
import { addressPools, demoEvents } from '../../../../api-server/demo/generate.ts';
import { loadScannerOrganisations } from '../../../../api-server/enrich/curated.ts';
import { Enricher } from '../../../../api-server/enrich/enricher.ts';

const enricher = new Enricher();
const pools = addressPools(enricher.regions.rangesV4(), loadScannerOrganisations());
const NOW = Date.UTC(2026, 10, 22, 12);
const generate = (seed: number) => [...demoEvents(pools, { events: 20_000, days: 7, seed, now: NOW }, 5_000)].flat();

describe('demo events', () => {
  const events = generate(1);

  it('are reproducible from the seed and differ between seeds', () => {
    expect(generate(1).map((e) => e.id)).toEqual(events.map((e) => e.id));
    expect(generate(2).map((e) => e.id)).not.toEqual(events.map((e) => e.id));
  });

  it('stay inside the window and use the vocabulary', () => {
    expect(events).toHaveLength(20_000);
    expect(events.every((e) => e.ts <= NOW && e.ts >= NOW - 7 * 86_400_000)).toBe(true);
    expect(new Set(events.map((e) => e.service)).size).toBe(11);
  });

  it('are heavy-tailed: the busiest tenth of attackers send most events', () => {
    const perIp = new Map<string, number>();
    for (const e of events) perIp.set(e.src.text, (perIp.get(e.src.text) ?? 0) + 1);
    const counts = [...perIp.values()].sort((a, b) => b - a);
    const top = counts.slice(0, Math.ceil(counts.length / 10)).reduce((a, b) => a + b, 0);
    expect(top / events.length).toBeGreaterThan(0.5);
  });

  it('come from Chinese carriers, education and cloud networks and the rest of the world, and from research scanners', () => {
    const facts = new Map(events.map((e) => [e.src.text, enricher.enrich(e.src)]));
    const all = [...facts.values()];
    for (const isp of ['电信', '联通', '移动'] as const) expect(all.some((x) => x.country === 'CN' && x.isp === isp && x.province)).toBe(true);
    expect(all.some((x) => x.country === 'CN' && x.net === 'edu')).toBe(true);
    expect(all.some((x) => x.country === 'CN' && x.net === 'idc')).toBe(true);
    expect(new Set(all.map((x) => x.country)).size).toBeGreaterThan(10);
    expect(all.some((x) => x.scannerKind === 'research_scanner')).toBe(true);
  });

  it('hold telescope-only scanners, multi-sensor sightings and every action', () => {
    const sources = new Map<string, Set<string>>();
    const sensors = new Map<string, Set<string>>();
    for (const e of events) {
      sources.set(e.src.text, (sources.get(e.src.text) ?? new Set()).add(e.source));
      sensors.set(e.src.text, (sensors.get(e.src.text) ?? new Set()).add(e.sensor));
    }
    const sets = [...sources.values()];
    expect(sets.some((s) => s.size === 1 && s.has('telescope'))).toBe(true);
    expect(sets.some((s) => s.size === 2)).toBe(true);
    expect([...sensors.values()].some((s) => [...s].filter((x) => x.startsWith('hp-')).length >= 2)).toBe(true);
    expect(new Set(events.map((e) => e.action))).toEqual(new Set([0, 1, 2]));
  });
});
