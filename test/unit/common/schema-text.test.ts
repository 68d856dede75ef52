import Type from 'typebox';
import { Check } from 'typebox/schema';
import { describe, expect, it } from 'vitest';
import { ConfigSchema } from '../../../common/config.ts';
import { allowedValues, allows, describeAllowed, type JsonSchemaLike } from '../../../common/schema-text.ts';

describe('describeAllowed', () => {
  it.each([
    [Type.Enum(['txt', 'csv', 'json']), 'one of: txt, csv, json'],
    [Type.Union([Type.Literal('0'), Type.Literal('1')]), 'one of: 0, 1'],
    [Type.Integer({ minimum: 1, maximum: 168 }), 'an integer from 1 to 168'],
    [Type.Integer({ minimum: 5 }), 'an integer >= 5'],
    [Type.Boolean(), 'true or false'],
    [Type.String({ pattern: '^a$' }), 'a string matching ^a$'],
  ])('%j', (schema, text) => {
    expect(describeAllowed(schema)).toBe(text);
  });

  it('has no closed set for open types', () => {
    expect(allowedValues(Type.String())).toBeUndefined();
  });
});

describe('allows', () => {
  it.each([
    [{ type: 'integer', minimum: 0, maximum: 10 }, [0, 10, 5], [-1, 11, 1.5, '5', null]],
    [{ type: 'number', minimum: 0.5 }, [0.5, 2], [0.4, Number.NaN, '1']],
    [{ type: 'string', minLength: 2, maxLength: 3 }, ['ab', 'abc', 'äö'], ['a', 'abcd', 12]],
    [{ type: 'string', pattern: '^postgres(ql)?://' }, ['postgres://x', 'postgresql://'], ['mysql://x', ' postgres://']],
    [{ enum: ['a', 'b'] }, ['a', 'b'], ['c', 0, null]],
    [{ const: 1 }, [1], [2, '1']],
    [{ anyOf: [{ type: 'integer' }, { type: 'string', minLength: 1 }] }, [3, 'x'], ['', 1.5]],
    [{ type: 'array', items: { type: 'string', pattern: '^[a-z]+$' } }, [[], ['ab', 'c']], [['A'], 'ab', [1]]],
    [{ type: ['string', 'null'] }, ['', null], [0]],
    [{ type: 'boolean' }, [true, false], ['true', 0]],
  ] as [JsonSchemaLike, unknown[], unknown[]][])('%j', (schema, good, bad) => {
    for (const v of good) expect(allows(schema, v), JSON.stringify(v)).toBe(true);
    for (const v of bad) expect(allows(schema, v), JSON.stringify(v)).toBe(false);
  });

  it('refuses to pass a keyword it does not check', () => {
    expect(() => allows({ type: 'string', format: 'uri' }, 'x')).toThrow('format');
  });

  // The configuration is checked with allows(): for every setting it must agree with a JSON Schema
  // validator (TypeBox's), on the values each kind of setting meets in practice and at its edges.
  it('agrees with TypeBox on every configuration setting', () => {
    const values: unknown[] = [
      -1, 0, 1, 5, 10, 300, 301, 600, 601, 8080, 65535, 65536, 100000, 100001, 1.5, '', ' ', 'x', 'info', 'loud',
      'postgres://u@h/db', 'postgresql://h', 'mysql://x', './.blockfeed', '0123456789abcdef', '0123456789abcde',
      'member=none,basic=100', 'basic=', 'variantA=300,recent=60', 'upTo24h=x', [], ['10.0.0.0/8'], ['10.0.0.1', 'x y'],
      [1], null, true,
    ];
    for (const [key, schema] of Object.entries(ConfigSchema.properties)) {
      for (const v of values) expect(allows(schema as JsonSchemaLike, v), `${key} = ${JSON.stringify(v)}`).toBe(Check(schema, v));
    }
  });
});
