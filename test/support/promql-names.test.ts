import { describe, expect, it } from 'vitest';
import { dashboardExpressions, promqlMetricNames, ruleExpressions } from './promql-names.ts';

describe('promqlMetricNames', () => {
  it('tells metric names from functions, keywords, labels, literals and Grafana variables', () => {
    const expr = `sum by (node, le) (rate(a_total{x="b_total", y=~"$v"}[$__rate_interval] offset 5m))
      * on(instance, job) group_left(c_label) info_metric{n="$ns"} > bool 0.5 unless ignoring(z) other:recorded
      # comment_metric here
      - histogram_quantile(0.99, h_bucket) / 1e+06`;
    expect([...promqlMetricNames(expr)].sort()).toEqual([
      'a_total',
      'h_bucket',
      'info_metric',
      'other:recorded',
    ]);
  });

  it("reads only the metric of Grafana's label_values(metric, label)", () => {
    expect([...promqlMetricNames('label_values(id_info{ns="$ns"}, cluster)')]).toEqual(['id_info']);
  });
});

describe('dashboardExpressions and ruleExpressions', () => {
  it("take a dashboard's targets and variable queries, not a datasource variable's plugin type", () => {
    const dashboard = {
      panels: [{ targets: [{ expr: 'up_a' }] }, { panels: [{ targets: [{ expr: 'up_b' }] }] }],
      templating: {
        list: [
          { type: 'datasource', query: 'prometheus' },
          { type: 'query', query: { query: 'label_values(up_c, x)' } },
        ],
      },
    };
    expect(dashboardExpressions(dashboard)).toEqual(['up_a', 'up_b', 'label_values(up_c, x)']);
  });

  it('take inline and block expressions of a rules file, ending each block at its key', () => {
    const yaml = [
      'groups:',
      '  - rules:',
      '    - alert: A',
      '      expr: |',
      '        first_metric',
      '        > 1',
      '      for: 5m',
      '    - expr: "second_metric > 2"',
      '      record: r',
    ].join('\n');
    expect(ruleExpressions(yaml)).toEqual(['        first_metric\n        > 1', 'second_metric > 2']);
  });
});
