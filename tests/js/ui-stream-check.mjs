// Sends one chat turn to promptgate exactly the way `useChat` does (DefaultChatTransport), rebuilds the
// assistant message with the AI SDK's own readUIMessageStream, and prints
// {"message": <UIMessage>, "chunks": [<chunk types>]} as JSON.
// Any chunk the SDK rejects, or an `error` chunk, makes this exit with status 1.
//
// usage: node ui-stream-check.mjs <api-url> <request-json>
//   request-json: {"chatId", "messages", "body"?, "headers"?, "trigger"?, "messageId"?}
import { DefaultChatTransport } from 'ai';
import { rebuildMessage } from './ui-message.mjs';

const [api, requestJson] = process.argv.slice(2);
if (!api || !requestJson) {
  console.error('usage: node ui-stream-check.mjs <api-url> <request-json>');
  process.exit(2);
}
const request = JSON.parse(requestJson);

const transport = new DefaultChatTransport({ api, headers: request.headers ?? {}, body: request.body ?? {} });
const chunkTypes = [];

try {
  const chunks = await transport.sendMessages({
    chatId: request.chatId,
    messages: request.messages,
    trigger: request.trigger ?? 'submit-message',
    messageId: request.messageId,
    abortSignal: undefined,
  });
  const { message, failure } = await rebuildMessage(chunks, chunkTypes);
  process.stdout.write(JSON.stringify({ message, chunks: chunkTypes, failure }) + '\n');
  process.exit(failure ? 1 : 0);
} catch (e) {
  process.stdout.write(JSON.stringify({ message: null, chunks: chunkTypes, failure: String(e?.message ?? e) }) + '\n');
  process.exit(1);
}
