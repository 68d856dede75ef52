// Query-string validation against the flat endpoint schemas of endpoint-params.ts. Pure. Every problem is
// reported (not only the first), each naming the parameter, why, and what it allows, in the wording of
// schema-text.ts.
import type { TSchema } from 'typebox';
import { describeAllowed, allowedValues, type JsonSchemaLike } from '../schema-text.ts';
import { parseAddressOrNetwork } from '../store/networks.ts';

export interface ParamProblem {
  name: string;
  reason: string;
  allowed: string;
}

type ParseResult = { ok: true; value: Record<string, unknown> } | { ok: false, problems: ParamProblem[] };

interface ParamSchema extends JsonSchemaLike {
  default?: unknown;
}

function shown(raw: string): string {
  return JSON.stringify(raw.length > 64 ? `${raw.slice(0, 64)}…` : raw);
}

/** allowedValues per schema, worked out once: schemas live as long as the routes. */
const valuesBySchema = new WeakMap<ParamSchema, unknown[] | null>();
function allowedValuesOf(schema: ParamSchema): unknown[] | undefined {
  let values = valuesBySchema.get(schema);
  if (values === undefined) {
    values = allowedValues(schema) ?? null;
    valuesBySchema.set(schema, values);
  }
  return values ?? undefined;
}

function parseOne(name: string, raw: string, schema: ParamSchema): { value: unknown } | ParamProblem {
  const problem = (reason: string): ParamProblem => ({ name, reason, allowed: describeAllowed(schema) });
  if (schema.enum) {
    const hit = schema.enum.find((v) => String(v) === raw);
    return hit === undefined ? problem(`unknown value ${shown(raw)}`) : { value: hit };
  }
  const values = allowedValuesOf(schema);
  if (values) {
    const hit = values.find((v) => String(v) === raw);
    return hit === undefined ? problem(`unknown value ${shown(raw)}`) : { value: hit };
  }
  if (schema.type === 'integer') {
    if (!/^-?\d+$/.test(raw)) return problem(`${shown(raw)} is not an integer`);
    const n = Number(raw);
    if ((schema.minimum !== undefined && n < schema.minimum) || (schema.maximum !== undefined && n > schema.maximum)) {
      return problem(`${n} is out of range`);
    }
    return { value: n };
  }
  if (schema.type === 'string') {
    if (schema.format === 'ip-address') return ipAddress(raw, problem);
    if (schema.minLength !== undefined && raw.length < schema.minLength) return problem('too short');
    return { value: raw };
  }
  return problem('unsupported parameter type');
}

/** One address, IPv4 or IPv6, as the store keeps it (an IPv4-mapped IPv6 address is its IPv4 address); a network is refused. */
function ipAddress(raw: string, problem: (reason: string) => ParamProblem): { value: string } | ParamProblem {
  const parsed = parseAddressOrNetwork(raw);
  if (!parsed.ok) return problem(`${shown(raw)} ${parsed.problem}`);
  if (parsed.network.address === undefined) return problem(`${shown(raw)} is a network; give one address`);
  return { value: parsed.network.address };
}

/** Validates and coerces a parsed query string; applies the schema's defaults. */
export function parseQuery(schema: { properties: Record<string, TSchema>; required?: readonly string[] }, query: Record<string, unknown> | null | undefined): ParseResult {
  const properties = schema.properties as Record<string, ParamSchema>;
  const problems: ParamProblem[] = [];
  const value: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(query ?? {})) {
    const prop = properties[name];
    if (!prop) {
      problems.push({ name, reason: 'unknown parameter', allowed: `one of the parameters: ${Object.keys(properties).join(', ')}` });
      continue;
    }
    if (Array.isArray(raw)) {
      problems.push({ name, reason: 'given more than once', allowed: describeAllowed(prop) });
      continue;
    }
    const parsed = parseOne(name, String(raw), prop);
    if ('value' in parsed) value[name] = parsed.value;
    else problems.push(parsed);
  }
  for (const name of schema.required ?? []) {
    const prop = properties[name];
    if (prop && !(name in (query ?? {}))) problems.push({ name, reason: 'missing', allowed: describeAllowed(prop) });
  }
  if (problems.length) return { ok: false, problems };
  for (const [name, prop] of Object.entries(properties)) {
    if (!(name in value) && prop.default !== undefined) value[name] = prop.default;
  }
  return { ok: true, value };
}
