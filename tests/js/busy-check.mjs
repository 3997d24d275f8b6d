// A provider that is rate limiting or overloaded, reached through the official clients with retries
// off: the `openai` client's chat completions and `@anthropic-ai/sdk`'s Messages API. Each must see
// the provider's condition as its own error class (429 RateLimitError, 503 overloaded) with the wait
// the provider asked for; so must a stream (chat completions, Responses, Messages), whose status
// the clients read before any event. Prints {"completions": [...], "messages": [...], "streamed":
// {"completions", "responses", "messages"}}, one {status, code, message, retryAfter} per call, as
// JSON.
//
// usage: node busy-check.mjs <base-url-without-/v1> <model> <calls-each>
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { anthropicCode, apiError, openaiCode } from './api-error.mjs';

const [base, model, calls] = process.argv.slice(2);
if (!base || !model || !calls) {
  console.error('usage: node busy-check.mjs <base-url> <model> <calls-each>');
  process.exit(2);
}
const apiKey = 'unused-in-single-user-mode';
const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey, maxRetries: 0 });
const anthropic = new Anthropic({ baseURL: base, apiKey, maxRetries: 0 });
const messages = [{ role: 'user', content: 'Hello?' }];

try {
  const completions = [];
  const answers = [];
  for (let i = 0; i < Number(calls); i++) {
    completions.push(
      await apiError(() => openai.chat.completions.create({ model, messages }), openaiCode),
    );
  }
  for (let i = 0; i < Number(calls); i++) {
    answers.push(
      await apiError(() => anthropic.messages.create({ model, max_tokens: 256, messages }), anthropicCode),
    );
  }
  const drain = async (stream) => {
    for await (const _ of stream) {
      // Read to its end: an error event would be thrown here.
    }
  };
  const streamed = {
    completions: await apiError(
      async () => drain(await openai.chat.completions.create({ model, messages, stream: true })),
      openaiCode,
    ),
    responses: await apiError(
      async () => drain(await openai.responses.create({ model, input: 'Hello?', stream: true })),
      openaiCode,
    ),
    messages: await apiError(
      () => anthropic.messages.stream({ model, max_tokens: 256, messages }).finalMessage(),
      anthropicCode,
    ),
  };
  process.stdout.write(JSON.stringify({ completions, messages: answers, streamed }) + '\n');
} catch (e) {
  process.stdout.write(JSON.stringify({ failure: String(e?.message ?? e) }) + '\n');
  process.exit(1);
}
