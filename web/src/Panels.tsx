import { useEffect, useState, type ReactNode } from 'react';
import { api } from './api';

function useList<T>(path: string): [T[], () => void, string | null] {
  const [items, setItems] = useState<T[]>([]);
  const [error, setError] = useState<string | null>(null);
  const load = () => {
    api<T[]>(path)
      .then((x) => (setItems(x), setError(null)))
      .catch((e) => setError(e.message));
  };
  useEffect(load, [path]);
  return [items, load, error];
}

function Field({ label, children }: { label: string; children: ReactNode }) {
  return (
    <label className="field">
      <span>{label}</span>
      {children}
    </label>
  );
}

export function SettingsPanel({ onSaved }: { onSaved(): void }) {
  const [s, setS] = useState<any>(null);
  const [note, setNote] = useState<string | null>(null);
  useEffect(() => {
    api<any>('/v1/settings').then(setS).catch((e) => setNote(e.message));
  }, []);
  if (!s) return <p>{note ?? 'Loading…'}</p>;
  const set = (patch: any) => setS({ ...s, ...patch });
  const loc = s.location ?? {};
  const l10n = s.localization ?? {};
  const num = (v: string) => (v.trim() === '' ? undefined : Number(v));
  return (
    <form
      className="settings"
      onSubmit={async (e) => {
        e.preventDefault();
        try {
          const location = loc.name || loc.lat !== undefined ? loc : undefined;
          const saved = await api<any>('/v1/settings', { method: 'PUT', body: { ...s, location } });
          setS(saved);
          setNote('Saved');
          onSaved();
        } catch (err: any) {
          setNote(err.message);
        }
      }}
    >
      <h2>Settings</h2>
      <Field label="Your name">
        <input value={s.preferred_name ?? ''} onChange={(e) => set({ preferred_name: e.target.value })} />
      </Field>
      <fieldset>
        <legend>Location</legend>
        <Field label="Place">
          <input value={loc.name ?? ''} onChange={(e) => set({ location: { ...loc, name: e.target.value } })} />
        </Field>
        <Field label="Latitude">
          <input inputMode="decimal" value={loc.lat ?? ''} onChange={(e) => set({ location: { ...loc, lat: num(e.target.value) } })} />
        </Field>
        <Field label="Longitude">
          <input inputMode="decimal" value={loc.lng ?? ''} onChange={(e) => set({ location: { ...loc, lng: num(e.target.value) } })} />
        </Field>
      </fieldset>
      <fieldset>
        <legend>Units</legend>
        <Field label="Distance">
          <select value={l10n.distance_unit} onChange={(e) => set({ localization: { ...l10n, distance_unit: e.target.value } })}>
            <option value="metric">metric</option>
            <option value="imperial">imperial</option>
          </select>
        </Field>
        <Field label="Temperature">
          <select value={l10n.temperature_unit} onChange={(e) => set({ localization: { ...l10n, temperature_unit: e.target.value } })}>
            <option value="c">°C</option>
            <option value="f">°F</option>
          </select>
        </Field>
        <Field label="Time format">
          <select value={l10n.time_format} onChange={(e) => set({ localization: { ...l10n, time_format: e.target.value } })}>
            <option value="24h">24h</option>
            <option value="12h">12h</option>
          </select>
        </Field>
        <Field label="Currency">
          <input value={l10n.currency ?? ''} onChange={(e) => set({ localization: { ...l10n, currency: e.target.value } })} />
        </Field>
      </fieldset>
      <Field label="Time zone">
        <input value={s.time_zone ?? ''} onChange={(e) => set({ time_zone: e.target.value })} placeholder="Europe/London" />
      </Field>
      <Field label="Language">
        <input value={s.app_language ?? ''} onChange={(e) => set({ app_language: e.target.value })} />
      </Field>
      <label className="check">
        <input type="checkbox" checked={!!s.web_tools_enabled} onChange={(e) => set({ web_tools_enabled: e.target.checked })} /> Web tools
      </label>
      <label className="check">
        <input type="checkbox" checked={!!s.experimental_tasks} onChange={(e) => set({ experimental_tasks: e.target.checked })} /> Tasks
      </label>
      <button type="submit">Save settings</button>
      {note && <p role="status">{note}</p>}
    </form>
  );
}

