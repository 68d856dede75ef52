// The PromQL of a Grafana dashboard, made runnable against a plain Prometheus: every panel target's `expr` and
// every query variable's selector, with Grafana's variables replaced, and the metric names each one reads.

export interface DashboardQuery {
  /** where it comes from: a panel title and refId, or a template variable */
  where: string;
  expr: string;
}

interface Target {
  expr?: string;
  refId?: string;
}
interface Panel {
  title?: string;
  targets?: Target[];
  panels?: Panel[];
}
interface Variable {
  name: string;
  type: string;
  query?: string | { query?: string };
}
export interface Dashboard {
  panels?: Panel[];
  templating?: { list?: Variable[] };
}

/**
 * Grafana's variable queries as PromQL: `label_values(selector, label)` reads `selector`,
 * `label_values(label)` every series with that label, `query_result(expr)` is `expr`.
 */
function variableSelector(query: string): string {
  const withSelector = /^\s*label_values\s*\(\s*(.+)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$/s.exec(query);
  if (withSelector) return withSelector[1]!.trim();
  const labelOnly = /^\s*label_values\s*\(\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$/.exec(query);
  if (labelOnly) return `group by (${labelOnly[1]!}) ({${labelOnly[1]!}!=""})`;
  return query.replace(/^\s*query_result\s*\((.*)\)\s*$/s, '$1');
}

export function dashboardQueries(dashboard: Dashboard): DashboardQuery[] {
  const out: DashboardQuery[] = [];
  const walk = (panels: Panel[] = []) => {
    for (const p of panels) {
      for (const t of p.targets ?? []) if (t.expr) out.push({ where: `panel "${p.title ?? '?'}" ${t.refId ?? ''}`.trim(), expr: t.expr });
      walk(p.panels);
    }
  };
  walk(dashboard.panels);
  for (const v of dashboard.templating?.list ?? []) {
    if (v.type !== 'query' || v.query === undefined) continue;
    const q = typeof v.query === 'string' ? v.query : (v.query.query ?? '');
    if (q) out.push({ where: `variable $${v.name}`, expr: variableSelector(q) });
  }
  return out;
}

/**
 * Replaces Grafana's variables: the built-in intervals, and template variables (`$name`, `${name}`,
 * `${name:format}`, `[[name]]`) by `values[name]`. A variable left unknown is an error, not a silent pass.
 */
export function substituteVariables(expr: string, values: Record<string, string>): string {
  return expr.replace(/\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)/g, (whole, a?: string, b?: string, c?: string) => {
    const name = a ?? b ?? c ?? '';
    const value = values[name];
    if (value === undefined) throw new Error(`unknown Grafana variable ${whole} in ${expr}`);
    return value;
  });
}

const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'inf', 'nan', 'atan2']);

/** The metric names an expression reads (selectors by name, not `{__name__=...}`), sorted and unique. */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\{[^}]*\}/g, '{}')
    .replace(/\[[^\]]*\]/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  const names = new Set<string>();
  for (const m of bare.matchAll(/[0-9.]*[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const token = m[0];
    if (/^[0-9.]/.test(token) || KEYWORDS.has(token.toLowerCase())) continue;
    const after = bare.slice(m.index + token.length).trimStart();
    if (after.startsWith('(')) continue; // a function or an aggregation
    names.add(token);
  }
  return [...names].sort();
}
