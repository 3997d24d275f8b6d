// What the side panels share: a list read from the API, and a labelled form field.
import { useCallback, useEffect, useState, type ReactNode } from 'react';
import { api, messageOf } from '../api';

/// The items at `path`, whether it answers them bare or, like the key list, under `data` beside
/// other fields; with the function that reads them again and the error of the last read.
export function useList<T>(path: string): [T[], () => void, string | null] {
  const [items, setItems] = useState<T[]>([]);
  const [error, setError] = useState<string | null>(null);
  const load = useCallback(() => {
    api<T[] | { data: T[] }>(path)
      .then((x) => (setItems(Array.isArray(x) ? x : x.data), setError(null)))
      .catch((e) => setError(messageOf(e)));
  }, [path]);
  useEffect(load, [load]);
  return [items, load, error];
}

export function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <label className="field">
      <span>{label}</span>
      {children}
    </label>
  );
}

/// A form that creates something from a name alone; the field empties once it is created.
export function CreateByName(props: { heading: string; label: string; submit: string; create(name: string): Promise<void> }) {
  const [name, setName] = useState('');
  return (
    <ActionForm
      action={async () => {
        await props.create(name);
        setName('');
      }}
    >
      <h3>{props.heading}</h3>
      <Field label={props.label}>
        <input value={name} onChange={(e) => setName(e.target.value)} required />
      </Field>
      <button type="submit">{props.submit}</button>
    </ActionForm>
  );
}

/// A form whose submit runs `action`; what it throws is shown under the form.
export function ActionForm({ action, children }: { action(): Promise<void>; children: ReactNode }) {
  const [note, setNote] = useState<string | null>(null);
  return (
    <form
      onSubmit={async (e) => {
        e.preventDefault();
        try {
          await action();
          setNote(null);
        } catch (err) {
          setNote(messageOf(err));
        }
      }}
    >
      {children}
      {note && <p role="alert">{note}</p>}
    </form>
  );
}
