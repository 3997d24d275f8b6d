// The app's frame: sign-in in tokens mode, then the thread list (a drawer on small screens), the open
// chat, the side panels and the inspector, and the keyboard shortcuts that move between them.
import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError, api, getToken, listModels, messageOf, setToken, type ModelEntry, type Thread } from './api';
import { MoreWhenVisible, useThreadList } from './threadList';
import { Chat } from './Chat';
import { Inspector } from './Inspector';
import { Overlay } from './Overlay';
import type { ChatMessage } from './messages';
import { AdminPanel, useIsAdmin } from './panels/Admin';
import { IntegrationsPanel } from './panels/Integrations';
import { KeysPanel } from './panels/Keys';
import { McpPanel } from './panels/Mcp';
import { ProjectsPanel } from './panels/Projects';
import { SettingsPanel } from './panels/Settings';
import { ShortcutsPanel } from './panels/Shortcuts';
import { SkillsPanel } from './panels/Skills';

type Panel = 'settings' | 'mcp' | 'skills' | 'projects' | 'integrations' | 'shortcuts' | 'keys' | 'admin';

const PANEL_LABELS: Record<Panel, string> = {
  settings: 'Settings',
  mcp: 'MCP servers',
  skills: 'Skills',
  projects: 'Projects',
  integrations: 'Integrations',
  shortcuts: 'Keyboard shortcuts',
  keys: 'API keys',
  admin: 'Users',
};

/// Panels shown only with a token (keys) or to an admin (users).
const SIGNED_IN_PANELS: Panel[] = ['keys', 'admin'];

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
          } catch (err) {
            setToken(null);
            setError(messageOf(err));
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
  const [models, setModels] = useState<ModelEntry[]>([]);
  const [model, setModel] = useState<string>(() => localStorage.getItem('promptgate.model') ?? '');
  const [panel, setPanel] = useState<Panel | null>(null);
  const isAdmin = useIsAdmin(onSignOut !== undefined);
  const shownPanels = (Object.keys(PANEL_LABELS) as Panel[]).filter(
    (p) => !SIGNED_IN_PANELS.includes(p) || (p === 'keys' ? onSignOut !== undefined : isAdmin),
  );
  const [inspector, setInspector] = useState(false);
  const [drawer, setDrawer] = useState(false);
  const [selected, setSelected] = useState<ChatMessage | null>(null);
  const [refresh, setRefresh] = useState(0);
  // A new chat whose first message has gone out: its thread exists from then on.
  const [started, setStarted] = useState<string | null>(null);
  const searchRef = useRef<HTMLInputElement>(null);

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
    setDrawer(false);
    const url = new URL(location.href);
    if (isNew) url.searchParams.delete('thread');
    else url.searchParams.set('thread', id);
    history.replaceState(null, '', url);
  };
  const openPanel = (p: Panel | null) => {
    setDrawer(false);
    setPanel(p);
  };
  const onChanged = useCallback(() => {
    const c = currentRef.current;
    threadChanged(c.id);
    if (c.isNew) {
      setStarted(c.id);
      const url = new URL(location.href);
      url.searchParams.set('thread', c.id);
      history.replaceState(null, '', url);
    }
  }, [threadChanged]);

  // Escape closes what is on top (a running answer is stopped first, in Chat); the other shortcuts
  // are listed in the shortcuts panel.
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.defaultPrevented) return;
      const ctrl = e.ctrlKey || e.metaKey;
      if (e.key === 'Escape') {
        if (panel) setPanel(null);
        else if (inspector) setInspector(false);
        else if (drawer) setDrawer(false);
        else return;
      } else if (ctrl && e.key.toLowerCase() === 'k') {
        setDrawer(true);
        setPanel(null);
        // The drawer becomes visible in this frame; focus after it.
        requestAnimationFrame(() => searchRef.current?.focus());
      } else if (ctrl && e.shiftKey && e.key.toLowerCase() === 'o') {
        open(newThreadId(), true);
        requestAnimationFrame(() => document.getElementById('composer-input')?.focus());
      } else if (ctrl && e.key === '/') {
        openPanel(panel === 'shortcuts' ? null : 'shortcuts');
      } else return;
      e.preventDefault();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  });

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
    <div className={`app${inspector ? ' with-inspector' : ''}${drawer ? ' drawer-open' : ''}`}>
      <header className="topbar">
        <button type="button" className="drawer-toggle" aria-expanded={drawer} aria-controls="sidebar" onClick={() => setDrawer(!drawer)}>
          Threads
        </button>
        <h1 className="brand">promptgate</h1>
        <label className="model">
          <span className="label-text">Model</span>
          <select value={model} onChange={(e) => setModel(e.target.value)}>
            {models.map((m) => (
              <option key={m.id} value={m.id}>
                {m.name}
              </option>
            ))}
          </select>
        </label>
        <button type="button" aria-pressed={inspector} onClick={() => setInspector(!inspector)}>
          Inspector
        </button>
      </header>
      <nav id="sidebar" className="sidebar" aria-label="Threads">
        <button type="button" className="new" onClick={() => open(newThreadId(), true)}>
          New chat
        </button>
        <label className="sr-only" htmlFor="thread-search">
          Search threads
        </label>
        <input ref={searchRef} id="thread-search" type="search" placeholder="Search threads" value={query} onChange={(e) => setQuery(e.target.value)} />
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
        <ul className="sections" aria-label="Your setup">
          {shownPanels.map((p) => (
            <li key={p}>
              <button type="button" aria-pressed={panel === p} onClick={() => openPanel(panel === p ? null : p)}>
                {PANEL_LABELS[p]}
              </button>
            </li>
          ))}
          {onSignOut && (
            <li>
              <button type="button" onClick={onSignOut}>
                Sign out
              </button>
            </li>
          )}
        </ul>
      </nav>
      {drawer && <div className="backdrop" aria-hidden="true" onClick={() => setDrawer(false)} />}
      <main className="main">
        <Chat key={current.id} threadId={current.id} isNew={current.isNew} model={model} onChanged={onChanged} selectedMessage={selected} onSelect={(m) => (setSelected(m), m && setInspector(true))} />
      </main>
      {panel && (
        <Overlay key={panel} label={PANEL_LABELS[panel]} className="panel">
          <button type="button" className="close" aria-label="Close panel" onClick={() => setPanel(null)}>
            ×
          </button>
          {panel === 'settings' && <SettingsPanel onSaved={() => setRefresh((n) => n + 1)} />}
          {panel === 'mcp' && <McpPanel />}
          {panel === 'skills' && <SkillsPanel />}
          {panel === 'projects' && <ProjectsPanel />}
          {panel === 'integrations' && <IntegrationsPanel />}
          {panel === 'shortcuts' && <ShortcutsPanel />}
          {panel === 'keys' && <KeysPanel />}
          {panel === 'admin' && <AdminPanel />}
        </Overlay>
      )}
      {inspector && <Inspector threadId={current.id} isNew={current.isNew && started !== current.id} model={model} message={selected} refresh={refresh} onClose={() => setInspector(false)} />}
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
