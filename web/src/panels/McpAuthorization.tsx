// Where an MCP server that asks for OAuth stands for this user, with the button that starts (or
// starts again) its authorization in a window of its own.
//
// The gateway answers the authorization server's redirect with a page of its own origin, so the
// panel watches the window it opened until it is back there (or closed), then the caller reloads
// the server and lists its tools. The window is opened before the request for its URL, while the
// click still counts as the user's, and loses its `opener`, so the authorization server's page
// cannot reach back into the app.
import { useState } from 'react';
import { api, messageOf, type McpServer, type Schemas } from '../api';

export type Authorization = Schemas['AuthorizationState'];

/// How long the panel watches an authorization window before it stops waiting.
const WAIT_MS = 10 * 60_000;
const CALLBACK_PATH = '/v1/mcp-servers/oauth/callback';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/// Whether the window is back on the gateway's callback page and done loading (reading another
/// origin's location throws: it is still at the authorization server).
function returned(w: Window): boolean {
  try {
    return w.location.pathname === CALLBACK_PATH && w.document.readyState === 'complete';
  } catch {
    return false;
  }
}

async function connected(id: string): Promise<boolean> {
  const server = await api<McpServer>(`/v1/mcp-servers/${id}`).catch(() => null);
  return server?.authorization?.state === 'connected';
}

/// Waits until the authorization in `w` came back (or the window was closed); without a window to
/// watch, until the server reads as connected.
async function awaitReturn(w: Window | null, id: string) {
  const deadline = Date.now() + WAIT_MS;
  for (let round = 0; Date.now() < deadline; round++) {
    await sleep(500);
    if (w && returned(w)) {
      w.close();
      return;
    }
    if (w?.closed) return;
    if (!w && round % 4 === 3 && (await connected(id))) return;
  }
}

export function AuthorizationLine({ id, name, authorization, done }: { id: string; name: string; authorization: Authorization | null; done(): void }) {
  const [waiting, setWaiting] = useState<string | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  if (!authorization) return null;
  const isConnected = authorization.state === 'connected';
  const start = async () => {
    setFailure(null);
    const w = window.open('', '_blank');
    if (w) w.opener = null;
    try {
      const { authorization_url } = await api<{ authorization_url: string }>(`/v1/mcp-servers/${id}/authorize`, { method: 'POST' });
      if (w) w.location.href = authorization_url;
      setWaiting(authorization_url);
      await awaitReturn(w, id);
      done();
    } catch (e) {
      w?.close();
      setFailure(messageOf(e));
    } finally {
      setWaiting(null);
    }
  };
  const said = waiting
    ? 'Waiting for you to authorize it in the other window…'
    : isConnected
      ? 'Connected with your authorization.'
      : authorization.error
        ? `Needs authorization; its authorization server could not be reached: ${authorization.error}`
        : authorization.scopes
          ? `Asks for more than you authorized; authorize again for: ${authorization.scopes}.`
          : 'Needs your authorization.';
  return (
    <div className="row auth" data-auth-state={waiting ? 'waiting' : authorization.state}>
      <span role="status">{said}</span>
      {waiting && (
        <a href={waiting} target="_blank" rel="noopener noreferrer">
          Open the authorization page
        </a>
      )}
      {!waiting && (
        <button type="button" onClick={start} aria-label={`${isConnected ? 'Reconnect' : 'Connect'} ${name}`}>
          {isConnected ? 'Reconnect' : 'Connect'}
        </button>
      )}
      {failure && <span role="alert">{failure}</span>}
    </div>
  );
}
