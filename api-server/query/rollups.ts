// Which rows answer a window (docs/data-model.md "Rollups"): the hours from the one containing the window's
// start on, each from the coarsest rollup complete for it — a UTC day's rollup when all 24 of its hours are
// complete, an hour's totals, else the hourly rows and events themselves ("raw"). Pure: the complete hours
// are read from rollup_hours in the reader's snapshot and handed in.
import type pg from 'pg';
import { timestampLiteral } from './list-sql.ts';

export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;

/** The start of the UTC hour containing `at` (ms): ip_hourly's hours are UTC-aligned. */
export function hourOf(at: Date): number {
  return Math.floor(at.getTime() / HOUR) * HOUR;
}

/** The hours from `from` (ms) on whose rollups are complete (rollup_hours), in the caller's snapshot. */
export async function completeHours(db: pg.Pool | pg.ClientBase, from: number): Promise<Set<number>> {
  const { rows } = await db.query<{ h: number }>('select extract(epoch from hour)::float8 * 1000 as h from rollup_hours where hour >= $1', [new Date(from)]);
  return new Set(rows.map((r) => r.h));
}

/** A span of hours read raw: [from, to), `to` undefined = open-ended (everything later, the future included). */
export interface RawRange {
  from: number;
  to?: number;
}

export interface WindowPlan {
  /** Starts (ms) of the UTC days answered by their day rollup, ascending. */
  days: number[];
  /** Starts of the complete hours outside those days, ascending. */
  hours: number[];
  /** The rest, ascending; the last range is open-ended. */
  raw: RawRange[];
}

/** The hours from `start` (hour-aligned, ms) on, each from the coarsest complete rollup of `complete`. */
export function planWindow(start: number, complete: ReadonlySet<number>): WindowPlan {
  const plan: WindowPlan = { days: [], hours: [], raw: [] };
  let last = -Infinity;
  for (const h of complete) if (h > last) last = h;
  let rawFrom: number | undefined;
  const closeRaw = (to: number) => {
    if (rawFrom !== undefined) plan.raw.push({ from: rawFrom, to });
    rawFrom = undefined;
  };
  let h = start;
  while (h <= last) {
    if (h % DAY === 0 && wholeDay(h, complete)) {
      closeRaw(h);
      plan.days.push(h);
      h += DAY;
    } else if (complete.has(h)) {
      closeRaw(h);
      plan.hours.push(h);
      h += HOUR;
    } else {
      rawFrom ??= h;
      h += HOUR;
    }
  }
  plan.raw.push({ from: rawFrom ?? h });
  return plan;
}

function wholeDay(day: number, complete: ReadonlySet<number>): boolean {
  for (let h = day; h < day + DAY; h += HOUR) if (!complete.has(h)) return false;
  return true;
}

/** The plan that reads everything raw: the hourly rows and events alone, as before there were rollups. */
export function rawPlan(start: number): WindowPlan {
  return { days: [], hours: [], raw: [{ from: start }] };
}

/** Contiguous runs of equally spaced starts, as [first, end) pairs. */
function runs(starts: readonly number[], step: number): [number, number][] {
  const out: [number, number][] = [];
  for (const s of starts) {
    const run = out.at(-1);
    if (run && run[1] === s) run[1] = s + step;
    else out.push([s, s + step]);
  }
  return out;
}

const dateLiteral = (ms: number) => `'${new Date(ms).toISOString().slice(0, 10)}'::date`;

/** SQL: `column` within [from, to) (timestamps); open-ended without `to`. Literal bounds prune partitions. */
export function rangeSql(column: string, { from, to }: RawRange): string {
  return `${column} >= ${timestampLiteral(new Date(from))}${to === undefined ? '' : ` and ${column} < ${timestampLiteral(new Date(to))}`}`;
}

/**
 * Every hour of the plan that the day rollups do not cover, as [from, to) ranges of the hourly rows: what a
 * reader with no hour-level rollup of its own (the lists) reads from ip_hourly.
 */
export function hourlyRanges(plan: WindowPlan): RawRange[] {
  const ranges = [...runs(plan.hours, HOUR).map(([from, to]) => ({ from, to })), ...plan.raw].sort((a, b) => a.from - b.from);
  const merged: RawRange[] = [];
  for (const r of ranges) {
    const prev = merged.at(-1);
    if (prev && prev.to === r.from) prev.to = r.to;
    else merged.push({ ...r });
  }
  return merged;
}

/**
 * SQL: the rollup rows (ip, attacks, ports) of the plan, what a list counts an address's attacks and ports
 * over: ip_daily for its days, ip_hourly for the rest. One branch per contiguous run, each with literal
 * bounds, so that PostgreSQL reads only the partitions in the window.
 */
export function windowRowsSql(plan: WindowPlan): string {
  const daily = runs(plan.days, DAY).map(([from, to]) => `select ip, attacks, ports from ip_daily where day >= ${dateLiteral(from)} and day < ${dateLiteral(to)}`);
  const hourly = hourlyRanges(plan).map((r) => `select ip, attacks, ports from ip_hourly where ${rangeSql('hour', r)}`);
  return [...daily, ...hourly].join('\n    union all ');
}

/** SQL: the rows of a totals table (attack_totals, port_totals) for these complete days and hours. */
export function totalsSql(days: readonly number[], hours: readonly number[]): string {
  const list = (starts: readonly number[]) => `'{${starts.map((s) => new Date(s).toISOString()).join(',')}}'::timestamptz[]`;
  const conds: string[] = [];
  if (days.length) conds.push(`(hours = 24 and period = any(${list(days)}))`);
  if (hours.length) conds.push(`(hours = 1 and period = any(${list(hours)}))`);
  return conds.length ? conds.join(' or ') : 'false';
}

/** Every complete hour of the plan, its days' hours included, ascending. */
export function completeHoursOf(plan: WindowPlan): number[] {
  const dayHours = plan.days.flatMap((d) => Array.from({ length: 24 }, (_, i) => d + i * HOUR));
  return [...dayHours, ...plan.hours].sort((a, b) => a - b);
}
