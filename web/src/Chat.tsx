import { useEffect, useMemo, useRef, useState } from 'react';
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, type UIMessage } from 'ai';
import { BASE_URL, api, apiPage, authHeaders, type StoredMessage } from './api';
import { Message } from './Message';

interface Props {
  threadId: string;
  isNew: boolean;
  model: string;
  onChanged(): void;
  selectedMessage: UIMessage | null;
  onSelect(message: UIMessage | null): void;
}

function toUi(stored: StoredMessage[]): UIMessage[] {
  return stored.map((m) => ({ id: m.id, role: m.role, parts: m.parts, metadata: m.metadata })) as UIMessage[];
}

/// Loads the end of the thread's stored conversation (its newest page), then hands it to useChat;
/// earlier pages load on request.
export function Chat(props: Props) {
  const [initial, setInitial] = useState<{ messages: UIMessage[]; older: string | null } | null>(
    props.isNew ? { messages: [], older: null } : null,
  );
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (props.isNew) return;
    let live = true;
    apiPage<StoredMessage>(`/v1/threads/${encodeURIComponent(props.threadId)}/messages`)
      .then((page) => {
        if (live) setInitial({ messages: toUi(page.items), older: page.next });
      })
      .catch((e) => live && setError(String(e.message ?? e)));
    return () => {
      live = false;
    };
  }, [props.threadId, props.isNew]);
  if (error) return <div className="chat-error" role="alert">{error}</div>;
  if (!initial) return <div className="chat loading">Loading…</div>;
  return <ChatView {...props} initial={initial.messages} older={initial.older} />;
}

function ChatView({ threadId, model, onChanged, initial, older: firstOlder, selectedMessage, onSelect }: Props & { initial: UIMessage[]; older: string | null }) {
  const modelRef = useRef(model);
  modelRef.current = model;
  const transport = useMemo(
    () =>
      new DefaultChatTransport<UIMessage>({
        api: `${BASE_URL}/v1/chat`,
        // The app runs AI SDK 7: the gateway may send what 7.x understands (tool titles, finish and
        // abort reasons), which it leaves out for clients that do not say so.
        headers: () => ({ ...authHeaders(), 'X-Promptgate-UI-Stream': 'v7' }),
        // Until the model list has loaded no model is picked; the gateway then uses the default.
        body: () => (modelRef.current ? { model: modelRef.current } : {}),
        // The gateway keeps the history: only the new (or edited) message travels, so long threads
        // with attachments stay under the request body limit.
        prepareSendMessagesRequest: ({ id, messages, trigger, messageId, body }) => ({
          body: { ...body, id, trigger, messageId, messages: messages.slice(-1) },
        }),
      }),
    [],
  );
  const { messages, setMessages, sendMessage, status, stop, regenerate, error, clearError } = useChat({
    id: threadId,
    messages: initial,
    transport,
    experimental_throttle: 40,
    onFinish: () => onChanged(),
  });
  const busy = status === 'submitted' || status === 'streaming';
  const [input, setInput] = useState('');
  const [files, setFiles] = useState<FileList | null>(null);
  const fileRef = useRef<HTMLInputElement>(null);
  const endRef = useRef<HTMLDivElement>(null);

  const stopTurn = () => {
    stop();
    // Closing the stream stops the turn too; the explicit stop also covers a proxy that keeps it open.
    api(`/v1/chat/${encodeURIComponent(threadId)}/stop`, { method: 'POST' }).catch(() => undefined);
  };

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape' && busy) stopTurn();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  });

  // Older pages are put in front of what useChat holds; the view stays where it was.
  const [older, setOlder] = useState(firstOlder);
  const loadOlder = () => {
    if (!older) return;
    apiPage<StoredMessage>(older)
      .then((page) => {
        setMessages((now) => {
          const have = new Set(now.map((m) => m.id));
          return [...toUi(page.items).filter((m) => !have.has(m.id)), ...now];
        });
        setOlder(page.next);
      })
      .catch(() => undefined);
  };

  useEffect(() => {
    endRef.current?.scrollIntoView?.({ block: 'end' });
  }, [messages[messages.length - 1]?.id, messages.length === 0, status]);

  useEffect(() => {
    if (status === 'submitted') onChanged();
  }, [status]);

  const submit = () => {
    const text = input.trim();
    if ((!text && !files?.length) || busy) return;
    clearError();
    sendMessage(files?.length ? { text, files } : { text });
    setInput('');
    setFiles(null);
    if (fileRef.current) fileRef.current.value = '';
  };

  return (
    <div className="chat">
      <div className="messages" aria-live="polite">
        {older && (
          <button type="button" className="older" onClick={loadOlder}>
            Load earlier messages
          </button>
        )}
        {messages.length === 0 && <p className="empty">Ask anything. The gateway builds the prompt and runs the tools.</p>}
        {messages.map((m, i) => (
          <Message
            key={m.id}
            message={m}
            busy={busy}
            isLast={i === messages.length - 1}
            selected={selectedMessage?.id === m.id}
            onSelect={() => onSelect(selectedMessage?.id === m.id ? null : m)}
            onEdit={(text) => sendMessage({ text, messageId: m.id })}
            onRegenerate={() => regenerate()}
          />
        ))}
        {status === 'submitted' && <div className="thinking">Thinking…</div>}
        {error && (
          <div className="chat-error" role="alert">
            {error.message}
          </div>
        )}
        <div ref={endRef} />
      </div>
      <form
        className="composer"
        onSubmit={(e) => {
          e.preventDefault();
          submit();
        }}
      >
        <label className="sr-only" htmlFor="composer-input">
          Message
        </label>
        <textarea
          id="composer-input"
          placeholder="Message (Enter to send, Shift+Enter for a new line, Escape to stop)"
          value={input}
          rows={2}
          onChange={(e) => setInput(e.target.value)}
          onKeyDown={(e) => {
            if (e.key === 'Enter' && !e.shiftKey && !e.nativeEvent.isComposing) {
              e.preventDefault();
              submit();
            }
          }}
        />
        <label className="attach">
          Attach
          <input ref={fileRef} type="file" multiple aria-label="Attach files" onChange={(e) => setFiles(e.target.files)} />
        </label>
        {files?.length ? <span className="attached">{files.length} file(s)</span> : null}
        {busy ? (
          <button type="button" onClick={stopTurn}>
            Stop
          </button>
        ) : (
          <button type="submit">Send</button>
        )}
      </form>
    </div>
  );
}
