// The user's skills: instructions a message loads by its `/slug`.
import { useState } from 'react';
import { api, messageOf, type NewSkill, type Skill } from '../api';
import { ActionForm, Field, useList } from './common';

const EMPTY = { slug: '', name: '', description: '', instructions: '' };

export function SkillsPanel() {
  const [skills, reload, error] = useList<Skill>('/v1/skills');
  const [draft, setDraft] = useState(EMPTY);
  const [note, setNote] = useState<string | null>(null);
  const toggle = async (s: Skill, enabled: boolean) => {
    const { id, ...rest } = s;
    const body: NewSkill = { ...rest, enabled };
    await api(`/v1/skills/${id}`, { method: 'PUT', body }).catch((err) => setNote(messageOf(err)));
    reload();
  };
  return (
    <div>
      <h2 id="panel-title">Skills</h2>
      <p className="hint">
        Type <code>/slug</code> in a message to load a skill.
      </p>
      {error && <p role="alert">{error}</p>}
      <ul className="cards">
        {skills.map((s) => (
          <li key={s.id}>
            <strong>/{s.slug}</strong> {s.name} — {s.description}
            <div className="row">
              <label className="check">
                <input type="checkbox" checked={s.enabled} onChange={(e) => toggle(s, e.target.checked)} /> Enabled
              </label>
              <button type="button" onClick={async () => (await api(`/v1/skills/${s.id}`, { method: 'DELETE' }), reload())}>
                Delete
              </button>
            </div>
          </li>
        ))}
      </ul>
      {note && <p role="alert">{note}</p>}
      <ActionForm
        action={async () => {
          const body: Partial<NewSkill> = { ...draft, enabled: true };
          await api('/v1/skills', { method: 'POST', body });
          setDraft(EMPTY);
          reload();
        }}
      >
        <h3>New skill</h3>
        {(['slug', 'name', 'description'] as const).map((k) => (
          <Field key={k} label={k[0].toUpperCase() + k.slice(1)}>
            <input value={draft[k]} onChange={(e) => setDraft({ ...draft, [k]: e.target.value })} required />
          </Field>
        ))}
        <Field label="Instructions">
          <textarea value={draft.instructions} onChange={(e) => setDraft({ ...draft, instructions: e.target.value })} rows={4} required />
        </Field>
        <button type="submit">Add skill</button>
      </ActionForm>
    </div>
  );
}
