// Recent events in json, csv and txt. Variant A adds the honeypot `command`.
import type { Format } from '../../common/vocabulary.ts';
import type { RecentEvent } from '../query/recent.ts';
import { csvLine } from './csv.ts';

export function formatRecent(events: RecentEvent[], format: Format, withCommand: boolean, generatedAt: string): string {
  const fields = withCommand
    ? (['ts', 'ip', 'country', 'port', 'service', 'source', 'command'] as const)
    : (['ts', 'ip', 'country', 'port', 'service', 'source'] as const);
  const rows = events.map((e) => Object.fromEntries(fields.map((f) => [f, e[f] ?? null])) as Record<string, string | number | null>);
  switch (format) {
    case 'txt':
      return rows.map((r) => `${String(r.ip)}\n`).join('');
    case 'csv':
      return csvLine(fields) + rows.map((r) => csvLine(fields.map((f) => r[f]))).join('');
    case 'json':
      return `${JSON.stringify({ generated_at: generatedAt, count: rows.length, data: rows })}\n`;
  }
}
