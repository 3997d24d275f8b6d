// The user's projects: instructions shared by every thread in them.
import { useState } from 'react';
import { api, type NewProject, type Project } from '../api';
import { ActionForm, Field, useList } from './common';

export function ProjectsPanel() {
  const [projects, reload, error] = useList<Project>('/v1/projects');
  const [name, setName] = useState('');
  const [instructions, setInstructions] = useState('');
  return (
    <div>
      <h2 id="panel-title">Projects</h2>
      {error && <p role="alert">{error}</p>}
      <ul className="cards">
        {projects.map((p) => (
          <li key={p.id}>
            <strong>{p.name}</strong>
            {p.instructions && <p className="hint">{p.instructions}</p>}
            <button type="button" onClick={async () => (await api(`/v1/projects/${p.id}`, { method: 'DELETE' }), reload())}>
              Delete
            </button>
          </li>
        ))}
      </ul>
      <ActionForm
        action={async () => {
          const body: NewProject = { name, instructions: instructions || undefined };
          await api('/v1/projects', { method: 'POST', body });
          setName('');
          setInstructions('');
          reload();
        }}
      >
        <h3>New project</h3>
        <Field label="Project name">
          <input value={name} onChange={(e) => setName(e.target.value)} required />
        </Field>
        <Field label="Instructions">
          <textarea value={instructions} onChange={(e) => setInstructions(e.target.value)} rows={3} />
        </Field>
        <button type="submit">Add project</button>
      </ActionForm>
    </div>
  );
}
