// The home page's charts as geometry for server-rendered SVG (views/chart-*.eta). Pure. d3-scale picks the
// scales and their round ticks, d3-shape draws the area; the markup is ours and styled by the stylesheet, so
// the charts need no script and no inline style (the CSP allows neither). Chart libraries that render SVG on
// the server (ECharts' SSR, for one) write inline style attributes, which that CSP blocks.
import { scaleLinear, scaleUtc } from 'd3-scale';
import { area, line } from 'd3-shape';

interface Formats {
  number(n: number): string;
  /** A label of the time axis. */
  tick(at: Date): string;
}

export interface Tick {
  at: number;
  label: string;
}

export interface TimeChart {
  width: number;
  height: number;
  /** The plot area inside the axes. */
  left: number;
  right: number;
  top: number;
  bottom: number;
  area: string;
  line: string;
  xTicks: Tick[];
  yTicks: Tick[];
  peak: { attacks: number; hour: Date } | undefined;
}

const TIME = { width: 720, height: 240, top: 12, right: 28, bottom: 28, left: 64 };

/** Attacks per hour as an area over time, with round ticks on both axes. */
export function hourlyChart(series: readonly { hour: Date; attacks: number }[], formats: Formats): TimeChart {
  const { width, height } = TIME;
  const left = TIME.left;
  const right = width - TIME.right;
  const top = TIME.top;
  const bottom = height - TIME.bottom;
  const first = series[0]?.hour ?? new Date(0);
  const last = series[series.length - 1]?.hour ?? first;
  const x = scaleUtc().domain([first, last]).range([left, right]);
  const peak = series.reduce<{ attacks: number; hour: Date } | undefined>((p, d) => (!p || d.attacks > p.attacks ? d : p), undefined);
  const y = scaleLinear()
    .domain([0, Math.max(1, peak?.attacks ?? 0)])
    .nice(4)
    .range([bottom, top]);
  const at = (d: { hour: Date }) => x(d.hour);
  const level = (d: { attacks: number }) => y(d.attacks);
  return {
    width,
    height,
    left,
    right,
    top,
    bottom,
    area: area<{ hour: Date; attacks: number }>().x(at).y0(bottom).y1(level).digits(1)(series) ?? '',
    line: line<{ hour: Date; attacks: number }>().x(at).y(level).digits(1)(series) ?? '',
    xTicks: x.ticks(6).map((d) => ({ at: round(x(d)), label: formats.tick(d) })),
    yTicks: y.ticks(4).map((n) => ({ at: round(y(n)), label: formats.number(n) })),
    peak: peak && peak.attacks > 0 ? peak : undefined,
  };
}

export interface BarChart {
  width: number;
  height: number;
  /** Where the bars start: labels are right-aligned before it. */
  barsAt: number;
  bars: { label: string; value: string; y: number; length: number }[];
  rowHeight: number;
  barHeight: number;
}

const BARS = { width: 480, rowHeight: 30, barHeight: 20, labelWidth: 168, valueWidth: 72 };

/** Horizontal bars, longest first as given, scaled to the largest. */
export function barChart(items: readonly { label: string; value: number }[], formats: Pick<Formats, 'number'>): BarChart {
  const { width, rowHeight, barHeight, labelWidth, valueWidth } = BARS;
  const x = scaleLinear()
    .domain([0, Math.max(1, ...items.map((i) => i.value))])
    .range([0, width - labelWidth - valueWidth]);
  return {
    width,
    height: Math.max(1, items.length) * rowHeight,
    barsAt: labelWidth,
    rowHeight,
    barHeight,
    bars: items.map((item, i) => ({ label: item.label, value: formats.number(item.value), y: i * rowHeight, length: Math.max(1, round(x(item.value))) })),
  };
}

function round(n: number): number {
  return Math.round(n * 10) / 10;
}
