// The signed-in user's API keys: create one (its secret is shown once), see when each was last used,
// revoke one.
import { useState } from 'react';
import { api, type Schemas } from '../api';
import { CreateByName, useList } from './common';

type Key = Schemas['KeyBody'];

export function when(ms: number | null | undefined): string {
  return ms ? new Date(ms).toLocaleString() : 'never';
}

export function KeysPanel() {
  const [keys, reload, error] = useList<Key>('/v1/keys');
  const [secret, setSecret] = useState<string | null>(null);
  return (
    <div>
      <h2 id="panel-title">API keys</h2>
      {error && <p role="alert">{error}</p>}
      {secret && (
        <p className="hint" role="status">
          New key (shown only now): <code>{secret}</code>
        </p>
      )}
      <ul className="cards" aria-label="Your keys">
        {keys.map((k) => (
          <li key={k.id}>
            <strong>{k.name || k.id}</strong>
            <p className="hint">
              Last used: {when(k.last_used_at)}; expires: {k.expires_at ? when(k.expires_at) : 'never'}
            </p>
            <button type="button" onClick={async () => (await api(`/v1/keys/${k.id}`, { method: 'DELETE' }), reload())}>
              Revoke {k.name || k.id}
            </button>
          </li>
        ))}
      </ul>
      <CreateByName
        heading="New key"
        label="Key name"
        submit="Create key"
        create={async (name) => {
          const created = await api<Key>('/v1/keys', { method: 'POST', body: { name } });
          setSecret(created.secret ?? null);
          reload();
        }}
      />
    </div>
  );
}
