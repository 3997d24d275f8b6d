// An answer's sources as a numbered list, each with its site's favicon: what the `[N]` chips in the
// text point at. Favicons load straight from the cited site (https only, no referrer); a site
// without one shows its initial instead.
import { useState } from 'react';
import type { Source } from './messages';

/// The element id of source `n` of a message, the target of its `[N]` chips.
export function sourceAnchor(messageId: string, n: number): string {
  return `source-${messageId}-${n}`;
}

function hostOf(url: string): string | null {
  try {
    return new URL(url).host || null;
  } catch {
    return null;
  }
}

function Favicon({ url }: { url: string }) {
  const [failed, setFailed] = useState(false);
  const host = hostOf(url);
  const https = url.startsWith('https://');
  if (!host || !https || failed)
    return (
      <span className="favicon letter" aria-hidden="true">
        {(host ?? '?').replace(/^www\./, '')[0]?.toUpperCase()}
      </span>
    );
  return <img className="favicon" src={`https://${host}/favicon.ico`} alt="" width={16} height={16} loading="lazy" referrerPolicy="no-referrer" onError={() => setFailed(true)} />;
}

export function Sources({ messageId, sources }: { messageId: string; sources: Map<number, Source> }) {
  if (sources.size === 0) return null;
  const list = [...sources.values()].sort((a, b) => a.index - b.index);
  const headingId = `sources-${messageId}`;
  return (
    <section className="sources" aria-labelledby={headingId}>
      <h3 id={headingId}>Sources</h3>
      <ol>
        {list.map((s) => (
          <li key={s.index} id={sourceAnchor(messageId, s.index)} value={s.index}>
            <Favicon url={s.url} />
            <a href={s.url} target="_blank" rel="noopener noreferrer">
              {s.title || s.url}
            </a>
            <span className="source-host">{hostOf(s.url)?.replace(/^www\./, '')}</span>
          </li>
        ))}
      </ol>
    </section>
  );
}
