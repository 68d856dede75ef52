import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CRD_PATH, crdYaml } from '../../../../hack/generate-crd.ts';
import { LIST_ENDPOINTS, filtersOf } from '../../../../common/list-filters.ts';
import { LEVELS, SERVICES } from '../../../../common/vocabulary.ts';

interface Schema {
  type?: string;
  enum?: string[];
  description?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  additionalProperties?: Schema | boolean;
  anyOf?: Schema[];
  'x-kubernetes-validations'?: { rule: string; message: string }[];
}

function specSchema(): Schema {
  const crd = parse(crdYaml()) as { spec: { versions: { schema: { openAPIV3Schema: Schema } }[] } };
  return crd.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!;
}

function walk(schema: Schema, path: string, visit: (s: Schema, path: string) => void): void {
  visit(schema, path);
  for (const [k, s] of Object.entries(schema.properties ?? {})) walk(s, `${path}.${k}`, visit);
  if (schema.items) walk(schema.items, `${path}[]`, visit);
}

describe('BlocklistSubscription CRD', () => {
  it('is checked in exactly as generated (run `make crds` after changing api/v1alpha1/)', () => {
    expect(readFileSync(CRD_PATH, 'utf8')).toBe(crdYaml());
  });

  it('is structural: every node has a type and a description, no anyOf', () => {
    walk(specSchema(), 'spec', (s, path) => {
      expect(s.type, path).toBeTypeOf('string');
      expect(s.anyOf, path).toBeUndefined();
      if (!path.includes('matchExpressions') && !path.endsWith('[]')) expect(s.description, path).toBeTruthy();
    });
  });

  it('takes its enums from the shared vocabulary', () => {
    const filters = specSchema().properties!.feed!.properties!.filters!.properties!;
    expect(filters.service!.enum).toEqual(['all', ...SERVICES]);
    expect(filters.level!.enum).toEqual(['all', ...LEVELS]);
  });

  it('has a CEL rule per endpoint naming its filters', () => {
    const rules = specSchema().properties!.feed!['x-kubernetes-validations']!;
    for (const endpoint of LIST_ENDPOINTS) {
      expect(rules.some((r) => r.message === `endpoint ${endpoint} accepts only the filters: ${filtersOf(endpoint).join(', ')}`)).toBe(true);
    }
  });
});
