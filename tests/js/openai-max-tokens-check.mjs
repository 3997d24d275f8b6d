// The official `openai` client with the output cap many OpenAI clients send on every request:
// `max_tokens` on a whole completion, `max_completion_tokens` on a streamed one, then values that
// are not positive integers, which must come back as API errors. Prints
// {"whole": {...}, "streamed": {...}, "refused": [{"value", "status", "code"}, ...]} as JSON.
//
// usage: node openai-max-tokens-check.mjs <base-url-ending-in-/v1> <model>
import OpenAI from 'openai';

const [baseURL, model] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error('usage: node openai-max-tokens-check.mjs <base-url> <model>');
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: 'unused-in-single-user-mode', maxRetries: 0 });
const messages = [{ role: 'user', content: 'Say hello' }];

try {
  const whole = await client.chat.completions.create({ model, messages, max_tokens: 50 });
  const stream = client.chat.completions.stream({ model, messages, max_completion_tokens: 30 });
  const streamed = await stream.finalChatCompletion();
  const refused = [];
  for (const value of [0, -5, 2.5, 'many']) {
    try {
      await client.chat.completions.create({ model, messages, max_tokens: value });
      refused.push({ value, status: null, code: null });
    } catch (e) {
      if (!(e instanceof OpenAI.APIError)) throw e;
      refused.push({ value, status: e.status, code: e.error?.code ?? null, message: e.error?.message ?? null });
    }
  }
  const summary = (c) => ({ content: c.choices[0].message.content, finish_reason: c.choices[0].finish_reason });
  process.stdout.write(JSON.stringify({ whole: summary(whole), streamed: summary(streamed), refused }) + '\n');
} catch (e) {
  process.stdout.write(JSON.stringify({ failure: String(e?.message ?? e) }) + '\n');
  process.exit(1);
}
