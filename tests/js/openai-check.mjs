// Drives promptgate's OpenAI-compatible facade with the official `openai` client: lists and retrieves
// models, completes streamed and not, and prints {"models": [...], "retrieved": {...}, "streamed": {...},
// "plain": {...}} as JSON. The client's own validation (finish_reason present,
// roles, well-formed chunks) makes this exit with status 1 on a malformed response.
//
// usage: node openai-check.mjs <base-url-ending-in-/v1> <model> <user-text> [api-key]
import OpenAI from 'openai';

const [baseURL, model, text, apiKey] = process.argv.slice(2);
if (!baseURL || !model || !text) {
  console.error('usage: node openai-check.mjs <base-url> <model> <user-text> [api-key]');
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: apiKey ?? 'unused-in-single-user-mode', maxRetries: 0 });
const messages = [{ role: 'user', content: text }];

try {
  // models.list() pages through `data` of an OpenAI list; a bare array would make it throw.
  const models = [];
  for await (const m of client.models.list()) {
    models.push({ id: m.id, object: m.object, created: m.created, owned_by: m.owned_by });
  }
  const one = await client.models.retrieve(model);
  const retrieved = { id: one.id, object: one.object, owned_by: one.owned_by };
  const stream = client.chat.completions.stream({ model, messages, stream_options: { include_usage: true } });
  let deltas = 0;
  stream.on('content', () => {
    deltas += 1;
  });
  const final = await stream.finalChatCompletion();
  const choice = final.choices[0];
  const plain = await client.chat.completions.create({ model, messages });
  process.stdout.write(
    JSON.stringify({
      models,
      retrieved,
      streamed: {
        content: choice.message.content,
        finish_reason: choice.finish_reason,
        tool_calls: choice.message.tool_calls ?? null,
        deltas,
        usage: final.usage ?? null,
      },
      plain: {
        content: plain.choices[0].message.content,
        finish_reason: plain.choices[0].finish_reason,
        tool_calls: plain.choices[0].message.tool_calls ?? null,
        usage: plain.usage ?? null,
      },
    }) + '\n',
  );
} catch (e) {
  process.stdout.write(JSON.stringify({ failure: String(e?.message ?? e) }) + '\n');
  process.exit(1);
}
