// Any JSON value as nested lists (keys and values as text), for replies whose shape the console
// does not know in detail.
import type { ComponentChildren } from 'preact';

export function JsonView(props: { value: unknown }): ComponentChildren {
  const { value } = props;
  if (value === null || value === undefined) return <span class="muted">–</span>;
  if (Array.isArray(value)) {
    if (value.length === 0) return <span class="muted">none</span>;
    return (
      <ol class="json">
        {value.map((item, i) => (
          <li key={i}>
            <JsonView value={item} />
          </li>
        ))}
      </ol>
    );
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) return <span class="muted">{'{}'}</span>;
    return (
      <dl class="json">
        {entries.map(([key, item]) => (
          <div key={key}>
            <dt>{key}</dt>
            <dd>
              <JsonView value={item} />
            </dd>
          </div>
        ))}
      </dl>
    );
  }
  return <span>{String(value)}</span>;
}
