// The card for a tool call that waits for the user to authorize the service it calls (a
// `data-authorization` part): an MCP server whose grant ended or is too narrow, or Google or
// Microsoft whose refresh token stopped working. Authorize opens the authorization server's page in
// a new tab the app gets no handle on; once the user consents there, the gateway's callback wakes
// the call and the running answer carries the part again as authorized. Nothing is sent from here:
// the callback is the answer. The part comes back with the thread after a reload and in another
// browser, so the card works there too. A card in the state `needed` waits for nothing: the send
// found the server asking to be connected before it could offer any of its tools, and the answer
// opens with it so the user can connect the server for the next message.
import { useId } from 'react';

/// A waiting authorization as the gateway shows it (the part's `data`; docs/api.md describes it).
export interface AuthorizationData {
  authorizationId: string;
  /// The server's display name, or "Google" / "Microsoft".
  server: string;
  kind: 'mcp' | 'integration';
  serverId?: string;
  provider?: string;
  /// Absent on a `needed` card, which no tool call waits for.
  toolCallId?: string;
  url: string;
  scopes: string[];
  state: 'waiting' | 'needed' | 'authorized' | 'expired' | 'cancelled';
  expiresInSecs?: number;
}

const ENDED: Record<Exclude<AuthorizationData['state'], 'waiting' | 'needed'>, string> = {
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
  if (data.state === 'needed') {
    return <NeededCard data={data} />;
  }
  if (data.state !== 'waiting' || !live) {
    const word = data.state === 'waiting' ? 'Ended with the answer' : ENDED[data.state];
    return (
      <p className="authorization-ended" data-authorization-id={data.authorizationId} data-state={data.state}>
        {data.server} needed your authorization: <strong>{word}</strong>
      </p>
    );
  }
  const host = hostOf(data.url);
  return (
    <section className="authorization" role="group" aria-labelledby={heading} data-authorization-id={data.authorizationId} data-state={data.state}>
      <h4 id={heading}>{data.server} needs your authorization</h4>
      <p>
        A tool call waits for you to {data.kind === 'integration' ? 'connect' : 'authorize'} {data.server} again; it runs as soon as you have, or
        ends without it after {Math.round((data.expiresInSecs ?? 60) / 60) || 1} min.
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

/// The host an authorization URL opens, or '' when it is not a URL.
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '';
  }
}

/// A server the send could not use until the user connects it; nothing waits for it.
function NeededCard({ data }: { data: AuthorizationData }) {
  const heading = useId();
  return (
    <section className="authorization" role="group" aria-labelledby={heading} data-authorization-id={data.authorizationId} data-state={data.state}>
      <h4 id={heading}>{data.server} is not connected</h4>
      <p>Its tools could not be used for this answer. Connect it, then ask again.</p>
      <p>
        Opens <strong>{hostOf(data.url) || 'an unknown host'}</strong> in a new tab.
      </p>
      <div className="row">
        <a className="button approve" href={data.url} target="_blank" rel="noopener noreferrer">
          Connect {data.server}
        </a>
      </div>
    </section>
  );
}
