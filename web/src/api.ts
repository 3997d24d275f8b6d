// A thin client for promptgate's REST API. The base URL is empty when the app is served by the
// gateway itself or through Vite's proxy; VITE_PROMPTGATE_URL points a separately hosted app at a
// gateway (which must then allow the page's origin in `[server.cors] allowed_origins`).

export const BASE_URL: string = (import.meta.env.VITE_PROMPTGATE_URL ?? '').replace(/\/$/, '');

const TOKEN_KEY = 'promptgate.token';

export function getToken(): string | null {
  return localStorage.getItem(TOKEN_KEY);
}

export function setToken(token: string | null): void {
  if (token) localStorage.setItem(TOKEN_KEY, token);
  else localStorage.removeItem(TOKEN_KEY);
}

export function authHeaders(): Record<string, string> {
  const token = getToken();
  return token ? { Authorization: `Bearer ${token}` } : {};
}

export class ApiError extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
  ) {
    super(message);
  }
}

export async function api<T = unknown>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  return (await request<T>(path, init)).data;
}

/// One page of a list endpoint, and the path of the next page (from its `Link: <…>; rel="next"`
/// header), or null on the last page.
export interface Page<T> {
  items: T[];
  next: string | null;
}

/// A page of a list: `path` is the first page's path or the `next` of the page before.
export async function apiPage<T>(path: string): Promise<Page<T>> {
  const { data, res } = await request<T[]>(path, {});
  return { items: data ?? [], next: nextLink(res.headers.get('link')) };
}

function nextLink(link: string | null): string | null {
  const match = link ? /<([^>]*)>\s*;\s*rel="?next"?/.exec(link) : null;
  if (!match) return null;
  // The gateway links to its own path; drop an absolute URL's origin so BASE_URL applies.
  return match[1].replace(/^https?:\/\/[^/]+/, '');
}

async function request<T>(path: string, init: { method?: string; body?: unknown }): Promise<{ data: T; res: Response }> {
  const headers: Record<string, string> = { ...authHeaders() };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(BASE_URL + path, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  if (res.status === 204) return { data: undefined as T, res };
  const text = await res.text();
  let data: any = undefined;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = undefined;
  }
  if (!res.ok) {
    const err = data?.error;
    throw new ApiError(res.status, err?.code ?? 'http_error', err?.message ?? `${res.status} ${res.statusText}`);
  }
  return { data: data as T, res };
}

export interface Thread {
  id: string;
  title?: string | null;
  project_id?: string | null;
  created_at: number;
  updated_at: number;
}

export interface StoredMessage {
  id: string;
  seq?: number;
  role: 'user' | 'assistant';
  parts: any[];
  metadata: Record<string, any>;
  status?: string | null;
}

export interface Model {
  id: string;
  name?: string;
}

/// `/v1/models` answers a list, or an OpenAI-shaped `{object: "list", data: [...]}`.
export async function listModels(): Promise<Model[]> {
  const data = await api<any>('/v1/models');
  const list: any[] = Array.isArray(data) ? data : Array.isArray(data?.data) ? data.data : [];
  return list.map((m) => ({ id: m.id, name: m.name ?? m.id }));
}

/// An absolute artifact URL an iframe can load without a header: the gateway signs a short-lived
/// link. Older gateways without the link endpoint serve the artifact at its plain URL.
export async function artifactUrl(id: string, fallback: string): Promise<string> {
  try {
    const link = await api<{ url: string }>(`/v1/artifacts/${encodeURIComponent(id)}/link`, { method: 'POST' });
    return link.url;
  } catch {
    return BASE_URL + fallback;
  }
}
