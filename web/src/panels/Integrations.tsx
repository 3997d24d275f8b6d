// Google and Microsoft connections: connect in a new window, enable, disconnect.
import { useState } from 'react';
import { api, messageOf, type IntegrationView, type Schemas } from '../api';
import { useList } from './common';

const LABELS: Record<Schemas['Provider'], string> = { google: 'Google', microsoft: 'Microsoft' };

export function IntegrationsPanel() {
  const [items, reload, error] = useList<IntegrationView>('/v1/integrations');
  const [note, setNote] = useState<string | null>(null);
  const connect = async (provider: Schemas['Provider']) => {
    try {
      const { authorization_url } = await api<Schemas['AuthorizationStart']>(`/v1/integrations/${provider}/authorize`);
      window.open(authorization_url, '_blank', 'noopener');
      setNote('Finish in the new window, then come back here.');
    } catch (err) {
      setNote(messageOf(err));
    }
  };
  const update = async (provider: Schemas['Provider'], enabled: boolean) => {
    const body: Partial<Schemas['IntegrationUpdate']> = { enabled };
    await api(`/v1/integrations/${provider}`, { method: 'PUT', body }).catch((err) => setNote(messageOf(err)));
    reload();
  };
  return (
    <div>
      <h2 id="panel-title">Integrations</h2>
      {error && <p role="alert">{error}</p>}
      <ul className="cards">
        {items.map((i) => (
          <li key={i.provider}>
            <strong>{LABELS[i.provider]}</strong> {i.connected ? 'connected' : 'not connected'}
            <div className="row">
              {i.connected ? (
                <>
                  <label className="check">
                    <input type="checkbox" checked={i.enabled} onChange={(e) => update(i.provider, e.target.checked)} /> Enabled
                  </label>
                  <button type="button" onClick={async () => (await api(`/v1/integrations/${i.provider}`, { method: 'DELETE' }), reload())}>
                    Disconnect
                  </button>
                </>
              ) : (
                <button type="button" onClick={() => connect(i.provider)}>
                  Connect {LABELS[i.provider]}
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
