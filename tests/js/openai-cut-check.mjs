// Streams one completion from promptgate's OpenAI-compatible facade with the official `openai` client
// and prints what the client made of it: {"completed": {content, finish_reason}} when the stream ended
// as a whole completion, or {"failed": {name, status, message, content}} with the text received so far
// when the client raised an error instead.
//
// usage: node openai-cut-check.mjs <base-url-ending-in-/v1> <model> <user-text> [api-key]
import OpenAI from 'openai';

const [baseURL, model, text, apiKey] = process.argv.slice(2);
if (!baseURL || !model || !text) {
  console.error('usage: node openai-cut-check.mjs <base-url> <model> <user-text> [api-key]');
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: apiKey ?? 'unused-in-single-user-mode', maxRetries: 0 });
let content = '';
try {
  const stream = await client.chat.completions.create({
    model,
    messages: [{ role: 'user', content: text }],
    stream: true,
  });
  let finish_reason = null;
  for await (const chunk of stream) {
    const choice = chunk.choices[0];
    content += choice?.delta?.content ?? '';
    finish_reason = choice?.finish_reason ?? finish_reason;
  }
  process.stdout.write(JSON.stringify({ completed: { content, finish_reason } }) + '\n');
} catch (e) {
  const failed = { name: e?.constructor?.name ?? null, status: e?.status ?? null, message: String(e?.message ?? e), content };
  process.stdout.write(JSON.stringify({ failed }) + '\n');
}
