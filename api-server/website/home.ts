// The public home page: the statistics of /api/stats (the same query) for a window, drawn as charts —
// attacks per hour, top countries, top ports — each with its numbers in a table for screen readers and
// for anyone who wants them.
import type { FastifyInstance } from 'fastify';
import type pg from 'pg';
import { queryHourlyAttacks, queryStats, type HourlyAttacks, type StatsDocument } from '../query/stats.ts';
import { readFromStandbys, type StorePools } from '../store/database.ts';
import { barChart, hourlyChart } from './charts.ts';
import { sendPage } from './pages.ts';
import type { SiteDeps } from './site.ts';

/** The windows offered: a day, a week, the 30 days the store keeps. */
export const HOME_WINDOWS = [24, 168, 720] as const;

/** How long one window's figures are reused: the page is live to the minute without a query per visit. */
const REFRESH_MS = 60_000;

interface Figures {
  stats: StatsDocument;
  hourly: HourlyAttacks[];
}

/** One query at a time per window, shared by every visitor until it is a minute old; on the standbys if any. */
function figuresCache(pools: StorePools, clock: () => Date): (hours: number) => Promise<Figures> {
  const kept = new Map<number, { until: number; figures: Promise<Figures> }>();
  return (hours) => {
    const now = clock();
    const entry = kept.get(hours);
    if (entry && entry.until > now.getTime()) return entry.figures;
    const read = (pool: pg.Pool) => Promise.all([queryStats(pool, now, hours), queryHourlyAttacks(pool, now, hours)]).then(([stats, hourly]) => ({ stats, hourly }));
    const figures = readFromStandbys(pools, read);
    kept.set(hours, { until: now.getTime() + REFRESH_MS, figures });
    figures.catch(() => kept.delete(hours));
    return figures;
  };
}

export async function homePage(app: FastifyInstance, { pool, readPool, clock }: SiteDeps): Promise<void> {
  const figuresFor = figuresCache({ pool, readPool }, clock);

  app.get('/', async (req, reply) => {
    const asked = Number((req.query as { hours?: unknown }).hours);
    const hours = HOME_WINDOWS.find((h) => h === asked) ?? 24;
    const { stats, hourly } = await figuresFor(hours);
    const f = req.visit.locale;
    const countries = stats.top_countries.map((c) => ({ ...c, name: f.country(c.country) }));
    const ports = stats.top_ports.map((p) => ({ ...p, label: p.service ? `${p.port} (${p.service})` : String(p.port) }));
    return sendPage(reply, 'home', req.visit, { title: f.t.home.title }, {
      hours,
      windows: HOME_WINDOWS,
      stats,
      hourly,
      countries,
      ports,
      perHour: hourlyChart(hourly, f),
      countryChart: barChart(countries.map((c) => ({ label: c.name, value: c.attacks })), f),
      portChart: barChart(ports.map((p) => ({ label: p.label, value: p.attacks })), f),
    });
  });
}
