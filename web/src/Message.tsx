// One message of the chat: a user's text and attachments, or an answer with its text, reasoning, tool
// calls, artifacts, sources and how it ended.
import { memo, useEffect, useMemo, useRef, useState, type MouseEvent } from 'react';
import { isToolUIPart, type FileUIPart } from 'ai';
import { artifactUrl } from './api';
import { ApprovalCard, type ApprovalAnswer } from './Approval';
import { AuthorizationCard } from './Authorization';
import { ElicitationCard, type AnswerElicitation } from './Elicitation';
import { hasMath, loadMath, mathReady, renderMarkdown, type CitationCheck } from './markdown';
import { checksOf, sourcesOf, textOf, toolName, type AnswerStatus, type ChatMessage, type Source, type TitledToolPart } from './messages';
import { Sources, sourceAnchor } from './Sources';

function Artifact({ id, title }: { id: string; title?: string }) {
  const [src, setSrc] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    artifactUrl(id)
      .then((u) => live && setSrc(u))
      .catch((e: Error) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [id]);
  if (error) return <div className="artifact">The artifact could not be loaded: {error}</div>;
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

/// `render_html`'s output as the tool returns it.
interface RenderedArtifact {
  ok?: boolean;
  artifact_id?: string;
  title?: string;
}

/// A progress title ("Searching for “rust”...") without its trailing dots, for a call that ended.
function settled(title: string): string {
  return title.replace(/(\.\.\.|…)\s*$/, '');
}

/// Where a call stands, for its icon, its class and the word after its name.
function stateOf(part: TitledToolPart): { kind: 'running' | 'waiting' | 'failed' | 'denied' | 'done'; icon: string; word: string } {
  switch (part.state) {
    case 'input-streaming':
    case 'input-available':
      return { kind: 'running', icon: '…', word: 'running' };
    case 'approval-requested':
      return { kind: 'waiting', icon: '?', word: 'waits for your approval' };
    case 'approval-responded':
      return part.approval.approved
        ? { kind: 'running', icon: '…', word: 'approved' }
        : { kind: 'denied', icon: '✕', word: 'denied' };
    case 'output-denied':
      return { kind: 'denied', icon: '✕', word: 'denied' };
    case 'output-error':
      return { kind: 'failed', icon: '!', word: 'failed' };
    default:
      return { kind: 'done', icon: '✓', word: 'done' };
  }
}

interface ToolPartProps {
  part: TitledToolPart;
  mcp?: { name?: string };
  /// Whether an answer to a waiting call can go now (no other turn of the thread is running).
  canAnswer: boolean;
  onAnswer(answer: ApprovalAnswer): void;
}

function ToolPart({ part, mcp, canAnswer, onAnswer }: ToolPartProps) {
  const name = toolName(part);
  const state = stateOf(part);
  const out = part.state === 'output-available' ? part.output : undefined;
  const artifact = name === 'render_html' ? (out as RenderedArtifact | undefined) : undefined;
  const reason = part.state === 'output-denied' || part.state === 'approval-responded' ? part.approval.reason : undefined;
  const root = useRef<HTMLDivElement>(null);
  const answer = (a: ApprovalAnswer) => {
    // The card goes once answered: the focus stays on this call rather than falling to the page.
    root.current?.focus();
    onAnswer(a);
  };
  return (
    <div className={`tool ${state.kind}`} data-tool={name} ref={root} tabIndex={-1}>
      <details>
        <summary>
          <span className="tool-state" aria-hidden="true">
            {state.icon}
          </span>{' '}
          {state.kind === 'running' && part.state !== 'approval-responded' ? (
            <span className="tool-title">{part.title ?? `Running ${name}…`}</span>
          ) : (
            <>
              <span className="tool-title">{name}</span> <span className="tool-outcome">{state.word}</span>
              {part.title && <span className="tool-sub"> · {settled(part.title)}</span>}
            </>
          )}
          {mcp && (
            <span className="badge mcp" title="a tool of your MCP server">
              MCP · {mcp.name}
            </span>
          )}
        </summary>
        <div className="tool-body">
          <h4>Input</h4>
          <pre tabIndex={0}>{JSON.stringify(part.input ?? null, null, 2)}</pre>
          {part.state === 'output-available' && (
            <>
              <h4>Output</h4>
              <pre tabIndex={0}>{typeof out === 'string' ? out : JSON.stringify(out, null, 2)}</pre>
            </>
          )}
          {part.state === 'output-error' && (
            <>
              <h4>Error</h4>
              <pre tabIndex={0}>{part.errorText}</pre>
            </>
          )}
        </div>
      </details>
      {part.state === 'approval-requested' && (
        <ApprovalCard approvalId={part.approval.id} tool={name} input={part.input} disabled={!canAnswer} onAnswer={answer} />
      )}
      {state.kind === 'denied' && reason && <p className="tool-denied-reason">Denied: {reason}</p>}
      {artifact?.ok && artifact.artifact_id && <Artifact id={artifact.artifact_id} title={artifact.title} />}
    </div>
  );
}

interface TextProps {
  text: string;
  sources: Map<number, Source>;
  messageId: string;
  part: number;
  checks: CitationCheck[];
}

function Text({ text, sources, messageId, part, checks }: TextProps) {
  const math = hasMath(text);
  const [mathLoaded, setMathLoaded] = useState(mathReady());
  useEffect(() => {
    if (math && !mathLoaded) loadMath().then(() => setMathLoaded(true));
  }, [math, mathLoaded]);
  const html = useMemo(
    () => renderMarkdown(text, sources, (n) => sourceAnchor(messageId, n), checks, `cite-${messageId}-${part}`),
    [text, sources, messageId, part, checks, mathLoaded],
  );
  // A chip moves focus to its entry in the source list rather than changing the page's address. On a
  // touch screen the first tap on a checked chip shows its passage instead (there is no hover).
  const onClick = (e: MouseEvent<HTMLDivElement>) => {
    const chip = (e.target as Element).closest('a.cite');
    const touch = (e.nativeEvent as PointerEvent).pointerType === 'touch';
    if (chip?.hasAttribute('data-check') && touch && !chip.classList.contains('open')) {
      e.preventDefault();
      chip.classList.add('open');
      return;
    }
    const entry = chip && document.getElementById(chip.getAttribute('href')!.slice(1));
    if (!entry) return;
    e.preventDefault();
    entry.scrollIntoView({ block: 'nearest' });
    entry.querySelector<HTMLElement>('a')?.focus();
  };
  return <div className="md" onClick={onClick} dangerouslySetInnerHTML={{ __html: html }} />;
}

const STATUS_LABELS: Partial<Record<AnswerStatus, string>> = {
  stopped: 'Answer stopped',
  error: 'Answer failed',
  interrupted: 'Answer interrupted: the server stopped before it finished',
};

interface Props {
  message: ChatMessage;
  busy: boolean;
  isLast: boolean;
  selected: boolean;
  onSelect(): void;
  onEdit(text: string): void;
  onRegenerate(): void;
  onApprovalAnswer(answer: ApprovalAnswer): void;
  onElicitationAnswer: AnswerElicitation;
}

export const Message = memo(function Message({ message, busy, isLast, selected, onSelect, onEdit, onRegenerate, onApprovalAnswer, onElicitationAnswer }: Props) {
  const sources = useMemo(() => sourcesOf(message), [message]);
  if (message.role === 'user') return <UserMessage message={message} busy={busy} onEdit={onEdit} />;
  const mcpTools = message.metadata?.mcpTools ?? {};
  const status = message.metadata?.status;
  const label = status && STATUS_LABELS[status];
  // An answer waiting for approvals goes on once they are answered; asking it again would be refused.
  const waiting = message.parts.some((p) => isToolUIPart(p) && (p.state === 'approval-requested' || p.state === 'approval-responded'));
  return (
    <article className={`msg assistant${selected ? ' selected' : ''}`} data-role="assistant" data-message-id={message.id} data-status={status} aria-label="Answer">
      {message.parts.map((p, i) => {
        if (p.type === 'text') {
          const part = message.parts.slice(0, i).filter((q) => q.type === 'text').length;
          return <Text key={i} text={p.text} sources={sources} messageId={message.id} part={part} checks={checksOf(message, part)} />;
        }
        if (p.type === 'reasoning')
          return (
            <details key={i} className="reasoning">
              <summary>Reasoning</summary>
              <pre tabIndex={0}>{p.text}</pre>
            </details>
          );
        if (isToolUIPart(p))
          return <ToolPart key={p.toolCallId} part={p} mcp={mcpTools[toolName(p)]} canAnswer={!busy} onAnswer={onApprovalAnswer} />;
        if (p.type === 'file') return <FilePart key={i} part={p} />;
        if (p.type === 'data-elicitation')
          return <ElicitationCard key={p.id ?? i} data={p.data} live={!status || status === 'streaming'} onAnswer={onElicitationAnswer} />;
        if (p.type === 'data-authorization') return <AuthorizationCard key={p.id ?? i} data={p.data} live={!status || status === 'streaming'} />;
        return null;
      })}
      <Sources messageId={message.id} sources={sources} />
      {label && (
        <p className={`status ${status}`} data-testid="answer-status">
          {label}
          {status === 'error' && message.metadata?.errorCode && (
            <>
              {' '}
              (<code>{message.metadata.errorCode}</code>)
            </>
          )}
        </p>
      )}
      <div className="actions">
        <button type="button" onClick={onSelect} aria-pressed={selected}>
          Inspect
        </button>
        {isLast && !waiting && (
          <button type="button" disabled={busy} onClick={onRegenerate}>
            Regenerate
          </button>
        )}
      </div>
    </article>
  );
});

function UserMessage({ message, busy, onEdit }: { message: ChatMessage; busy: boolean; onEdit(text: string): void }) {
  const [editing, setEditing] = useState<string | null>(null);
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
          {message.parts.map((p, i) =>
            p.type === 'text' ? (
              <p key={i} className="user-text">
                {p.text}
              </p>
            ) : p.type === 'file' ? (
              <FilePart key={i} part={p} />
            ) : null,
          )}
          <div className="actions">
            <button type="button" disabled={busy} onClick={() => setEditing(textOf(message))} aria-label="Edit this message">
              Edit
            </button>
          </div>
        </>
      )}
    </div>
  );
}

function FilePart({ part }: { part: FileUIPart }) {
  if (part.mediaType.startsWith('image/')) return <img className="attachment" src={part.url} alt={part.filename ?? 'attached image'} />;
  return <div className="attachment">Attached: {part.filename ?? part.mediaType}</div>;
}
