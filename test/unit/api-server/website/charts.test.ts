// The charts' geometry: axes with round ticks inside the plot, an area from the first hour to the last,
// bars scaled to the largest.
import { describe, expect, it } from 'vitest';
import { barChart, hourlyChart } from '../../../../api-server/website/charts.ts';

const formats = { number: (n: number) => n.toLocaleString('en'), tick: (d: Date) => d.toISOString().slice(11, 16) };

describe('hourlyChart', () => {
  const start = Date.UTC(2026, 10, 24, 9);
  const series = Array.from({ length: 25 }, (_, i) => ({ hour: new Date(start + i * 3_600_000), attacks: i === 5 ? 229 : 100 }));

  it('spans the plot from the first hour to the last, with round ticks and the peak', () => {
    const c = hourlyChart(series, formats);
    expect(c.line.startsWith(`M${c.left},`)).toBe(true);
    expect(c.line).toMatch(new RegExp(`L${c.right},[\\d.]+$`));
    expect(c.yTicks.map((t) => t.label)).toEqual(['0', '50', '100', '150', '200', '250']);
    expect(c.yTicks[0]?.at).toBe(c.bottom);
    expect(c.yTicks[c.yTicks.length - 1]?.at).toBe(c.top);
    for (const t of c.xTicks) {
      expect(t.at).toBeGreaterThanOrEqual(c.left);
      expect(t.at).toBeLessThanOrEqual(c.right);
    }
    expect(c.xTicks.map((t) => t.label)).toContain('12:00');
    expect(c.peak).toEqual({ hour: new Date(start + 5 * 3_600_000), attacks: 229 });
  });

  it('draws an empty window flat, without a peak', () => {
    const c = hourlyChart(series.map((d) => ({ ...d, attacks: 0 })), formats);
    expect(c.peak).toBeUndefined();
    expect(c.line).not.toMatch(/NaN/);
    expect(new Set(c.line.match(/,[\d.]+/g))).toEqual(new Set([`,${c.bottom}`]));
  });
});

describe('barChart', () => {
  it('gives the largest value the whole length and every bar a row', () => {
    const c = barChart([{ label: 'China', value: 2681 }, { label: 'United States', value: 907 }, { label: 'Nowhere', value: 0 }], formats);
    const full = c.width - c.barsAt - 72;
    expect(c.bars.map((b) => [b.label, b.value, b.y])).toEqual([['China', '2,681', 0], ['United States', '907', c.rowHeight], ['Nowhere', '0', 2 * c.rowHeight]]);
    expect(c.bars[0]?.length).toBe(full);
    expect(c.bars[1]?.length).toBeCloseTo((full * 907) / 2681, 0);
    expect(c.bars[2]?.length).toBe(1);
    expect(c.height).toBe(3 * c.rowHeight);
  });
});