interface McpServer {
  id: string;
  name: string;
  url: string;
  enabled: boolean;
  header_names: string[];
  has_bearer_token: boolean;
}

export function McpPanel() {
  const [servers, reload, error] = useList<McpServer>('/v1/mcp-servers');
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [token, setTok] = useState('');
  const [probes, setProbes] = useState<Record<string, any>>({});
  const [note, setNote] = useState<string | null>(null);
  const probe = async (id: string) => {
    setProbes((p) => ({ ...p, [id]: { pending: true } }));
    const result = await api<any>(`/v1/mcp-servers/${id}/probe`, { method: 'POST' }).catch((e) => ({ ok: false, error: { message: e.message } }));
    setProbes((p) => ({ ...p, [id]: result }));
  };
  return (
    <div>
      <h2>MCP servers</h2>
      {error && <p role="alert">{error}</p>}
      <ul className="cards">
        {servers.map((s) => {
          const p = probes[s.id];
          return (
            <li key={s.id} data-mcp-server={s.name}>
              <strong>{s.name}</strong> <code>{s.url}</code>
              <div className="row">
                <label className="check" title={s.header_names.length ? 'Secret headers cannot be read back: delete and add the server again to change it' : undefined}>
                  <input
                    type="checkbox"
                    checked={s.enabled}
                    disabled={s.header_names.length > 0}
                    onChange={async (e) => {
                      // A PUT replaces the secrets too, so a stored token has to be sent again.
                      const enabled = e.target.checked;
                      let bearer_token: string | undefined;
                      if (s.has_bearer_token) {
                        bearer_token = prompt(`Bearer token of ${s.name} (it is stored again with the change)`) ?? undefined;
                        if (!bearer_token) return;
                      }
                      await api(`/v1/mcp-servers/${s.id}`, { method: 'PUT', body: { name: s.name, url: s.url, enabled, ...(bearer_token ? { bearer_token } : {}) } }).catch((err) => setNote(err.message));
                      reload();
                    }}
                  />{' '}
                  Enabled
                </label>
                <button type="button" onClick={() => probe(s.id)}>
                  Probe
                </button>
                <button
                  type="button"
                  onClick={async () => {
                    await api(`/v1/mcp-servers/${s.id}`, { method: 'DELETE' });
                    reload();
                  }}
                >
                  Delete
                </button>
              </div>
              {p?.pending && <p>Connecting…</p>}
              {p && !p.pending && p.ok && (
                <div className="probe ok" role="status">
                  Connected to {p.server?.name} {p.server?.version} — {p.tools?.length ?? 0} tools
                  <ul>
                    {(p.tools ?? []).map((t: any) => (
                      <li key={t.name}>
                        <code>{t.name}</code> {t.description}
                      </li>
                    ))}
                  </ul>
                </div>
              )}
              {p && !p.pending && !p.ok && (
                <p className="probe failed" role="alert">
                  Failed ({p.error?.kind ?? 'error'}): {p.error?.message}
                </p>
              )}
            </li>
          );
        })}
      </ul>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          try {
            const created = await api<McpServer>('/v1/mcp-servers', { method: 'POST', body: { name, url, enabled: true, ...(token ? { bearer_token: token } : {}) } });
            setName('');
            setUrl('');
            setTok('');
            setNote(null);
            reload();
            probe(created.id);
          } catch (err: any) {
            setNote(err.message);
          }
        }}
      >
        <h3>Add a server</h3>
        <Field label="Server name">
          <input value={name} onChange={(e) => setName(e.target.value)} required />
        </Field>
        <Field label="Server URL">
          <input type="url" value={url} onChange={(e) => setUrl(e.target.value)} placeholder="http://127.0.0.1:3001/mcp" required />
        </Field>
        <Field label="Bearer token (optional)">
          <input type="password" value={token} onChange={(e) => setTok(e.target.value)} />
        </Field>
        <button type="submit">Add server</button>
        {note && <p role="alert">{note}</p>}
      </form>
    </div>
  );
}

