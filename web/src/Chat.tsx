// The open thread: its stored messages (the newest page first, older pages on request) handed to
// `useChat`, the composer, and the answer still running when the page was loaded, which is resumed.
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { useChat } from '@ai-sdk/react';
import { DefaultChatTransport, isToolUIPart, lastAssistantMessageIsCompleteWithApprovalResponses } from 'ai';
import { BASE_URL, api, apiPage, authHeaders, messageOf, type StoredMessage } from './api';
import type { ElicitationReply } from './Elicitation';
import { Message } from './Message';
import { toUi, type AnswerStatus, type ChatMessage } from './messages';

interface Props {
  threadId: string;
  isNew: boolean;
  model: string;
  onChanged(): void;
  selectedMessage: ChatMessage | null;
  onSelect(message: ChatMessage | null): void;
}

const messagesPath = (threadId: string) => `/v1/threads/${encodeURIComponent(threadId)}/messages`;

interface Loaded {
  messages: ChatMessage[];
  older: string | null;
  /// The last answer was still streaming when read: it is left out and its stream resumed.
  resume: boolean;
}

/// The newest page of the thread. An answer still `streaming` is left out: the resumed stream
/// rebuilds it from its start, and `useChat` would otherwise append it to the stored copy.
async function loadThread(threadId: string): Promise<Loaded> {
  const page = await apiPage<StoredMessage>(messagesPath(threadId));
  const last = page.items.at(-1);
  const resume = last?.role === 'assistant' && last.status === 'streaming';
  return { messages: toUi(resume ? page.items.slice(0, -1) : page.items), older: page.next, resume };
}

/// Loads the end of the thread's stored conversation (its newest page), then hands it to useChat.
export function Chat(props: Props) {
  const [initial, setInitial] = useState<Loaded | null>(props.isNew ? { messages: [], older: null, resume: false } : null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (props.isNew) return;
    let live = true;
    loadThread(props.threadId)
      .then((loaded) => live && setInitial(loaded))
      .catch((e) => live && setError(messageOf(e)));
    return () => {
      live = false;
    };
  }, [props.threadId, props.isNew]);
  if (error)
    return (
      <div className="chat-error" role="alert">
        {error}
      </div>
    );
  if (!initial) return <div className="chat loading">Loading…</div>;
  return <ChatView {...props} initial={initial} />;
}

