// The window planner: each hour from the coarsest complete rollup, ragged edges and gaps raw, and every
// hour of the window exactly once.
import { describe, expect, it } from 'vitest';
import { completeHoursOf, DAY, HOUR, hourlyRanges, planWindow, type WindowPlan } from '../../../../api-server/query/rollups.ts';

const D0 = Date.UTC(2026, 10, 1);
const hoursFrom = (from: number, count: number) => Array.from({ length: count }, (_, i) => from + i * HOUR);

/** Every hour the plan covers up to `until`, as [start, how] pairs. */
function covered(plan: WindowPlan, until: number): [number, string][] {
  const out: [number, string][] = [];
  for (const d of plan.days) for (const h of hoursFrom(d, 24)) out.push([h, 'day']);
  for (const h of plan.hours) out.push([h, 'hour']);
  for (const r of plan.raw) for (let h = r.from; h < (r.to ?? until); h += HOUR) out.push([h, 'raw']);
  return out.sort((a, b) => a[0] - b[0]);
}

describe('planWindow', () => {
  it('takes whole complete days from the day rollup and the edges from the hours', () => {
    // Three complete days, the window starting at 05:00 of the first.
    const complete = new Set(hoursFrom(D0, 72));
    const plan = planWindow(D0 + 5 * HOUR, complete);
    expect(plan.days).toEqual([D0 + DAY, D0 + 2 * DAY]);
    expect(plan.hours).toEqual(hoursFrom(D0 + 5 * HOUR, 19));
    expect(plan.raw).toEqual([{ from: D0 + 3 * DAY }]);
  });

  it('reads a day with an incomplete hour by its hours, that hour raw', () => {
    const complete = new Set(hoursFrom(D0, 48));
    complete.delete(D0 + 30 * HOUR);
    const plan = planWindow(D0, complete);
    expect(plan.days).toEqual([D0]);
    expect(plan.raw).toEqual([{ from: D0 + 30 * HOUR, to: D0 + 31 * HOUR }, { from: D0 + 2 * DAY }]);
    expect(hourlyRanges(plan)).toEqual([{ from: D0 + DAY }]);
  });

  it('covers every hour of the window once, whatever is complete', () => {
    const start = D0 + 7 * HOUR;
    const until = D0 + 5 * DAY;
    // Every third hour missing on day 2, day 4 missing entirely.
    const complete = new Set(hoursFrom(D0, 5 * 24).filter((h) => !(h >= D0 + 2 * DAY && h < D0 + 3 * DAY && (h / HOUR) % 3 === 0) && !(h >= D0 + 4 * DAY)));
    const plan = planWindow(start, complete);
    const hours = covered(plan, until).map(([h]) => h);
    expect(hours).toEqual(hoursFrom(start, (until - start) / HOUR));
    expect(completeHoursOf(plan).every((h) => complete.has(h))).toBe(true);
  });

  it('reads everything raw when nothing is complete', () => {
    expect(planWindow(D0, new Set())).toEqual({ days: [], hours: [], raw: [{ from: D0 }] });
  });
});
