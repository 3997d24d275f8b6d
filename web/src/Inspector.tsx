import { useEffect, useState } from 'react';
import type { UIMessage } from 'ai';
import { api } from './api';
import { isToolPart, sourcesOf, toolName } from './Message';

interface PreviewContext {
  tokenizer: string;
  window_tokens: number;
  prompt_tokens: number;
  sent_messages: number;
  summarised_messages: number;
  dropped_messages: number;
  summary?: string | null;
  compaction_due: boolean;
}

interface Preview {
  model: string;
  system: string;
  stable: string;
  volatile: string;
  notes?: string[];
  tools: { name: string; description?: string }[];
  has_web_tools: boolean;
  context?: PreviewContext;
}

const WEB_TOOLS = new Set(['search', 'fetch_content']);

/// What the next send would use (the preview endpoint), and how the selected answer came about.
export function Inspector({ threadId, model, message, refresh }: { threadId: string; model: string; message: UIMessage | null; refresh: number }) {
  const [preview, setPreview] = useState<Preview | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    setError(null);
    const q = model ? `?model=${encodeURIComponent(model)}` : '';
    api<Preview>(`/v1/threads/${encodeURIComponent(threadId)}/prompt${q}`)
      .then((p) => live && setPreview(p))
      .catch((e) => live && (setPreview(null), setError(e.status === 404 ? 'The thread starts with your first message.' : e.message)));
    return () => {
      live = false;
    };
  }, [threadId, model, refresh]);

  return (
    <aside className="inspector" aria-label="Inspector">
      {message && message.role === 'assistant' && <AnswerDetails message={message} />}
      <section>
        <h2>Next send</h2>
        {error && <p className="hint">{error}</p>}
        {preview && (
          <>
            <p>
              Model <code>{preview.model}</code> · web tools {preview.has_web_tools ? 'on' : 'off'}
            </p>
            {preview.context && <NextContext context={preview.context} />}
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
              <pre className="prompt" data-testid="prompt-preview">
                {preview.system}
              </pre>
            </details>
          </>
        )}
      </section>
    </aside>
  );
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
          <pre className="prompt">{context.summary}</pre>
        </details>
      )}
    </div>
  );
}

function AnswerDetails({ message }: { message: UIMessage }) {
  const meta = (message.metadata ?? {}) as any;
  const parts = message.parts as any[];
  const steps = parts.filter((p) => p.type === 'step-start').length;
  const tools = parts.filter(isToolPart);
  const webCalls = tools.filter((p) => WEB_TOOLS.has(toolName(p))).length;
  const sources = [...sourcesOf(message).values()].sort((a, b) => a.index - b.index);
  return (
    <section className="answer-details">
      <h2>This answer</h2>
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
        {meta.usage && (
          <>
            <dt>Tokens</dt>
            <dd>
              {meta.usage.inputTokens ?? '?'} in · {meta.usage.outputTokens ?? '?'} out
            </dd>
          </>
        )}
      </dl>
      <h3>Tool calls ({tools.length})</h3>
      <ol>
        {tools.map((p) => (
          <li key={p.toolCallId}>
            <code>{toolName(p)}</code> — {p.state}
            {meta.mcpTools?.[toolName(p)] && <span className="badge mcp">MCP · {meta.mcpTools[toolName(p)].name}</span>}
          </li>
        ))}
      </ol>
      <h3>Sources ({sources.length})</h3>
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
