// The card for a tool call that waits for the user to authorize the service it calls (a
// `data-authorization` part): an MCP server whose grant ended or is too narrow, or Google or
// Microsoft whose refresh token stopped working. Authorize opens the authorization server's page in
// a new tab the app gets no handle on; once the user consents there, the gateway's callback wakes
// the call and the running answer carries the part again as authorized. Nothing is sent from here:
// the callback is the answer. The part comes back with the thread after a reload and in another
// browser, so the card works there too.
import { useId } from 'react';

/// A waiting authorization as the gateway shows it (the part's `data`; docs/api.md describes it).
export interface AuthorizationData {
  authorizationId: string;
  /// The server's display name, or "Google" / "Microsoft".
  server: string;
  kind: 'mcp' | 'integration';
  serverId?: string;
  provider?: string;
  toolCallId: string;
  url: string;
  scopes: string[];
  state: 'waiting' | 'authorized' | 'expired' | 'cancelled';
  expiresInSecs: number;
}

const ENDED: Record<Exclude<AuthorizationData['state'], 'waiting'>, string> = {
  authorized: 'Authorized; the tool ran again',
  expired: 'Not authorized in time',
  cancelled: 'Cancelled',
};

interface Props {
  data: AuthorizationData;
  /// The answer it belongs to still runs: only then does the call still wait.
  live: boolean;
}

export function AuthorizationCard({ data, live }: Props) {
  const heading = useId();
  if (data.state !== 'waiting' || !live) {
    const word = data.state === 'waiting' ? 'Ended with the answer' : ENDED[data.state];
    return (
      <p className="authorization-ended" data-authorization-id={data.authorizationId} data-state={data.state}>
        {data.server} needed your authorization: <strong>{word}</strong>
      </p>
    );
  }
  let host = '';
  try {
    host = new URL(data.url).host;
  } catch {
    host = '';
  }
  return (
    <section className="authorization" role="group" aria-labelledby={heading} data-authorization-id={data.authorizationId} data-state={data.state}>
      <h4 id={heading}>{data.server} needs your authorization</h4>
      <p>
        A tool call waits for you to {data.kind === 'integration' ? 'connect' : 'authorize'} {data.server} again; it runs as soon as you have, or
        ends without it after {Math.round(data.expiresInSecs / 60) || 1} min.
      </p>
      {data.scopes.length > 0 && (
        <p className="authorization-scopes">
          Access asked for: <code>{data.scopes.join(' ')}</code>
        </p>
      )}
      <p>
        Opens <strong>{host || 'an unknown host'}</strong> in a new tab.
      </p>
      <div className="row">
        <a className="button approve" href={data.url} target="_blank" rel="noopener noreferrer">
          Authorize {data.server}
        </a>
        <span className="authorization-waiting" role="status">
          Waiting for your authorization…
        </span>
      </div>
    </section>
  );
}
