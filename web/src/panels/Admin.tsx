// For admins: usage over time by user and model, every user with their state and budget; create,
// disable, enable and delete users, and set a user's budget (tokens or money per period, tokens per
// minute).
import { useCallback, useEffect, useState } from 'react';
import { api, messageOf, type Schemas } from '../api';
import { ActionForm, CreateByName, Field } from './common';
import { UsageChart } from './UsageChart';

type User = Schemas['UserBody'];
type Budget = Schemas['BudgetBody'];

/// Whether the signed-in user may open this panel: an admin's list answers, anyone else's is refused.
export function useIsAdmin(enabled: boolean): boolean {
  const [admin, setAdmin] = useState(false);
  useEffect(() => {
    if (!enabled) return;
    api('/v1/admin/users')
      .then(() => setAdmin(true))
      .catch(() => setAdmin(false));
  }, [enabled]);
  return admin;
}

function number(text: string): number | null {
  const n = Number.parseInt(text, 10);
  return Number.isFinite(n) && n > 0 ? n : null;
}

function BudgetForm({ user }: { user: User }) {
  const [tokens, setTokens] = useState('');
  const [cost, setCost] = useState('');
  const [days, setDays] = useState('1');
  const [perMinute, setPerMinute] = useState('');
  const [saved, setSaved] = useState<string | null>(null);
  // The inputs appear once the stored budget is in them, so nothing typed is overwritten.
  const [loaded, setLoaded] = useState(false);
  useEffect(() => {
    api<Budget>(`/v1/admin/users/${user.id}/budget`)
      .then((b) => {
        setTokens(b.period_tokens ? String(b.period_tokens) : '');
        setCost(b.period_cost ? String(b.period_cost) : '');
        if (b.period_secs) setDays(String(Math.max(1, Math.round(b.period_secs / 86400))));
        setPerMinute(b.tokens_per_minute ? String(b.tokens_per_minute) : '');
      })
      .catch(() => undefined)
      .finally(() => setLoaded(true));
  }, [user.id]);
  if (!loaded) return null;
  return (
    <ActionForm
      action={async () => {
        const period_tokens = number(tokens);
        const amount = Number.parseFloat(cost);
        const period_cost = Number.isFinite(amount) && amount > 0 ? amount : null;
        const body: Budget = {
          period_tokens,
          period_cost,
          period_secs: period_tokens || period_cost ? (number(days) ?? 1) * 86400 : null,
          tokens_per_minute: number(perMinute),
        };
        await api(`/v1/admin/users/${user.id}/budget`, { method: 'PUT', body });
        setSaved('Budget saved');
      }}
    >
      <Field label={`Tokens per period for ${user.name}`}>
        <input inputMode="numeric" value={tokens} onChange={(e) => setTokens(e.target.value)} />
      </Field>
      <Field label={`Money per period for ${user.name}`}>
        <input inputMode="decimal" value={cost} onChange={(e) => setCost(e.target.value)} />
      </Field>
      <Field label={`Period in days for ${user.name}`}>
        <input inputMode="numeric" value={days} onChange={(e) => setDays(e.target.value)} />
      </Field>
      <Field label={`Tokens per minute for ${user.name}`}>
        <input inputMode="numeric" value={perMinute} onChange={(e) => setPerMinute(e.target.value)} />
      </Field>
      <button type="submit">Save budget for {user.name}</button>
      {saved && <p role="status">{saved}</p>}
    </ActionForm>
  );
}

export function AdminPanel() {
  const [users, setUsers] = useState<User[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [secret, setSecret] = useState<string | null>(null);
  const reload = useCallback(() => {
    api<Schemas['UserList']>('/v1/admin/users')
      .then((list) => (setUsers(list.data), setError(null)))
      .catch((e) => setError(messageOf(e)));
  }, []);
  useEffect(reload, [reload]);
  const act = async (work: Promise<unknown>) => {
    try {
      await work;
      setError(null);
    } catch (e) {
      setError(messageOf(e));
    }
    reload();
  };
  return (
    <div>
      <h2 id="panel-title">Users</h2>
      {error && <p role="alert">{error}</p>}
      <UsageChart users={users} />
      {secret && (
        <p className="hint" role="status">
          The new user's key (shown only now): <code>{secret}</code>
        </p>
      )}
      <ul className="cards" aria-label="Users">
        {users.map((u) => (
          <li key={u.id} data-user={u.name}>
            <strong>{u.name}</strong>
            <p className="hint">
              {u.admin ? 'admin' : 'user'}, {u.disabled_at ? 'disabled' : 'active'}, {u.keys} key(s)
            </p>
            <button
              type="button"
              onClick={() =>
                act(api(`/v1/admin/users/${u.id}`, { method: 'PATCH', body: { disabled: !u.disabled_at } }))
              }
            >
              {u.disabled_at ? 'Enable' : 'Disable'} {u.name}
            </button>
            <button type="button" onClick={() => act(api(`/v1/admin/users/${u.id}`, { method: 'DELETE' }))}>
              Delete {u.name}
            </button>
            <BudgetForm user={u} />
          </li>
        ))}
      </ul>
      <CreateByName
        heading="New user"
        label="User name"
        submit="Create user"
        create={async (name) => {
          const created = await api<Schemas['CreatedUser']>('/v1/admin/users', { method: 'POST', body: { name } });
          setSecret(created.key.secret ?? null);
          reload();
        }}
      />
    </div>
  );
}
