import { useCallback, useEffect, useRef, useState } from 'react';
import type { UIMessage } from 'ai';
import { ApiError, api, getToken, listModels, setToken, type Model, type Thread } from './api';
import { MoreWhenVisible, useThreadList } from './threadList';
import { Chat } from './Chat';
import { Inspector } from './Inspector';
import { IntegrationsPanel, McpPanel, ProjectsPanel, SettingsPanel, SkillsPanel } from './Panels';

type Panel = 'settings' | 'mcp' | 'skills' | 'projects' | 'integrations' | null;

function newThreadId(): string {
  return `t-${crypto.randomUUID()}`;
}

function threadFromUrl(): string | null {
  return new URLSearchParams(location.search).get('thread');
}

export function App() {
  const [auth, setAuth] = useState<'checking' | 'ok' | 'needed'>('checking');
  const check = useCallback(() => {
    api('/v1/settings')
      .then(() => setAuth('ok'))
      .catch((e) => setAuth(e instanceof ApiError && e.status === 401 ? 'needed' : 'ok'));
  }, []);
  useEffect(check, [check]);
  if (auth === 'checking') return <div className="loading">Loading…</div>;
  if (auth === 'needed') return <SignIn onDone={check} />;
  return <Main onSignOut={getToken() ? () => (setToken(null), setAuth('needed')) : undefined} />;
}

function SignIn({ onDone }: { onDone(): void }) {
  const [token, setValue] = useState('');
  const [error, setError] = useState<string | null>(null);
  return (
    <main className="signin">
      <h1>promptgate</h1>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setToken(token.trim());
          try {
            await api('/v1/settings');
            onDone();
          } catch (err: any) {
            setToken(null);
            setError(err.message);
          }
        }}
      >
        <label>
          Access token
          <input type="password" value={token} onChange={(e) => setValue(e.target.value)} autoComplete="current-password" required />
        </label>
        <p className="hint">
          Ask your administrator for a token (<code>promptgate users create NAME</code>). It is kept in this browser only.
        </p>
        {error && <p role="alert">{error}</p>}
        <button type="submit">Sign in</button>
      </form>
    </main>
  );
}

