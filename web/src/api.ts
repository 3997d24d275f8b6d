// A thin client for promptgate's REST API. The base URL is empty when the app is served by the
// gateway itself or through Vite's proxy; VITE_PROMPTGATE_URL points a separately hosted app at a
// gateway (which must then allow the page's origin in `[server.cors] allowed_origins`). The types
// come from openapi.yaml (src/generated/openapi.d.ts, made by `npm run api-types`).
import type { components } from './generated/openapi';

export type Schemas = components['schemas'];
export type Thread = Schemas['Thread'];
export type StoredMessage = Schemas['Message'];
export type ModelEntry = Schemas['ModelEntry'];
export type UserSettings = Schemas['UserSettings'];
export type PromptPreview = Schemas['PromptPreview'];
export type PreviewContext = Schemas['PreviewContext'];
export type McpServer = Schemas['McpServer'];
export type NewMcpServer = Schemas['NewMcpServer'];
export type ProbeResponse = Schemas['ProbeResponse'];
export type Skill = Schemas['Skill'];
export type NewSkill = Schemas['NewSkill'];
export type Project = Schemas['Project'];
export type NewProject = Schemas['NewProject'];
export type IntegrationView = Schemas['IntegrationView'];

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

/// The sentence to show for anything a request threw.
export function messageOf(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  // useChat's transport throws a refused request's body as the message: the gateway's sentence in it.
  try {
    const said = JSON.parse(text)?.error?.message;
    if (typeof said === 'string') return said;
  } catch {
    // not a gateway error body
  }
  return text;
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
  let data: unknown = undefined;
  try {
    data = text ? JSON.parse(text) : undefined;
  } catch {
    data = undefined;
  }
  if (!res.ok) {
    const err = (data as Partial<Schemas['ErrorBody']> | undefined)?.error;
    throw new ApiError(res.status, err?.code ?? 'http_error', err?.message ?? `${res.status} ${res.statusText}`);
  }
  return { data: data as T, res };
}

export async function listModels(): Promise<ModelEntry[]> {
  return (await api<Schemas['ModelList']>('/v1/models')).data;
}

/// An absolute artifact URL an iframe can load without a header: the gateway signs a short-lived link.
export async function artifactUrl(id: string): Promise<string> {
  return (await api<Schemas['ArtifactLink']>(`/v1/artifacts/${encodeURIComponent(id)}/link`, { method: 'POST' })).url;
}
