// What each list endpoint selects, as a ListFilter, and the instant a list describes (pure). See docs/http-api.md:
// research scanners only when named or with include_research=1; dedup merges scan sources unless include_scan=0.
import type { FilterQuery } from '../../common/list-filters.ts';
import type { ListFilter } from './list-sql.ts';

/** The instant a list describes: now, down to the whole minute (so replicas and repeated requests agree). */
export function listInstant(now: Date): Date {
  return new Date(Math.floor(now.getTime() / 60_000) * 60_000);
}

function windowStart(now: Date, hours: number): Date {
  return new Date(now.getTime() - hours * 3_600_000);
}

export function dedupFilter(q: Pick<FilterQuery<'dedup'>, 'hours'> & Partial<FilterQuery<'dedup'>>, now: Date): ListFilter {
  return {
    asOf: now,
    since: windowStart(now, q.hours),
    basis: (q.include_scan ?? 1) === 1 ? 'any' : 'honeypot',
    includeResearch: q.include_research === 1,
  };
}

export function exportFilter(q: FilterQuery<'export'>, now: Date): ListFilter {
  return {
    asOf: now,
    since: windowStart(now, q.hours),
    basis: q.source === 'all' ? 'any' : q.source,
    type: q.type === 'all' ? undefined : q.type,
    service: q.service === 'all' ? undefined : q.service,
    level: q.level === 'all' ? undefined : q.level,
    precision: q.precision,
    net: q.net,
    isp: q.isp,
    province: q.province,
    includeResearch: q.include_research === 1,
  };
}

export function scanExportFilter(q: FilterQuery<'scan-export'>, now: Date): ListFilter {
  return {
    asOf: now,
    since: windowStart(now, q.hours),
    basis: 'telescope',
    level: q.level === 'all' ? undefined : q.level,
    includeResearch: q.include_research === 1,
  };
}
