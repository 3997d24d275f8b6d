// The card for a question an MCP server asks in the middle of a tool call (a `data-elicitation`
// part): a form built from the server's flat schema (text, number, checkbox, a select for choices)
// with Accept, Decline and Cancel, or, in URL mode, the page to open (the whole address, its host
// set apart) and Done. The answer goes to the gateway with a plain API call; the running answer then
// carries the part again in its new state. The part comes back with the thread after a reload and in
// another browser, so the card works there too.
import { useId, useState, type FormEvent } from 'react';

/// A question as the gateway shows it (the part's `data`; docs/api.md describes it).
export interface ElicitationData {
  elicitationId: string;
  server: string;
  toolCallId: string;
  mode: 'form' | 'url';
  state: 'waiting' | 'accepted' | 'declined' | 'cancelled' | 'expired';
  message: string;
  requestedSchema?: FormSchema;
  url?: string;
}

interface FormSchema {
  properties?: Record<string, Field>;
  required?: string[];
}

interface Field {
  type?: string;
  title?: string;
  description?: string;
  enum?: string[];
  enumNames?: string[];
  oneOf?: { const: string; title?: string }[];
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  default?: unknown;
}

export interface ElicitationReply {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, unknown>;
}

/// Sends an answer; resolves with the gateway's sentence when it refused it.
export type AnswerElicitation = (id: string, reply: ElicitationReply) => Promise<string | null>;

const ENDED: Record<Exclude<ElicitationData['state'], 'waiting'>, string> = {
  accepted: 'Answered',
  declined: 'Declined',
  cancelled: 'Cancelled',
  expired: 'Not answered in time',
};

/// The choices a field offers, as (value, label) pairs; `null` for a field without choices.
function choices(field: Field): [string, string][] | null {
  if (field.enum) return field.enum.map((v, i) => [v, field.enumNames?.[i] ?? v]);
  if (field.oneOf) return field.oneOf.map((c) => [c.const, c.title ?? c.const]);
  return null;
}

type Values = Record<string, string | boolean>;

function initialValues(schema: FormSchema | undefined): Values {
  const values: Values = {};
  for (const [name, field] of Object.entries(schema?.properties ?? {})) {
    if (field.type === 'boolean') values[name] = field.default === true;
    else if (field.default !== undefined) values[name] = String(field.default);
    else values[name] = choices(field)?.[0]?.[0] ?? '';
  }
  return values;
}

/// The form's values as the server's types; an empty optional field is left out.
function contentOf(schema: FormSchema | undefined, values: Values): Record<string, unknown> {
  const content: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(schema?.properties ?? {})) {
    const value = values[name];
    if (field.type === 'boolean') content[name] = value === true;
    else if (value === '' || value === undefined) continue;
    else if (field.type === 'number' || field.type === 'integer') content[name] = Number(value);
    else content[name] = value;
  }
  return content;
}

interface Props {
  data: ElicitationData;
  /// The answer it belongs to still runs: only then can the question be answered.
  live: boolean;
  onAnswer: AnswerElicitation;
}

