// The user's MCP servers: add one (it is probed at once), probe, enable or disable, delete; a
// server that asks for OAuth shows where it stands for this user, with Connect or Reconnect. An
// OAuth client id and secret may be given with a server (under "Advanced"), for an authorization
// server where the user registered promptgate by hand.
import { useState } from 'react';
import { api, messageOf, type McpServer, type NewMcpServer, type ProbeResponse } from '../api';
import { ActionForm, Field, useList } from './common';
import { AuthorizationLine, type Authorization } from './McpAuthorization';

type Probe = ProbeResponse | 'pending';

export function McpPanel() {
  const [servers, reload, error] = useList<McpServer>('/v1/mcp-servers');
  const [name, setName] = useState('');
  const [url, setUrl] = useState('');
  const [token, setTok] = useState('');
  const [clientId, setClientId] = useState('');
  const [clientSecret, setClientSecret] = useState('');
  const [probes, setProbes] = useState<Record<string, Probe>>({});
  const [note, setNote] = useState<string | null>(null);
  // What registering or probing said of a server's authorization; the list's own state otherwise.
  const [auth, setAuth] = useState<Record<string, Authorization | undefined>>({});
  const probe = async (id: string) => {
    setProbes((p) => ({ ...p, [id]: 'pending' }));
    const result = await api<ProbeResponse>(`/v1/mcp-servers/${id}/probe`, { method: 'POST' }).catch(
      (e): ProbeResponse => ({ ok: false, error: { kind: 'error', message: messageOf(e) } }),
    );
    setProbes((p) => ({ ...p, [id]: result }));
    if (result.authorization === 'needs_authorization') setAuth((a) => ({ ...a, [id]: { state: 'needs_authorization' } }));
    else if (result.ok) setAuth((a) => ({ ...a, [id]: undefined }));
  };
  const authorized = (id: string) => {
    setAuth((a) => ({ ...a, [id]: undefined }));
    reload();
    probe(id);
  };
  const save = async (s: McpServer, enabled: boolean) => {
    // A PUT replaces the secrets too, so a stored token or client secret has to be sent again.
    let bearer_token: string | undefined;
    if (s.has_bearer_token) {
      bearer_token = prompt(`Bearer token of ${s.name} (it is stored again with the change)`) ?? undefined;
      if (!bearer_token) return;
    }
    let oauth_client_secret: string | undefined;
    if (s.oauth_client_secret_set) {
      oauth_client_secret = prompt(`OAuth client secret of ${s.name} (it is stored again with the change)`) ?? undefined;
      if (!oauth_client_secret) return;
    }
    const body: Partial<NewMcpServer> = {
      name: s.name,
      url: s.url,
      enabled,
      ...(bearer_token ? { bearer_token } : {}),
      ...(s.oauth_client_id ? { oauth_client_id: s.oauth_client_id } : {}),
      ...(oauth_client_secret ? { oauth_client_secret } : {}),
    };
    await api(`/v1/mcp-servers/${s.id}`, { method: 'PUT', body }).catch((err) => setNote(messageOf(err)));
    reload();
  };
  return (
    <div>
      <h2 id="panel-title">MCP servers</h2>
      {error && <p role="alert">{error}</p>}
      <ul className="cards">
        {servers.map((s) => (
          <li key={s.id} data-mcp-server={s.name}>
            <strong>{s.name}</strong> <code>{s.url}</code>
            {s.oauth_client_id && (
              <p className="hint">
                OAuth client <code>{s.oauth_client_id}</code>
                {s.oauth_client_secret_set ? ' (with a secret)' : ''}
              </p>
            )}
            <div className="row">
              <label className="check" title={s.header_names.length ? 'Secret headers cannot be read back: delete and add the server again to change it' : undefined}>
                <input type="checkbox" checked={s.enabled} disabled={s.header_names.length > 0} onChange={(e) => save(s, e.target.checked)} /> Enabled
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
            <AuthorizationLine id={s.id} name={s.name} authorization={auth[s.id] ?? s.authorization ?? null} done={() => authorized(s.id)} />
            <ProbeResult probe={probes[s.id]} />
          </li>
        ))}
      </ul>
      {note && <p role="alert">{note}</p>}
      <ActionForm
        action={async () => {
          const body: Partial<NewMcpServer> = {
            name,
            url,
            enabled: true,
            ...(token ? { bearer_token: token } : {}),
            ...(clientId ? { oauth_client_id: clientId } : {}),
            ...(clientId && clientSecret ? { oauth_client_secret: clientSecret } : {}),
          };
          const created = await api<McpServer>('/v1/mcp-servers', { method: 'POST', body });
          if (created.authorization) setAuth((a) => ({ ...a, [created.id]: created.authorization ?? undefined }));
          setName('');
          setUrl('');
          setTok('');
          setClientId('');
          setClientSecret('');
          reload();
          probe(created.id);
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
        <details>
          <summary>Advanced: your own OAuth client</summary>
          <p className="hint">
            For a server whose authorization server knows promptgate only by a client you registered there. Leave empty to let promptgate
            identify itself.
          </p>
          <Field label="OAuth client id (optional)">
            <input value={clientId} onChange={(e) => setClientId(e.target.value)} maxLength={2048} autoComplete="off" />
          </Field>
          <Field label="OAuth client secret (optional)">
            <input type="password" value={clientSecret} onChange={(e) => setClientSecret(e.target.value)} maxLength={1024} autoComplete="off" disabled={!clientId} />
          </Field>
        </details>
        <button type="submit">Add server</button>
      </ActionForm>
    </div>
  );
}

function ProbeResult({ probe }: { probe?: Probe }) {
  if (!probe) return null;
  if (probe === 'pending') return <p>Connecting…</p>;
  // The authorization line says what to do.
  if (probe.authorization === 'needs_authorization') return null;
  if (!probe.ok)
    return (
      <p className="probe failed" role="alert">
        Failed ({probe.error?.kind ?? 'error'}): {probe.error?.message}
      </p>
    );
  const tools = probe.tools ?? [];
  return (
    <div className="probe ok" role="status">
      Connected to {probe.server?.name} {probe.server?.version} — {tools.length} tools
      <ul>
        {tools.map((t) => (
          <li key={t.name}>
            <code>{t.name}</code> {t.description}
          </li>
        ))}
      </ul>
    </div>
  );
}
