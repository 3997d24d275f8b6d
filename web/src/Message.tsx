import { memo, useEffect, useMemo, useState } from 'react';
import type { UIMessage } from 'ai';
import { artifactUrl } from './api';
import { hasMath, loadMath, mathReady, renderMarkdown, type Source } from './markdown';

/// Sources of an answer by citation number: the `sources` metadata snapshot, then `source-url` parts.
export function sourcesOf(message: UIMessage): Map<number, Source> {
  const map = new Map<number, Source>();
  const meta = (message.metadata ?? {}) as any;
  for (const s of Array.isArray(meta.sources) ? meta.sources : []) {
    if (typeof s?.index === 'number' && typeof s.url === 'string') map.set(s.index, { index: s.index, url: s.url, title: s.title });
  }
  for (const p of message.parts as any[]) {
    if (p.type !== 'source-url') continue;
    const n = Number(/(\d+)$/.exec(String(p.sourceId ?? ''))?.[1]);
    if (n && !map.has(n)) map.set(n, { index: n, url: p.url, title: p.title });
  }
  return map;
}

export function isToolPart(p: any): boolean {
  return typeof p?.type === 'string' && (p.type.startsWith('tool-') || p.type === 'dynamic-tool');
}

export function toolName(p: any): string {
  return p.type === 'dynamic-tool' ? p.toolName : p.type.slice(5);
}

function Artifact({ id, url, title }: { id: string; url: string; title?: string }) {
  const [src, setSrc] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    artifactUrl(id, url).then((u) => live && setSrc(u));
    return () => {
      live = false;
    };
  }, [id, url]);
  if (!src) return <div className="artifact loading">Loading artifact…</div>;
  return (
    <figure className="artifact">
      <iframe title={title ? `Artifact: ${title}` : 'Artifact'} src={src} sandbox="allow-scripts" referrerPolicy="no-referrer" />
      <figcaption>
        {title ?? 'Artifact'} · <a href={src} target="_blank" rel="noopener noreferrer">open</a>
      </figcaption>
    </figure>
  );
}

function ToolPart({ part, mcp }: { part: any; mcp?: { name?: string } }) {
  const name = toolName(part);
  const running = part.state === 'input-streaming' || part.state === 'input-available';
  const failed = part.state === 'output-error';
  const label = part.title ?? name;
  const out = part.output;
  return (
    <div className={`tool ${failed ? 'failed' : running ? 'running' : 'done'}`} data-tool={name}>
      <details>
        <summary>
          <span className="tool-state" aria-hidden="true">{running ? '…' : failed ? '!' : '✓'}</span>{' '}
          <span className="tool-title">{running ? label : `${name}`}</span>
          {mcp && <span className="badge mcp" title="a tool of your MCP server">MCP · {mcp.name}</span>}
          {!running && part.title && <span className="tool-sub"> — {part.title}</span>}
        </summary>
        <div className="tool-body">
          <h4>Input</h4>
          <pre>{JSON.stringify(part.input ?? null, null, 2)}</pre>
          {part.state === 'output-available' && (
            <>
              <h4>Output</h4>
              <pre>{typeof out === 'string' ? out : JSON.stringify(out, null, 2)}</pre>
            </>
          )}
          {failed && (
            <>
              <h4>Error</h4>
              <pre>{part.errorText}</pre>
            </>
          )}
        </div>
      </details>
      {name === 'render_html' && part.state === 'output-available' && out?.ok && out.artifact_id && (
        <Artifact id={out.artifact_id} url={out.url ?? `/v1/artifacts/${out.artifact_id}`} title={out.title} />
      )}
    </div>
  );
}

function Text({ text, sources }: { text: string; sources: Map<number, Source> }) {
  const math = hasMath(text);
  const [mathLoaded, setMathLoaded] = useState(mathReady());
  useEffect(() => {
    if (math && !mathLoaded) loadMath().then(() => setMathLoaded(true));
  }, [math, mathLoaded]);
  const html = useMemo(() => renderMarkdown(text, sources), [text, sources, mathLoaded]);
  return <div className="md" dangerouslySetInnerHTML={{ __html: html }} />;
}