function Main({ onSignOut }: { onSignOut?: () => void }) {
  const all = useThreadList('/v1/threads');
  const [query, setQuery] = useState('');
  const [current, setCurrent] = useState<{ id: string; isNew: boolean }>(() => {
    const fromUrl = threadFromUrl();
    return fromUrl ? { id: fromUrl, isNew: false } : { id: newThreadId(), isNew: true };
  });
  const [models, setModels] = useState<Model[]>([]);
  const [model, setModel] = useState<string>(() => localStorage.getItem('promptgate.model') ?? '');
  const [panel, setPanel] = useState<Panel>(null);
  const [inspector, setInspector] = useState(false);
  const [selected, setSelected] = useState<UIMessage | null>(null);
  const [refresh, setRefresh] = useState(0);

  const currentRef = useRef(current);
  currentRef.current = current;
  // A thread was written to (a send, a rename): only that thread is read again.
  const threadChanged = useCallback(
    (id: string) => {
      all.refresh(id);
      setRefresh((n) => n + 1);
    },
    [all.refresh],
  );
  useEffect(() => {
    listModels()
      .then((list) => {
        setModels(list);
        setModel((m) => (m && list.some((x) => x.id === m) ? m : (list[0]?.id ?? '')));
      })
      .catch(() => undefined);
  }, []);
  useEffect(() => {
    if (model) localStorage.setItem('promptgate.model', model);
  }, [model]);

  const open = (id: string, isNew = false) => {
    setCurrent({ id, isNew });
    setSelected(null);
    const url = new URL(location.href);
    if (isNew) url.searchParams.delete('thread');
    else url.searchParams.set('thread', id);
    history.replaceState(null, '', url);
  };
  const onChanged = useCallback(() => {
    const c = currentRef.current;
    threadChanged(c.id);
    if (c.isNew) {
      const url = new URL(location.href);
      url.searchParams.set('thread', c.id);
      history.replaceState(null, '', url);
    }
  }, [threadChanged]);

  // The gateway searches titles and message text, best match first; the list shows its answer for
  // the current words (read again after a send, which may have added matches).
  const [searched, setSearched] = useState<string | null>(null);
  useEffect(() => {
    const q = query.trim();
    if (!q) return setSearched(null);
    const timer = setTimeout(() => setSearched(`/v1/threads?q=${encodeURIComponent(q)}`), 200);
    return () => clearTimeout(timer);
  }, [query]);
  const found = useThreadList(searched, refresh);
  const list = query.trim() && searched ? found : all;

  return (
    <div className={`app${inspector ? ' with-inspector' : ''}`}>
      <nav className="sidebar" aria-label="Threads">
        <button type="button" className="new" onClick={() => open(newThreadId(), true)}>
          New chat
        </button>
        <label className="sr-only" htmlFor="thread-search">
          Search threads
        </label>
        <input id="thread-search" type="search" placeholder="Search threads" value={query} onChange={(e) => setQuery(e.target.value)} />
        <ul className="threads">
          {list.threads.map((t) => (
            <ThreadItem
              key={t.id}
              thread={t}
              active={t.id === current.id}
              onOpen={() => open(t.id)}
              onChanged={() => threadChanged(t.id)}
              onDeleted={() => {
                all.remove(t.id);
                found.remove(t.id);
                if (t.id === current.id) open(newThreadId(), true);
              }}
            />
          ))}
          {list.hasMore && <MoreWhenVisible onVisible={list.loadMore} />}
        </ul>
      </nav>
      <header className="topbar">
        <label>
          Model{' '}
          <select value={model} onChange={(e) => setModel(e.target.value)}>
            {models.map((m) => (
              <option key={m.id} value={m.id}>
                {m.name}
              </option>
            ))}
          </select>
        </label>
        <div className="spacer" />
        {(['settings', 'mcp', 'skills', 'projects', 'integrations'] as const).map((p) => (
          <button key={p} type="button" aria-pressed={panel === p} onClick={() => setPanel(panel === p ? null : p)}>
            {{ settings: 'Settings', mcp: 'MCP servers', skills: 'Skills', projects: 'Projects', integrations: 'Integrations' }[p]}
          </button>
        ))}
        <button type="button" aria-pressed={inspector} onClick={() => setInspector(!inspector)}>
          Inspector
        </button>
        {onSignOut && (
          <button type="button" onClick={onSignOut}>
            Sign out
          </button>
        )}
      </header>
      <main className="main">
        <Chat key={current.id} threadId={current.id} isNew={current.isNew} model={model} onChanged={onChanged} selectedMessage={selected} onSelect={(m) => (setSelected(m), m && setInspector(true))} />
      </main>
      {panel && (
        <aside className="panel" aria-label={panel}>
          <button type="button" className="close" aria-label="Close panel" onClick={() => setPanel(null)}>
            ×
          </button>
          {panel === 'settings' && <SettingsPanel onSaved={() => setRefresh((n) => n + 1)} />}
          {panel === 'mcp' && <McpPanel />}
          {panel === 'skills' && <SkillsPanel />}
          {panel === 'projects' && <ProjectsPanel />}
          {panel === 'integrations' && <IntegrationsPanel />}
        </aside>
      )}
      {inspector && <Inspector threadId={current.id} model={model} message={selected} refresh={refresh} />}
    </div>
  );
}

function ThreadItem({ thread, active, onOpen, onChanged, onDeleted }: { thread: Thread; active: boolean; onOpen(): void; onChanged(): void; onDeleted(): void }) {
  const [renaming, setRenaming] = useState<string | null>(null);
  const title = thread.title || 'Untitled';
  if (renaming !== null)
    return (
      <li>
        <form
          onSubmit={async (e) => {
            e.preventDefault();
            await api(`/v1/threads/${encodeURIComponent(thread.id)}`, { method: 'PUT', body: { title: renaming } });
            setRenaming(null);
            onChanged();
          }}
        >
          <label className="sr-only" htmlFor={`rename-${thread.id}`}>
            New title
          </label>
          <input id={`rename-${thread.id}`} value={renaming} onChange={(e) => setRenaming(e.target.value)} autoFocus />
          <button type="submit">Save</button>
        </form>
      </li>
    );
  return (
    <li className={active ? 'active' : ''}>
      <button type="button" className="thread-title" onClick={onOpen} aria-current={active}>
        {title}
      </button>
      <button type="button" aria-label={`Rename ${title}`} onClick={() => setRenaming(title)}>
        ✎
      </button>
      <button
        type="button"
        aria-label={`Delete ${title}`}
        onClick={async () => {
          if (!confirm(`Delete “${title}”?`)) return;
          await api(`/v1/threads/${encodeURIComponent(thread.id)}`, { method: 'DELETE' });
          onDeleted();
        }}
      >
        ×
      </button>
    </li>
  );
}
