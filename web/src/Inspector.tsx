// The inspector: what the next send would use (the prompt preview of the thread, or of a new chat's
// first send), and how the selected answer came about.
import { useEffect, useState } from 'react';
import { api, messageOf, type PreviewContext, type PromptPreview } from './api';
import { Overlay } from './Overlay';
import { sourcesOf, toolName, toolParts, type ChatMessage } from './messages';

const WEB_TOOLS = new Set(['search', 'fetch_content']);

interface Props {
  threadId: string;
  /// The chat has not been sent yet: the preview is of a new chat's first send.
  isNew: boolean;
  model: string;
  message: ChatMessage | null;
  refresh: number;
  onClose(): void;
}

export function Inspector({ threadId, isNew, model, message, refresh, onClose }: Props) {
  const [preview, setPreview] = useState<PromptPreview | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    setError(null);
    const q = model ? `?model=${encodeURIComponent(model)}` : '';
    const path = isNew ? `/v1/prompt${q}` : `/v1/threads/${encodeURIComponent(threadId)}/prompt${q}`;
    api<PromptPreview>(path)
      .then((p) => live && setPreview(p))
      .catch((e) => live && (setPreview(null), setError(messageOf(e))));
    return () => {
      live = false;
    };
  }, [threadId, isNew, model, refresh]);

  return (
    <Overlay label="Inspector" className="inspector">
      <div className="overlay-head">
        <h2>Inspector</h2>
        <button type="button" className="close" aria-label="Close inspector" onClick={onClose}>
          ×
        </button>
      </div>
      {message && message.role === 'assistant' && <AnswerDetails message={message} />}
      <section aria-labelledby="next-send">
        <h3 id="next-send">Next send</h3>
        {isNew && <p data-testid="new-chat-note">A new chat: this is what its first message would be sent with.</p>}
        {error && <p role="alert">{error}</p>}
        {preview && (
          <>
            <p>
              Model <code>{preview.model}</code> · <span data-testid="web-tools">{webToolsLine(preview)}</span>
            </p>
            <NextContext context={preview.context} />
            <details open>
              <summary>Tools ({preview.tools.length})</summary>
              <ul className="tool-list">
                {preview.tools.map((t) => (
                  <li key={t.name}>
                    <code>{t.name}</code>
                  </li>
                ))}
              </ul>
            </details>
            <details open>
              <summary>System prompt</summary>
              {/* Focusable so a keyboard can scroll it. */}
              <pre className="prompt" data-testid="prompt-preview" tabIndex={0} aria-label="System prompt">
                {preview.system}
              </pre>
            </details>
          </>
        )}
      </section>
    </Overlay>
  );
}

/// Whether the next send offers web search, and when not, why, as the gateway decided it: the
/// "Web tools" setting, a model that calls no tools, or a gateway without a search backend.
function webToolsLine(preview: PromptPreview): string {
  if (preview.has_web_tools) return 'web tools on';
  switch (preview.web_tools_off) {
    case 'settings':
      return 'web tools off (turned off in Settings)';
    case 'model':
      return 'web tools off (this model calls no tools)';
    case 'no_search_backend':
      return 'web tools off (this gateway has no search backend, whatever Settings say)';
    default:
      return 'web tools off';
  }
}

/// How much of the thread the next send shows the model, and the summary it reads.
function NextContext({ context }: { context: PreviewContext }) {
  const left = context.summarised_messages + context.dropped_messages;
  return (
    <div className="context-window" data-testid="next-context">
      <p>
        {context.sent_messages} message(s) sent · ~{context.prompt_tokens} of {context.window_tokens} tokens ({context.tokenizer})
        {left > 0 && (
          <>
            {' '}
            · {context.summarised_messages} summarised, {context.dropped_messages} left out
          </>
        )}
        {context.compaction_due && <> · the next send compacts the thread</>}
      </p>
      {context.summary && (
        <details>
          <summary>Summary of the earlier conversation</summary>
          <pre className="prompt" tabIndex={0}>
            {context.summary}
          </pre>
        </details>
      )}
    </div>
  );
}

function AnswerDetails({ message }: { message: ChatMessage }) {
  const meta = message.metadata ?? {};
  const steps = message.parts.filter((p) => p.type === 'step-start').length;
  const tools = toolParts(message);
  const webCalls = tools.filter((p) => WEB_TOOLS.has(toolName(p))).length;
  const sources = [...sourcesOf(message).values()].sort((a, b) => a.index - b.index);
  return (
    <section className="answer-details" aria-labelledby="this-answer">
      <h3 id="this-answer">This answer</h3>
      <dl>
        <dt>Model</dt>
        <dd>{meta.modelId ?? '—'}</dd>
        <dt>Status</dt>
        <dd>{meta.status ?? meta.finishReason ?? '—'}</dd>
        <dt>Steps</dt>
        <dd>{steps}</dd>
        <dt>Web budget used</dt>
        <dd>{webCalls} web call(s)</dd>
        {meta.context && (
          <>
            <dt>Context</dt>
            <dd data-testid="answer-context">
              {meta.context.sentMessages} message(s) sent
              {meta.context.summarisedMessages > 0 && <> · {meta.context.summarisedMessages} summarised</>}
              {meta.context.droppedMessages > 0 && <> · {meta.context.droppedMessages} left out</>}
              {meta.context.compacted && <> · compacted on this send</>}
            </dd>
          </>
        )}
        {meta.errorCode && (
          <>
            <dt>Error</dt>
            <dd>
              <code>{meta.errorCode}</code>
            </dd>
          </>
        )}
        {meta.traceId && (
          <>
            <dt>Trace</dt>
            <dd data-testid="answer-trace">
              {meta.traceUrl ? (
                <a href={meta.traceUrl} target="_blank" rel="noopener noreferrer">
                  <code>{meta.traceId}</code>
                </a>
              ) : (
                <code>{meta.traceId}</code>
              )}
            </dd>
          </>
        )}
        {meta.usage && (
          <>
            <dt>Tokens</dt>
            <dd>
              {meta.usage.inputTokens ?? '?'} in · {meta.usage.outputTokens ?? '?'} out
            </dd>
          </>
        )}
      </dl>
      <h4>Tool calls ({tools.length})</h4>
      <ol>
        {tools.map((p) => (
          <li key={p.toolCallId}>
            <code>{toolName(p)}</code> — {p.state}
            {meta.mcpTools?.[toolName(p)] && <span className="badge mcp">MCP · {meta.mcpTools[toolName(p)].name}</span>}
          </li>
        ))}
      </ol>
      <h4>Sources ({sources.length})</h4>
      <ol>
        {sources.map((s) => (
          <li key={s.index} value={s.index}>
            <a href={s.url} target="_blank" rel="noopener noreferrer">
              {s.title || s.url}
            </a>
          </li>
        ))}
      </ol>
    </section>
  );
}