interface Props {
  message: UIMessage;
  busy: boolean;
  isLast: boolean;
  selected: boolean;
  onSelect(): void;
  onEdit(text: string): void;
  onRegenerate(): void;
}

export const Message = memo(function Message({ message, busy, isLast, selected, onSelect, onEdit, onRegenerate }: Props) {
  const [editing, setEditing] = useState<string | null>(null);
  const sources = useMemo(() => sourcesOf(message), [message]);
  const meta = (message.metadata ?? {}) as any;
  const mcpTools = (meta.mcpTools ?? {}) as Record<string, { name?: string }>;
  const textOf = () => (message.parts as any[]).filter((p) => p.type === 'text').map((p) => p.text).join('\n');

  if (message.role === 'user') {
    return (
      <div className="msg user" data-role="user" data-message-id={message.id}>
        {editing !== null ? (
          <form
            className="edit"
            onSubmit={(e) => {
              e.preventDefault();
              setEditing(null);
              onEdit(editing);
            }}
          >
            <label>
              Edit message
              <textarea value={editing} onChange={(e) => setEditing(e.target.value)} autoFocus rows={3} />
            </label>
            <div className="row">
              <button type="submit">Save and send</button>
              <button type="button" onClick={() => setEditing(null)}>
                Cancel
              </button>
            </div>
          </form>
        ) : (
          <>
            {(message.parts as any[]).map((p, i) =>
              p.type === 'text' ? (
                <p key={i} className="user-text">
                  {p.text}
                </p>
              ) : p.type === 'file' ? (
                <FilePart key={i} part={p} />
              ) : null,
            )}
            <div className="actions">
              <button type="button" disabled={busy} onClick={() => setEditing(textOf())} aria-label="Edit this message">
                Edit
              </button>
            </div>
          </>
        )}
      </div>
    );
  }

  const sourceParts = (message.parts as any[]).filter((p) => p.type === 'source-url');
  return (
    <div className={`msg assistant${selected ? ' selected' : ''}`} data-role="assistant" data-message-id={message.id}>
      {(message.parts as any[]).map((p, i) => {
        if (p.type === 'text') return <Text key={i} text={p.text} sources={sources} />;
        if (p.type === 'reasoning')
          return (
            <details key={i} className="reasoning">
              <summary>Reasoning</summary>
              <pre>{p.text}</pre>
            </details>
          );
        if (isToolPart(p)) return <ToolPart key={p.toolCallId ?? i} part={p} mcp={mcpTools[toolName(p)]} />;
        if (p.type === 'file') return <FilePart key={i} part={p} />;
        return null;
      })}
      {sourceParts.length > 0 && (
        <ol className="sources" aria-label="Sources">
          {sourceParts.map((p: any) => (
            <li key={p.sourceId}>
              <a href={p.url} target="_blank" rel="noopener noreferrer">
                {p.title || p.url}
              </a>
            </li>
          ))}
        </ol>
      )}
      {meta.status && meta.status !== 'complete' && <div className="status">Answer {meta.status}</div>}
      <div className="actions">
        <button type="button" onClick={onSelect} aria-pressed={selected}>
          Inspect
        </button>
        {isLast && (
          <button type="button" disabled={busy} onClick={onRegenerate}>
            Regenerate
          </button>
        )}
      </div>
    </div>
  );
});

function FilePart({ part }: { part: any }) {
  if (typeof part.mediaType === 'string' && part.mediaType.startsWith('image/'))
    return <img className="attachment" src={part.url} alt={part.filename ?? 'attached image'} />;
  return <div className="attachment">Attached: {part.filename ?? part.mediaType}</div>;
}
