// Address records in the three list formats (docs/http-api.md "Formats"). Pure: the query layer supplies
// records in address order, these functions only turn them into text.
import type { AddressRecord } from '../query/list-sql.ts';
import { csvLine } from './csv.ts';

/** Field order of csv columns and json members: one list so both formats always agree. */
export const RECORD_FIELDS = [
  'ip', 'first_seen', 'last_seen', 'attacks', 'type', 'level', 'precision',
  'sources', 'services', 'ports', 'country', 'province', 'isp', 'net', 'asn',
] as const satisfies readonly (keyof AddressRecord)[];

export function csvHeader(): string {
  return csvLine(RECORD_FIELDS);
}

export function csvRecord(record: AddressRecord): string {
  return csvLine(RECORD_FIELDS.map((f) => record[f]));
}

export function jsonRecord(record: AddressRecord): string {
  const ordered: Record<string, unknown> = {};
  for (const f of RECORD_FIELDS) ordered[f] = record[f];
  return JSON.stringify(ordered);
}

export interface ListEnvelope {
  generated_at: string;
  window_hours: number;
  count: number;
  truncated: boolean;
}

/** The json envelope up to the opening of `data`; records follow separated by commas, then jsonClose(). */
export function jsonOpen(envelope: ListEnvelope): string {
  const head = JSON.stringify({
    generated_at: envelope.generated_at,
    window_hours: envelope.window_hours,
    count: envelope.count,
    truncated: envelope.truncated,
  });
  return `${head.slice(0, -1)},"data":[`;
}

export function jsonClose(): string {
  return ']}\n';
}
