import Type from 'typebox';
import { describe, expect, it } from 'vitest';
import { allowedValues, describeAllowed } from '../../../api-server/schema-text.ts';

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
