// Human-readable descriptions of what a JSON Schema allows. One wording for every surface that rejects a
// value: configuration errors, HTTP 400 problem details, CLI flags.

export interface JsonSchemaLike {
  type?: string | string[];
  enum?: readonly unknown[];
  const?: unknown;
  anyOf?: readonly JsonSchemaLike[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  items?: JsonSchemaLike;
  description?: string;
}

/** String formats of the API's own, in words. */
const FORMAT_WORDS: Record<string, string> = {
  'ip-address': 'one IPv4 or IPv6 address, such as 203.0.113.7 or 2001:db8::7 (no prefix length)',
};

/** Lists the literal values a schema accepts, or undefined when it is not a closed set. */
export function allowedValues(schema: JsonSchemaLike): unknown[] | undefined {
  if (schema.enum) return [...schema.enum];
  if (schema.const !== undefined) return [schema.const];
  if (schema.anyOf) {
    const parts = schema.anyOf.map(allowedValues);
    if (parts.every((p): p is unknown[] => p !== undefined)) return parts.flat();
  }
  return undefined;
}

/** "one of: a, b", "an integer from 1 to 168", "a string matching ^x$", ... */
export function describeAllowed(schema: JsonSchemaLike): string {
  const values = allowedValues(schema);
  if (values) return `one of: ${values.map(String).join(', ')}`;
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'integer':
    case 'number': {
      const noun = type === 'integer' ? 'an integer' : 'a number';
      const { minimum: lo, maximum: hi } = schema;
      if (lo !== undefined && hi !== undefined) return `${noun} from ${lo} to ${hi}`;
      if (lo !== undefined) return `${noun} >= ${lo}`;
      if (hi !== undefined) return `${noun} <= ${hi}`;
      return noun;
    }
    case 'boolean':
      return 'true or false';
    case 'array':
      return `a comma-separated list of ${schema.items ? describeAllowed(schema.items) : 'values'}`;
    case 'string': {
      if (schema.format) return FORMAT_WORDS[schema.format] ?? `a ${schema.format}`;
      if (schema.pattern) return `a string matching ${schema.pattern}`;
      if (schema.minLength) return `a string of at least ${schema.minLength} characters`;
      return 'a string';
    }
    default:
      return schema.description ?? 'a valid value';
  }
}