function ChatView({ threadId, model, onChanged, initial, selectedMessage, onSelect }: Props & { initial: Loaded }) {
  const modelRef = useRef(model);
  modelRef.current = model;
  const transport = useMemo(
    () =>
      new DefaultChatTransport<ChatMessage>({
        api: `${BASE_URL}/v1/chat`,
        // The app runs AI SDK 7: the gateway may send what 7.x understands (tool titles, finish and
        // abort reasons), which it leaves out for clients that do not say so.
        headers: () => ({ ...authHeaders(), 'X-Promptgate-UI-Stream': 'v7' }),
        // Until the model list has loaded no model is picked; the gateway then uses the default.
        body: () => (modelRef.current ? { model: modelRef.current } : {}),
        // The gateway keeps the history: only the new (or edited) message travels, so long threads
        // with attachments stay under the request body limit.
        // An answer to a tool approval (the last message is the answer that asked) names no model:
        // the model that asked goes on, whichever this page has picked.
        prepareSendMessagesRequest: ({ id, messages, trigger, messageId, body }) => {
          const { model, ...rest } = body ?? {};
          const picked = trigger === 'submit-message' && messages.at(-1)?.role === 'assistant' ? {} : { model };
          return { body: { ...rest, ...picked, id, trigger, messageId, messages: messages.slice(-1) } };
        },
      }),
    [],
  );
  // How an answer ended is stored with it but not streamed: the stream's end says it for this page.
  const markEnded = (id: string, status: AnswerStatus) =>
    setMessages((now) => now.map((m) => (m.id === id ? { ...m, metadata: { ...m.metadata, status } } : m)));
  const { messages, setMessages, sendMessage, status, stop, regenerate, error, clearError, resumeStream, addToolApprovalResponse } = useChat<ChatMessage>({
    id: threadId,
    messages: initial.messages,
    transport,
    experimental_throttle: 40,
    // Once every waiting call of the answer is approved or denied, the answers go and the same
    // answer continues (the gateway checks them against the calls it stored).
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
    onError: () => {
      // An answer refused by the gateway (the call was answered in another browser, or cancelled)
      // leaves this page's copy behind: the stored thread says how the call stands now.
      if (answering.current) reread();
    },
    onFinish: ({ message, isAbort, isError }) => {
      answering.current = false;
      if (message.role === 'assistant' && (isAbort || isError)) markEnded(message.id, isAbort ? 'stopped' : 'error');
      onChanged();
    },
  });
  const answering = useRef(false);
  // A question from an MCP server is answered beside the running answer, which then carries it on.
  const answerElicitation = useCallback(
    async (id: string, reply: ElicitationReply) => {
      try {
        await api(`/v1/threads/${encodeURIComponent(threadId)}/elicitations/${encodeURIComponent(id)}`, { method: 'POST', body: reply });
        return null;
      } catch (e) {
        return messageOf(e);
      }
    },
    [threadId],
  );
  const reread = () => {
    loadThread(threadId)
      .then((loaded) => {
        setMessages(loaded.messages);
        if (loaded.resume) resumeStream().catch(() => undefined);
      })
      .catch(() => undefined);
  };
  useResume(initial.resume, threadId, resumeStream, setMessages);
  const busy = status === 'submitted' || status === 'streaming';
  // The gateway refuses other messages while a call waits for the user's answer (409).
  const waiting = !busy && hasWaitingCall(messages.at(-1));
  const asked = busy && hasOpenQuestion(messages.at(-1));
  const authorizing = busy && hasWaitingAuthorization(messages.at(-1));
  const [input, setInput] = useState('');
  const [files, setFiles] = useState<FileList | null>(null);
  const fileRef = useRef<HTMLInputElement>(null);
  const endRef = useRef<HTMLDivElement>(null);

  const stopTurn = () => {
    stop();
    // Closing the stream stops the turn too; the explicit stop also covers a proxy that keeps it open.
    api(`/v1/chat/${encodeURIComponent(threadId)}/stop`, { method: 'POST' }).catch(() => undefined);
  };

  // Escape stops a running answer before anything else sees the key (panels close on it otherwise).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape' && busy && !e.defaultPrevented) {
        e.preventDefault();
        stopTurn();
      }
    };
    window.addEventListener('keydown', onKey, true);
    return () => window.removeEventListener('keydown', onKey, true);
  });

  // Older pages are put in front of what useChat holds; the view stays where it was.
  const [older, setOlder] = useState(initial.older);
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
    if ((!text && !files?.length) || busy || waiting) return;
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
            onApprovalAnswer={(answer) => {
              clearError();
              answering.current = true;
              addToolApprovalResponse(answer);
            }}
            onElicitationAnswer={answerElicitation}
          />
        ))}
        {status === 'submitted' && <div className="thinking">Thinking…</div>}
        {waiting && (
          <p className="waiting-note" role="status">
            Approve or deny the tool call above; the chat takes new messages once it is answered.
          </p>
        )}
        {asked && (
          <p className="waiting-note" role="status">
            A tool asks you something above; the answer goes on once you reply (or Stop).
          </p>
        )}
        {authorizing && (
          <p className="waiting-note" role="status">
            A tool waits for your authorization above; the answer goes on once you have given it (or Stop).
          </p>
        )}
        {error && (
          <div className="chat-error" role="alert">
            {messageOf(error)}
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
          <button type="submit" disabled={waiting}>
            Send
          </button>
        )}
      </form>
    </div>
  );
}

/// Whether `message` is an answer with a tool call still waiting for the user's approval.
function hasWaitingCall(message: ChatMessage | undefined): boolean {
  return message?.role === 'assistant' && message.parts.some((p) => isToolUIPart(p) && p.state === 'approval-requested');
}

/// Whether `message` carries a question from an MCP server that its running tool call waits on.
function hasOpenQuestion(message: ChatMessage | undefined): boolean {
  return message?.role === 'assistant' && message.parts.some((p) => p.type === 'data-elicitation' && p.data.state === 'waiting');
}

/// Whether `message` carries a tool call that waits for the user to authorize its service.
function hasWaitingAuthorization(message: ChatMessage | undefined): boolean {
  return message?.role === 'assistant' && message.parts.some((p) => p.type === 'data-authorization' && p.data.state === 'waiting');
}

/// Resumes the answer that was streaming when the thread was read. When the turn ended in between
/// (the gateway answers `204`) or the stream cannot be replayed, the stored thread is read again, so
/// the answer shows as stored instead of not at all.
function useResume(
  wanted: boolean,
  threadId: string,
  resumeStream: () => Promise<void>,
  setMessages: (update: (now: ChatMessage[]) => ChatMessage[]) => void,
) {
  const started = useRef(false);
  const reread = useCallback(() => {
    apiPage<StoredMessage>(messagesPath(threadId))
      .then((page) => setMessages((now) => (now.at(-1)?.role === 'assistant' ? now : toUi(page.items))))
      .catch(() => undefined);
  }, [threadId, setMessages]);
  useEffect(() => {
    if (!wanted || started.current) return;
    started.current = true;
    resumeStream()
      .catch(() => undefined)
      .finally(reread);
  }, [wanted, resumeStream, reread]);
}
