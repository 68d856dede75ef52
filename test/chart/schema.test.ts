// values.schema.json covers every value of values.yaml, each with a description, and nothing else.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { CHART } from '../support/helm.ts';

interface SchemaNode {
  type?: string;
  description?: string;
  properties?: Record<string, SchemaNode>;
  additionalProperties?: boolean | SchemaNode;
}

const values = parse(readFileSync(path.join(CHART, 'values.yaml'), 'utf8')) as Record<string, unknown>;
const schema = JSON.parse(readFileSync(path.join(CHART, 'values.schema.json'), 'utf8')) as SchemaNode;

/** Paths of values.yaml that the schema does not describe, and schema properties values.yaml lacks. */
function compare(value: unknown, node: SchemaNode, at: string, problems: string[]): void {
  if (at && !node.description) problems.push(`${at}: no description`);
  if (!node.properties) return; // a free-form map (labels, resources, affinity, ...) or a scalar
  if (node.additionalProperties !== false) problems.push(`${at || '(root)'}: accepts unknown keys`);
  const object = (value ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(object)) {
    const child = node.properties[key];
    if (!child) problems.push(`${at}${at ? '.' : ''}${key}: not in the schema`);
    else compare(object[key], child, `${at}${at ? '.' : ''}${key}`, problems);
  }
  // An empty map in values.yaml means "unset: the program's defaults" (api.cache.lifetimes); its keys are optional.
  if (Object.keys(object).length === 0) return;
  for (const key of Object.keys(node.properties)) {
    if (!(key in object)) problems.push(`${at}${at ? '.' : ''}${key}: in the schema but not in values.yaml`);
  }
}

describe('values.schema.json', () => {
  it('describes every value of values.yaml and refuses unknown keys', () => {
    const problems: string[] = [];
    compare(values, schema, '', problems);
    expect(problems).toEqual([]);
  });
});
