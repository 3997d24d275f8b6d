// What the app reads from UI messages: the answer metadata promptgate sends with the stream (the
// OpenAPI document types it as an open JSON object; docs/frontends.md lists its fields), the sources
// that `[N]` cites, and tool parts.
import { getToolName, isToolUIPart, type DynamicToolUIPart, type ToolUIPart, type UIMessage } from 'ai';
import type { Schemas } from './api';
import type { AuthorizationData } from './Authorization';
import type { ElicitationData } from './Elicitation';
import type { CitationCheck } from './markdown';

export type AnswerStatus = Schemas['MessageStatus'];

export interface AnswerMetadata {
  status?: AnswerStatus;
  finishReason?: string;
  modelId?: string;
  errorCode?: string;
  sources?: { index: number; url: string; title?: string }[];
  mcpTools?: Record<string, { name?: string }>;
  citations?: CitationCheck[];
  usage?: { inputTokens?: number; outputTokens?: number };
  context?: { sentMessages: number; summarisedMessages: number; droppedMessages: number; compacted?: boolean };
  /// The trace of the send, when the gateway exports traces; its page when a trace UI is configured.
  traceId?: string;
  traceUrl?: string;
}

/// The data parts promptgate sends: a question an MCP server asks mid-call, and a call waiting for
/// the user to authorize the service it calls.
export type DataParts = {
  elicitation: ElicitationData;
  authorization: AuthorizationData;
};

export type ChatMessage = UIMessage<AnswerMetadata, DataParts>;
export type ToolPart = ToolUIPart | DynamicToolUIPart;
/// A tool part as promptgate sends it: with its progress title.
export type TitledToolPart = ToolPart & { title?: string };

export interface Source {
  index: number;
  url: string;
  title?: string;
}

/// Stored messages as `useChat` holds them.
export function toUi(stored: Schemas['Message'][]): ChatMessage[] {
  return stored.map((m) => ({
    id: m.id,
    role: m.role,
    parts: m.parts as ChatMessage['parts'],
    metadata: { ...(m.metadata as AnswerMetadata), ...(m.status ? { status: m.status } : {}) },
  }));
}

/// Sources of an answer by citation number: the `sources` metadata snapshot, then `source-url` parts.
export function sourcesOf(message: ChatMessage): Map<number, Source> {
  const map = new Map<number, Source>();
  for (const s of message.metadata?.sources ?? []) {
    if (typeof s?.index === 'number' && typeof s.url === 'string') map.set(s.index, { index: s.index, url: s.url, title: s.title });
  }
  for (const p of message.parts) {
    if (p.type !== 'source-url') continue;
    const n = Number(/(\d+)$/.exec(p.sourceId)?.[1]);
    if (n && !map.has(n)) map.set(n, { index: n, url: p.url, title: p.title });
  }
  return map;
}

/// The checked citations of an answer's `part`-th text part, in order.
export function checksOf(message: ChatMessage, part: number): CitationCheck[] {
  return (message.metadata?.citations ?? []).filter((c) => c?.textPart === part && typeof c.n === 'number');
}

export function toolParts(message: ChatMessage): TitledToolPart[] {
  return message.parts.filter(isToolUIPart);
}

export const toolName = (part: ToolPart): string => getToolName(part);

export function textOf(message: ChatMessage): string {
  return message.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('\n');
}