export function SkillsPanel() {
  const [skills, reload, error] = useList<any>('/v1/skills');
  const [draft, setDraft] = useState({ slug: '', name: '', description: '', instructions: '' });
  const [note, setNote] = useState<string | null>(null);
  return (
    <div>
      <h2>Skills</h2>
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
                <input
                  type="checkbox"
                  checked={s.enabled}
                  onChange={async (e) => {
                    const { id, created_at, updated_at, ...rest } = s;
                    await api(`/v1/skills/${id}`, { method: 'PUT', body: { ...rest, enabled: e.target.checked } }).catch((err) => setNote(err.message));
                    reload();
                  }}
                />{' '}
                Enabled
              </label>
              <button type="button" onClick={async () => (await api(`/v1/skills/${s.id}`, { method: 'DELETE' }), reload())}>
                Delete
              </button>
            </div>
          </li>
        ))}
      </ul>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          try {
            await api('/v1/skills', { method: 'POST', body: { ...draft, enabled: true } });
            setDraft({ slug: '', name: '', description: '', instructions: '' });
            reload();
          } catch (err: any) {
            setNote(err.message);
          }
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
        {note && <p role="alert">{note}</p>}
      </form>
    </div>
  );
}

export function ProjectsPanel() {
  const [projects, reload, error] = useList<any>('/v1/projects');
  const [name, setName] = useState('');
  const [instructions, setInstructions] = useState('');
  const [note, setNote] = useState<string | null>(null);
  return (
    <div>
      <h2>Projects</h2>
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
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          try {
            await api('/v1/projects', { method: 'POST', body: { name, instructions: instructions || undefined } });
            setName('');
            setInstructions('');
            reload();
          } catch (err: any) {
            setNote(err.message);
          }
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
        {note && <p role="alert">{note}</p>}
      </form>
    </div>
  );
}

export function IntegrationsPanel() {
  const [items, reload, error] = useList<any>('/v1/integrations');
  const [note, setNote] = useState<string | null>(null);
  const label = (p: string) => (p === 'google' ? 'Google' : p === 'microsoft' ? 'Microsoft' : p);
  return (
    <div>
      <h2>Integrations</h2>
      {error && <p role="alert">{error}</p>}
      <ul className="cards">
        {items.map((i) => (
          <li key={i.provider}>
            <strong>{label(i.provider)}</strong> {i.connected ? 'connected' : 'not connected'}
            <div className="row">
              {i.connected ? (
                <>
                  <label className="check">
                    <input
                      type="checkbox"
                      checked={i.enabled}
                      onChange={async (e) => {
                        await api(`/v1/integrations/${i.provider}`, { method: 'PUT', body: { enabled: e.target.checked } }).catch((err) => setNote(err.message));
                        reload();
                      }}
                    />{' '}
                    Enabled
                  </label>
                  <button type="button" onClick={async () => (await api(`/v1/integrations/${i.provider}`, { method: 'DELETE' }), reload())}>
                    Disconnect
                  </button>
                </>
              ) : (
                <button
                  type="button"
                  onClick={async () => {
                    try {
                      const { authorization_url } = await api<{ authorization_url: string }>(`/v1/integrations/${i.provider}/authorize`);
                      window.open(authorization_url, '_blank', 'noopener');
                      setNote('Finish in the new window, then come back here.');
                    } catch (err: any) {
                      setNote(err.message);
                    }
                  }}
                >
                  Connect {label(i.provider)}
                </button>
              )}
            </div>
          </li>
        ))}
      </ul>
      <button type="button" onClick={reload}>
        Refresh
      </button>
      {note && <p role="status">{note}</p>}
    </div>
  );
}
