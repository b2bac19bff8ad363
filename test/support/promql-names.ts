// The metric names a PromQL expression reads, and the expressions of a Grafana dashboard (JSON) or
// of a Prometheus rules file (YAML), so tests can check that every series a dashboard or an alert
// queries is exported. Not a PromQL parser: enough of the grammar to tell metric names from
// functions, keywords, label names and literals in the expressions dashboards and rules use.

/** PromQL keywords and binary operators written as words. */
const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'offset',
  'bool',
  'inf',
  'nan',
  'atan2',
]);

/** Every metric name `expr` reads (recording rule names with colons included). */
export function promqlMetricNames(expr: string): Set<string> {
  let text = expr
    // Comments run to the end of the line.
    .replace(/#[^\n]*/g, ' ')
    // String literals first: label values and Grafana variables inside them are not names.
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    // Label matchers and range / subquery durations.
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    // Label lists of grouping and vector matching: by (a, b), on(instance) group_left(x).
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  // Grafana's label_values(metric, label): only the metric is a series.
  text = text.replace(/\blabel_values\s*\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)[^)]*\)/g, ' $1 ');
  const names = new Set<string>();
  for (const match of text.matchAll(
    /[0-9][0-9a-zA-Z_.+-]*|\$[a-zA-Z0-9_]+|[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?/g,
  )) {
    const token = match[0];
    if (/^[0-9$]/.test(token)) continue; // a number, a duration, a Grafana variable
    if (match[1] !== undefined) continue; // a function or an aggregation: name(
    if (KEYWORDS.has(token.toLowerCase())) continue;
    names.add(token);
  }
  return names;
}

/** The PromQL expressions of a Grafana dashboard: panel targets and variable queries. */
export function dashboardExpressions(dashboard: unknown): string[] {
  const out: string[] = [];
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) walk(item);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    // A datasource variable's `query` is a plugin type ("prometheus"), not PromQL.
    if ((node as { type?: unknown }).type === 'datasource') return;
    for (const [key, value] of Object.entries(node)) {
      if (key === 'expr' && typeof value === 'string') out.push(value);
      else if (key === 'query' && typeof value === 'string' && value !== '') out.push(value);
      else walk(value);
    }
  };
  walk(dashboard);
  return out;
}

/**
 * The `expr` values of a Prometheus rules file: `expr: <one line>` or a block scalar
 * (`expr: |` followed by lines indented deeper).
 */
export function ruleExpressions(yaml: string): string[] {
  const lines = yaml.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const match = /^(\s*(?:- )?)expr:\s*(.*)$/.exec(lines[i] as string);
    if (match === null) continue;
    // The key's column ("- " of a list item included): the block holds the lines indented deeper.
    const indent = (match[1] as string).length;
    const rest = (match[2] as string).trim();
    if (rest !== '' && !/^[|>][-+]?$/.test(rest)) {
      out.push(rest.replace(/^(['"])(.*)\1$/, '$2'));
      continue;
    }
    const block: string[] = [];
    while (i + 1 < lines.length) {
      const next = lines[i + 1] as string;
      if (next.trim() !== '' && next.length - next.trimStart().length <= indent) break;
      block.push(next);
      i++;
    }
    out.push(block.join('\n'));
  }
  return out;
}

/** Every metric name the expressions read. */
export function metricNamesOf(expressions: readonly string[]): Set<string> {
  const names = new Set<string>();
  for (const expr of expressions) for (const name of promqlMetricNames(expr)) names.add(name);
  return names;
}
