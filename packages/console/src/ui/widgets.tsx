// Small building blocks shared by the views. Everything shown goes through Preact's text nodes
// and attributes (escaped); nothing here sets HTML.
import type { ComponentChildren, TargetedEvent } from 'preact';
import { useState } from 'preact/hooks';
import type { HttpError } from './api.ts';
import type { Action } from './hooks.ts';

export function Page(props: { title: string; actions?: ComponentChildren; children: ComponentChildren }) {
  return (
    <section class="page">
      <header class="page-head">
        <h1>{props.title}</h1>
        <div class="page-actions">{props.actions}</div>
      </header>
      {props.children}
    </section>
  );
}

export function Panel(props: { title: string; children: ComponentChildren; id?: string }) {
  return (
    <section class="panel" id={props.id}>
      <h2>{props.title}</h2>
      {props.children}
    </section>
  );
}

export function ErrorNote(props: { error: HttpError | Error | string | undefined }) {
  const { error } = props;
  if (error === undefined) return null;
  const message = typeof error === 'string' ? error : error.message;
  const status = typeof error === 'object' && 'status' in error ? `${error.status}: ` : '';
  return (
    <p class="error" role="alert">
      {status}
      {message}
    </p>
  );
}

export function ActionNote(props: { action: Action }) {
  const { action } = props;
  if (action.error !== undefined) return <ErrorNote error={action.error} />;
  if (action.done !== undefined) return <p class="done">{action.done}</p>;
  return null;
}

export function Loading() {
  return <p class="muted">Loading…</p>;
}

/** A tag-like label; `kind` picks its colour ('policy', 'argument', 'warn', 'ok', 'info'). */
export function Badge(props: { kind: string; title?: string; children: ComponentChildren }) {
  return (
    <span class={`badge badge-${props.kind}`} title={props.title}>
      {props.children}
    </span>
  );
}

/** One column of a Table. */
export interface Column<T> {
  readonly key: string;
  readonly title: string;
  readonly render: (row: T) => ComponentChildren;
  /** For sorting on the page (Table's `sortable`); absent: not sortable. */
  readonly sortValue?: (row: T) => string | number;
  readonly numeric?: boolean;
}

/** Sort state of a table sorted by the server (`sort`, `sort_reverse`). */
export interface SortState {
  readonly key: string | undefined;
  readonly reverse: boolean;
}

function header<T>(
  column: Column<T>,
  sort: SortState | undefined,
  onSort: ((key: string) => void) | undefined,
) {
  const sortable = onSort !== undefined && column.sortValue !== undefined;
  const marker = sort?.key === column.key ? (sort.reverse ? ' ▼' : ' ▲') : '';
  return (
    <th key={column.key} class={column.numeric === true ? 'num' : undefined}>
      {sortable ? (
        <button type="button" class="linkish" onClick={() => onSort(column.key)}>
          {column.title}
          {marker}
        </button>
      ) : (
        column.title
      )}
    </th>
  );
}

/**
 * A table of `rows`. With `sort`/`onSort` the caller sorts (the server does, for paged lists);
 * otherwise columns with a `sortValue` sort the rows on the page.
 */
export function Table<T>(props: {
  columns: readonly Column<T>[];
  rows: readonly T[];
  rowKey: (row: T) => string;
  empty?: string;
  sort?: SortState;
  onSort?: (key: string) => void;
  testId?: string;
}) {
  const [local, setLocal] = useState<SortState>({ key: undefined, reverse: false });
  const controlled = props.onSort !== undefined;
  const sort = controlled ? props.sort : local;
  const onSort = controlled
    ? props.onSort
    : (key: string) => setLocal((s) => ({ key, reverse: s.key === key ? !s.reverse : false }));
  let rows = props.rows;
  if (!controlled && local.key !== undefined) {
    const column = props.columns.find((c) => c.key === local.key);
    const value = column?.sortValue;
    if (value !== undefined) {
      rows = [...rows].sort((a, b) => {
        const x = value(a);
        const y = value(b);
        const order = x < y ? -1 : x > y ? 1 : 0;
        return local.reverse ? -order : order;
      });
    }
  }
  return (
    <table class="grid" data-testid={props.testId}>
      <thead>
        <tr>{props.columns.map((c) => header(c, sort, onSort))}</tr>
      </thead>
      <tbody>
        {rows.length === 0 ? (
          <tr>
            <td colSpan={props.columns.length} class="muted">
              {props.empty ?? 'None.'}
            </td>
          </tr>
        ) : (
          rows.map((row) => (
            <tr key={props.rowKey(row)}>
              {props.columns.map((c) => (
                <td key={c.key} class={c.numeric === true ? 'num' : undefined}>
                  {c.render(row)}
                </td>
              ))}
            </tr>
          ))
        )}
      </tbody>
    </table>
  );
}

