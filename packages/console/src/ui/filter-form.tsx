// The message filter's fields (inspector and redrive).
import type { MessageFilterDraft } from './filter.ts';
import { REASONS } from './model.ts';
import { SelectField, TextAreaField, TextField } from './widgets.tsx';

export function FilterFields(props: {
  draft: MessageFilterDraft;
  onChange: (draft: MessageFilterDraft) => void;
}) {
  const { draft, onChange } = props;
  const set = (k: keyof MessageFilterDraft) => (value: string) => onChange({ ...draft, [k]: value });
  return (
    <div class="inline-form">
      <SelectField
        label="Reason"
        name="filter-reason"
        value={draft.reason}
        options={[['', 'any'], ...REASONS]}
        onChange={set('reason')}
      />
      <TextField
        label="Source queue"
        name="filter-source"
        value={draft.sourceQueue}
        onChange={set('sourceQueue')}
      />
      <TextField
        label="Older than (s)"
        name="filter-older"
        numeric
        value={draft.olderThan}
        onChange={set('olderThan')}
      />
      <TextField
        label="Newer than (s)"
        name="filter-newer"
        numeric
        value={draft.newerThan}
        onChange={set('newerThan')}
      />
      <TextAreaField
        label="Headers (name:value per line)"
        name="filter-headers"
        value={draft.headers}
        onChange={set('headers')}
      />
    </div>
  );
}
