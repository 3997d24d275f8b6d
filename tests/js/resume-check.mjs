// Starts a chat turn the way `useChat` does, drops the connection once the answer is under way, then
// picks the turn up again with the AI SDK's own resume call (DefaultChatTransport.reconnectToStream,
// what `useChat({ resume: true })` runs on load) and rebuilds the message with readUIMessageStream.
// Prints {"idle", "seenBeforeDrop", "message", "chunks", "failure"} as JSON; exits 1 on any failure.
//   idle: what reconnectToStream answered for a chat with no running turn (null expected)
//
// usage: node resume-check.mjs <api-url> <request-json> [<resume-api-url>]
//   request-json: {"chatId", "messages", "body"?}
//   resume-api-url: where the reload goes (another instance behind the same load balancer); default api-url
import { DefaultChatTransport } from 'ai';
import { rebuildMessage } from './ui-message.mjs';

const [api, requestJson, resumeApi] = process.argv.slice(2);
if (!api || !requestJson) {
  console.error('usage: node resume-check.mjs <api-url> <request-json>');
  process.exit(2);
}
const request = JSON.parse(requestJson);
const transport = new DefaultChatTransport({ api, body: request.body ?? {} });
const resumer = new DefaultChatTransport({ api: resumeApi ?? api, body: request.body ?? {} });
const chunkTypes = [];
let idle;
let seenBeforeDrop = 0;

try {
  idle = await resumer.reconnectToStream({ chatId: `${request.chatId}-idle` });

  const dropped = new AbortController();
  const first = await transport.sendMessages({
    chatId: request.chatId,
    messages: request.messages,
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: dropped.signal,
  });
  const reader = first.getReader();
  while (seenBeforeDrop < 2) {
    const { done, value } = await reader.read();
    if (done) throw new Error('the first stream ended before it was dropped');
    if (value.type === 'text-delta') seenBeforeDrop += 1;
  }
  dropped.abort();
  await reader.cancel().catch(() => {});

  const resumed = await resumer.reconnectToStream({ chatId: request.chatId });
  if (resumed == null) throw new Error('reconnectToStream found no running turn');
  const { message, failure } = await rebuildMessage(resumed, chunkTypes);
  process.stdout.write(JSON.stringify({ idle, seenBeforeDrop, message, chunks: chunkTypes, failure }) + '\n');
  process.exit(failure ? 1 : 0);
} catch (e) {
  process.stdout.write(
    JSON.stringify({ idle, seenBeforeDrop, message: null, chunks: chunkTypes, failure: String(e?.message ?? e) }) + '\n',
  );
  process.exit(1);
}