/** Key–value rows. */
export function Facts(props: { rows: readonly (readonly [string, ComponentChildren])[] }) {
  return (
    <table class="facts">
      <tbody>
        {props.rows.map(([key, value]) => (
          <tr key={key}>
            <th>{key}</th>
            <td>{value}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** A button that asks before doing something that cannot be undone. */
export function DangerButton(props: {
  label: string;
  confirm: string;
  onConfirm: () => void;
  disabled?: boolean;
}) {
  return (
    <button
      type="button"
      class="danger"
      disabled={props.disabled}
      onClick={() => {
        if (window.confirm(props.confirm)) props.onConfirm();
      }}
    >
      {props.label}
    </button>
  );
}

export function Field(props: { label: string; children: ComponentChildren; hint?: string }) {
  return (
    // biome-ignore lint/a11y/noLabelWithoutControl: the control is one of the children.
    <label class="field">
      <span class="field-label">{props.label}</span>
      {props.children}
      {props.hint === undefined ? null : <span class="hint">{props.hint}</span>}
    </label>
  );
}

/** The value of an input event's target. */
export function inputValue(
  event: TargetedEvent<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>,
): string {
  return event.currentTarget.value;
}

/** Previous / next through a server's pages. */
export function Pager(props: {
  page: number;
  pageCount: number;
  onPage: (page: number) => void;
  summary: string;
}) {
  return (
    <div class="pager">
      <button type="button" disabled={props.page <= 1} onClick={() => props.onPage(props.page - 1)}>
        ‹ Previous
      </button>
      <span>
        Page {props.page} of {Math.max(1, props.pageCount)} · {props.summary}
      </span>
      <button
        type="button"
        disabled={props.page >= props.pageCount}
        onClick={() => props.onPage(props.page + 1)}
      >
        Next ›
      </button>
    </div>
  );
}

/** The `type` attribute of a text input (Preact's types tie each `type` to its own attributes). */
function inputType(type: 'text' | 'password' | undefined): { type: 'text' } {
  return { type: type ?? 'text' } as { type: 'text' };
}

/** A labelled text input. */
export function TextField(props: {
  label: string;
  name: string;
  value: string;
  onChange: (value: string) => void;
  required?: boolean;
  type?: 'text' | 'password';
  hint?: string;
  numeric?: boolean;
}) {
  return (
    <Field label={props.label} hint={props.hint}>
      <input
        name={props.name}
        {...inputType(props.type)}
        inputMode={props.numeric === true ? 'decimal' : undefined}
        value={props.value}
        required={props.required}
        autocomplete={props.type === 'password' ? 'new-password' : undefined}
        onInput={(e) => props.onChange(inputValue(e))}
      />
    </Field>
  );
}

/** A labelled choice; options are values, or [value, text] pairs. */
export function SelectField(props: {
  label: string;
  name: string;
  value: string;
  options: readonly (string | readonly [string, string])[];
  onChange: (value: string) => void;
}) {
  return (
    <Field label={props.label}>
      <select name={props.name} value={props.value} onChange={(e) => props.onChange(inputValue(e))}>
        {props.options.map((option) => {
          const [value, label] = typeof option === 'string' ? [option, option] : option;
          return (
            <option key={value} value={value}>
              {label}
            </option>
          );
        })}
      </select>
    </Field>
  );
}

/**
 * A panel holding one form that makes one change: `work` runs on submit (its outcome shown under
 * the form), then `onDone` when it succeeded.
 */
export function FormPanel(props: {
  title: string;
  submit: string;
  action: Action;
  work: () => Promise<unknown>;
  doneText: string;
  onDone: () => void;
  disabled?: boolean;
  id?: string;
  children: ComponentChildren;
}) {
  const { action } = props;
  return (
    <Panel title={props.title} id={props.id}>
      <form
        class="inline-form"
        onSubmit={(event) => {
          event.preventDefault();
          void action.run(props.work, props.doneText).then((ok) => ok && props.onDone());
        }}
      >
        {props.children}
        <button type="submit" disabled={action.busy || props.disabled === true}>
          {props.submit}
        </button>
      </form>
      <ActionNote action={action} />
    </Panel>
  );
}

/** A labelled checkbox. */
export function CheckField(props: {
  label: string;
  name: string;
  checked: boolean;
  onChange: (on: boolean) => void;
}) {
  return (
    <Field label={props.label}>
      <input
        type="checkbox"
        name={props.name}
        checked={props.checked}
        onChange={(e) => props.onChange(e.currentTarget.checked)}
      />
    </Field>
  );
}

/** A labelled multi-line text input (JSON, header lists). */
export function TextAreaField(props: {
  label: string;
  name: string;
  value: string;
  onChange: (value: string) => void;
  rows?: number;
  hint?: string;
}) {
  return (
    <Field label={props.label} hint={props.hint}>
      <textarea
        name={props.name}
        rows={props.rows ?? 1}
        value={props.value}
        onInput={(e) => props.onChange(inputValue(e))}
      />
    </Field>
  );
}
