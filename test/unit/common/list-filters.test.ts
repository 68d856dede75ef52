// The CRD users install and the API's validation are two artifacts derived from one table
// (common/list-filters.ts); this holds them to each other: every filter value a subscription may carry for an
// endpoint becomes a URL the api-server accepts, and every filter the api-server takes can be asked for.
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { crdYaml } from '../../../hack/generate-crd.ts';
import { DedupParams, ExportParams, ScanExportParams } from '../../../api-server/query/endpoint-params.ts';
import { parseQuery } from '../../../api-server/query/validate-query.ts';
import { LIST_ENDPOINTS, listUrl, type ListEndpoint } from '../../../common/list-filters.ts';

interface Schema {
  type?: string;
  enum?: string[];
  minimum?: number;
  maximum?: number;
  properties?: Record<string, Schema>;
  'x-kubernetes-validations'?: { rule: string; message: string }[];
}

const API_SCHEMAS = { dedup: DedupParams, export: ExportParams, 'scan-export': ScanExportParams };
const OUTPUT_PARAMS = new Set(['format', 'download', 'key']);

const feedSchema = (parse(crdYaml()) as { spec: { versions: { schema: { openAPIV3Schema: Schema } }[] } }).spec.versions[0]!.schema
  .openAPIV3Schema.properties!.spec!.properties!.feed!;
const crdFilters = feedSchema.properties!.filters!.properties!;
const rules = feedSchema['x-kubernetes-validations']!;

/** The filters the CRD's CEL rules let an endpoint carry: all but those its rule forbids. */
function crdFiltersOf(endpoint: ListEndpoint): string[] {
  const rule = rules.find((r) => r.rule.startsWith(`self.endpoint != '${endpoint}'`) && r.rule.includes('!('))!.rule;
  const forbidden = [...rule.matchAll(/has\(self\.filters\.(\w+)\)/g)].map((m) => m[1]);
  return Object.keys(crdFilters).filter((name) => !forbidden.includes(name));
}

function crdMaxHours(endpoint: ListEndpoint): number {
  const rule = rules.find((r) => r.rule.startsWith(`self.endpoint != '${endpoint}'`) && r.rule.includes('self.filters.hours <='))!.rule;
  return Number(/self\.filters\.hours <= (\d+)/.exec(rule)![1]);
}

/** Every value the CRD schema lets a filter hold on an endpoint (ranges by their bounds). */
function crdValues(schema: Schema, endpoint: ListEndpoint): (string | number | boolean)[] {
  if (schema.enum) return schema.enum;
  if (schema.type === 'boolean') return [true, false];
  if (schema.type === 'integer') return [schema.minimum!, Math.min(schema.maximum!, crdMaxHours(endpoint))];
  throw new Error(`unexpected filter schema ${JSON.stringify(schema)}`);
}

describe('the list filters of the CRD and of the API', () => {
  for (const endpoint of LIST_ENDPOINTS) {
    it(`${endpoint}: every filter value a subscription may hold is a query the api-server accepts`, () => {
      const names = crdFiltersOf(endpoint);
      expect(names.length).toBeGreaterThan(0);
      for (const name of names) {
        for (const value of crdValues(crdFilters[name]!, endpoint)) {
          const url = listUrl({ url: 'http://blockfeed.example', endpoint, filters: { [name]: value } });
          expect(url.pathname).toBe(`/api/${endpoint}`);
          const result = parseQuery(API_SCHEMAS[endpoint], Object.fromEntries(url.searchParams));
          expect(result, `${name}=${String(value)} → ${url.search}`).toMatchObject({ ok: true });
        }
      }
    });

    it(`${endpoint}: every filter the api-server takes can be set in a subscription`, () => {
      const asked = new Set(
        crdFiltersOf(endpoint).flatMap((name) => [...listUrl({ url: 'http://x', endpoint, filters: { [name]: crdValues(crdFilters[name]!, endpoint)[0]! } }).searchParams.keys()]),
      );
      const taken = Object.keys(API_SCHEMAS[endpoint].properties).filter((p) => !OUTPUT_PARAMS.has(p));
      expect([...asked].filter((p) => p !== 'format').sort()).toEqual(taken.sort());
    });
  }

  it('refuses to build a URL with a filter the endpoint does not take', () => {
    expect(() => listUrl({ url: 'http://x', endpoint: 'dedup', filters: { service: 'ssh' } })).toThrow(/does not take the filter service/);
  });
});