export function ElicitationCard({ data, live, onAnswer }: Props) {
  const heading = useId();
  const [values, setValues] = useState<Values>(() => initialValues(data.requestedSchema));
  const [sending, setSending] = useState(false);
  const [refused, setRefused] = useState<string | null>(null);
  if (data.state !== 'waiting' || !live) {
    const word = data.state === 'waiting' ? 'Ended with the answer' : ENDED[data.state];
    return (
      <p className="elicitation-ended" data-elicitation-id={data.elicitationId}>
        {data.server} asked: {data.message} <strong>{word}</strong>
      </p>
    );
  }
  const answer = async (reply: ElicitationReply) => {
    setSending(true);
    setRefused(null);
    const why = await onAnswer(data.elicitationId, reply);
    setRefused(why);
    if (why) setSending(false);
  };
  const submit = (e: FormEvent) => {
    e.preventDefault();
    // Accepting a URL question says the user opened the page; only a form carries content.
    void answer(data.mode === 'form' ? { action: 'accept', content: contentOf(data.requestedSchema, values) } : { action: 'accept' });
  };
  return (
    <section className="elicitation" role="group" aria-labelledby={heading} data-elicitation-id={data.elicitationId}>
      <h4 id={heading}>{data.server} asks</h4>
      <p className="elicitation-message">{data.message}</p>
      <form onSubmit={submit}>
        {data.mode === 'form' ? (
          <FormFields schema={data.requestedSchema} values={values} onChange={setValues} />
        ) : (
          <UrlTarget url={data.url ?? ''} />
        )}
        <div className="row">
          <button type="submit" className="approve" disabled={sending}>
            {data.mode === 'form' ? 'Accept' : 'Done'}
          </button>
          <button type="button" className="deny" disabled={sending} onClick={() => void answer({ action: 'decline' })}>
            Decline
          </button>
          <button type="button" disabled={sending} onClick={() => void answer({ action: 'cancel' })}>
            Cancel
          </button>
        </div>
      </form>
      {refused && (
        <p className="chat-error" role="alert">
          {refused}
        </p>
      )}
    </section>
  );
}

function FormFields({ schema, values, onChange }: { schema?: FormSchema; values: Values; onChange(values: Values): void }) {
  const required = new Set(schema?.required ?? []);
  return (
    <>
      {Object.entries(schema?.properties ?? {}).map(([name, field]) => (
        <FormField
          key={name}
          name={name}
          field={field}
          required={required.has(name)}
          value={values[name] ?? ''}
          onChange={(value) => onChange({ ...values, [name]: value })}
        />
      ))}
    </>
  );
}

interface FieldProps {
  name: string;
  field: Field;
  required: boolean;
  value: string | boolean;
  onChange(value: string | boolean): void;
}

function FormField({ name, field, required, value, onChange }: FieldProps) {
  const id = useId();
  const hintId = useId();
  const label = field.title ?? name;
  const hint = field.description && field.description !== label ? field.description : undefined;
  const offered = choices(field);
  if (field.type === 'boolean')
    return (
      <label className="elicitation-check" htmlFor={id}>
        <input id={id} type="checkbox" checked={value === true} title={hint} onChange={(e) => onChange(e.target.checked)} /> {label}
      </label>
    );
  const control = offered ? (
    <select id={id} value={String(value)} required={required} aria-describedby={hint && hintId} onChange={(e) => onChange(e.target.value)}>
      {offered.map(([v, text]) => (
        <option key={v} value={v}>
          {text}
        </option>
      ))}
    </select>
  ) : (
    <input
      id={id}
      type={field.type === 'number' || field.type === 'integer' ? 'number' : field.format === 'email' ? 'email' : 'text'}
      step={field.type === 'integer' ? 1 : 'any'}
      min={field.minimum}
      max={field.maximum}
      minLength={field.minLength}
      maxLength={field.maxLength}
      required={required}
      aria-describedby={hint && hintId}
      value={String(value)}
      onChange={(e) => onChange(e.target.value)}
    />
  );
  return (
    <div className="elicitation-field">
      <label htmlFor={id}>
        {label}
        {required && ' (required)'}
      </label>
      {control}
      {hint && (
        <small id={hintId} className="elicitation-hint">
          {hint}
        </small>
      )}
    </div>
  );
}

/// The page a URL question sends the user to: the whole address, its host apart (the spec asks the
/// client to make the domain plain), opened only on the user's click, in a new tab the app cannot read.
function UrlTarget({ url }: { url: string }) {
  let host = '';
  try {
    host = new URL(url).host;
  } catch {
    host = '';
  }
  return (
    <div className="elicitation-url">
      <p>
        Opens a page on <strong>{host || 'an unknown host'}</strong>:
      </p>
      <code className="elicitation-address">{url}</code>
      <a href={url} target="_blank" rel="noopener noreferrer">
        Open the page
      </a>
    </div>
  );
}
