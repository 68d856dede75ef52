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
      if (schema.format) return `a ${schema.format}`;
      if (schema.pattern) return `a string matching ${schema.pattern}`;
      if (schema.minLength) return `a string of at least ${schema.minLength} characters`;
      return 'a string';
    }
    default:
      return schema.description ?? 'a valid value';
  }
}

/**
 * Whether `value` satisfies `schema`, for the keywords JsonSchemaLike names: the counterpart of
 * describeAllowed. The configuration's settings are checked with it, so that reading them needs no schema
 * library (TypeBox's validator is ~680 modules, ~0.15 s before any command could start). A keyword it does
 * not check (`format`) is refused loudly rather than passed unchecked.
 */
export function allows(schema: JsonSchemaLike, value: unknown): boolean {
  if (schema.format !== undefined) throw new Error(`allows() does not check "format" (${schema.format})`);
  if (schema.enum && !schema.enum.includes(value)) return false;
  if (schema.const !== undefined && value !== schema.const) return false;
  if (schema.anyOf && !schema.anyOf.some((s) => allows(s, value))) return false;
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => isOfType(t, value))) return false;
  }
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) return false;
    if (schema.maximum !== undefined && value > schema.maximum) return false;
  }
  if (typeof value === 'string') {
    // JSON Schema counts characters (code points), not UTF-16 units.
    const length = [...value].length;
    if (schema.minLength !== undefined && length < schema.minLength) return false;
    if (schema.maxLength !== undefined && length > schema.maxLength) return false;
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) return false;
  }
  if (Array.isArray(value) && schema.items) return value.every((v) => allows(schema.items as JsonSchemaLike, v));
  return true;
}

function isOfType(type: string, value: unknown): boolean {
  switch (type) {
    case 'integer':
      return Number.isInteger(value);
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'string':
      return typeof value === 'string';
    case 'boolean':
      return typeof value === 'boolean';
    case 'array':
      return Array.isArray(value);
    case 'object':
      return typeof value === 'object' && value !== null && !Array.isArray(value);
    case 'null':
      return value === null;
    default:
      throw new Error(`allows() does not know the type "${type}"`);
  }
}
